import SlimplayCLI
import Testing

@Suite("State and name file paths")
struct StatePathTests {
  static let fullEnvironment = [
    "STATE_DIRECTORY": "/var/lib/slimplay",
    "XDG_STATE_HOME": "/home/u/.state",
    "HOME": "/home/u",
  ]

  @Test func nameFileFlagWins() throws {
    let s = try settings(["-N", "/etc/slimplay/name", "--state-dir", "/srv/state"])
    #expect(s.nameFilePath(environment: Self.fullEnvironment) == "/etc/slimplay/name")
  }

  @Test func stateDirFlagComesNext() throws {
    let s = try settings(["--state-dir", "/srv/state"])
    #expect(s.nameFilePath(environment: Self.fullEnvironment) == "/srv/state/name")
    #expect(s.stateDirectoryPath(environment: [:]) == "/srv/state")
  }

  @Test func systemdStateDirectoryThenXDGThenHome() throws {
    let s = try settings([])
    #expect(s.nameFilePath(environment: Self.fullEnvironment) == "/var/lib/slimplay/name")
    #expect(
      s.nameFilePath(environment: ["XDG_STATE_HOME": "/home/u/.state", "HOME": "/home/u"])
        == "/home/u/.state/slimplay/name")
    #expect(s.nameFilePath(environment: ["HOME": "/home/u"]) == "/home/u/.local/state/slimplay/name")
    #expect(s.nameFilePath(environment: [:]) == nil)
  }

  @Test func systemdMayListSeveralFolders() throws {
    let s = try settings([])
    #expect(s.nameFilePath(environment: ["STATE_DIRECTORY": "/var/lib/a:/var/lib/b"]) == "/var/lib/a/name")
  }

  @Test func emptyVariablesAreSkipped() throws {
    let s = try settings([])
    let environment = ["STATE_DIRECTORY": "", "XDG_STATE_HOME": "", "HOME": "/root"]
    #expect(s.nameFilePath(environment: environment) == "/root/.local/state/slimplay/name")
    #expect(s.nameFilePath(environment: ["HOME": ""]) == nil)
  }
}
