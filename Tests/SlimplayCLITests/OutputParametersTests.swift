import SlimplayCLI
import SlimplayPlayer
import Testing

@Suite("-a output parameters")
struct OutputParametersTests {
  @Test func alsaFields() throws {
    let p = try settings(["-a", "80:4:24_3:0"]).outputParameters
    #expect(p.buffer == 80)
    #expect(p.period == 4)
    #expect(p.format == .s24_3)
    #expect(!p.mmap)
  }

  @Test func defaults() {
    let p = OutputParameters()
    #expect(p.buffer == nil)  // 40 ms on hardware, 200 ms through a sound server
    #expect(p.period == 4)
    #expect(p.format == nil)
    #expect(p.mmap)
  }

  @Test func emptyFieldsKeepDefaults() throws {
    let p = try OutputParameters(parsing: "::32", forStandardOutput: false)
    #expect(p.buffer == nil)  // 40 ms on hardware, 200 ms through a sound server
    #expect(p.period == 4)
    #expect(p.format == .s32)
    #expect(p.mmap)
    let q = try OutputParameters(parsing: "2000:1024", forStandardOutput: false)
    #expect(q.buffer == 2000)
    #expect(q.period == 1024)
    #expect(q.format == nil)
  }

  @Test(arguments: ["1:2:3:4:5", "x", "0", "40:-1", "40:4:20", "40:4:16:2"])
  func badALSAParametersThrow(_ text: String) {
    #expect(throws: OptionError.self) { try OutputParameters(parsing: text, forStandardOutput: false) }
    #expect(throws: (any Error).self) { try settings(["-a", text]) }
  }

  @Test func standardOutputTakesASampleSize() throws {
    #expect(try settings(["-o", "-", "-a", "16"]).outputParameters.format == .s16)
    #expect(try settings(["-o", "-", "-a", "24"]).outputParameters.format == .s24)
    #expect(try settings(["-o", "-", "-a", "32"]).outputParameters.format == .s32)
  }

  @Test func standardOutputRejectsPackedAndALSAForms() {
    #expect(throws: (any Error).self) { try settings(["-o", "-", "-a", "24_3"]) }
    #expect(throws: (any Error).self) { try settings(["-o", "-", "-a", "80:4"]) }
    #expect(throws: OptionError.self) { try OutputParameters(parsing: "24_3", forStandardOutput: true) }
  }

  @Test func sixteenAloneMeansABufferForALSA() throws {
    // Without -o -, "-a 16" is the buffer field (16 ms), not a sample size.
    let p = try settings(["-a", "16"]).outputParameters
    #expect(p.buffer == 16)
    #expect(p.format == nil)
  }
}
