import SlimplayCLI
import SlimplayPlayer
import Testing

@Suite("-d log levels")
struct LogConfigurationTests {
  @Test func defaultIsNotice() throws {
    let logging = try settings([]).logging
    #expect(logging.defaultLevel == .notice)
    #expect(logging.level(for: "slimproto") == .notice)
  }

  @Test func categoryLevel() throws {
    let logging = try settings(["-d", "slimproto=debug"]).logging
    #expect(logging.level(for: "slimproto") == .debug)
    #expect(logging.level(for: "stream") == .notice)
    #expect(logging.level(for: "not-a-category") == .notice)
  }

  @Test func laterAllOverridesEarlierCategories() throws {
    let logging = try settings(["-d", "slimproto=debug", "-d", "all=info"]).logging
    #expect(logging.defaultLevel == .info)
    #expect(logging.level(for: "slimproto") == .info)
    #expect(logging.level(for: "output") == .info)
  }

  @Test func categoryAfterAllRefinesIt() throws {
    let logging = try settings(["-d", "all=info", "-d", "slimproto=debug", "-d", "output=sdebug"]).logging
    #expect(logging.level(for: "slimproto") == .debug)
    #expect(logging.level(for: "output") == .trace)
    #expect(logging.level(for: "stream") == .info)
  }

  @Test func levelSpellings() throws {
    var logging = LogConfiguration()
    try logging.apply("lms=warn")
    #expect(logging.level(for: "lms") == .warning)
    try logging.apply("lms=trace")
    #expect(logging.level(for: "lms") == .trace)
    try logging.apply("lms=error")
    #expect(logging.level(for: "lms") == .error)
  }

  @Test(arguments: ["slimproto", "slimproto=", "slimproto=loud", "display=debug", "=debug", "all"])
  func badSpecificationThrows(_ text: String) {
    #expect(throws: (any Error).self) { try settings(["-d", text]) }
    var logging = LogConfiguration()
    #expect(throws: OptionError.self) { try logging.apply(text) }
    #expect(logging == LogConfiguration())
  }
}
