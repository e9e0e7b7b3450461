import Logging
import SlimProto
import SlimplayCLI
import SlimplayPlayer
import Support
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("State and name file paths")
struct StatePathTests {
  static let fullEnvironment = [
    "STATE_DIRECTORY": "/var/lib/slimplay",
    "XDG_STATE_HOME": "/home/u/.state",
    "HOME": "/home/u",
  ]
  static let mac = MACAddress("02:11:22:33:44:5a")!

  func nameFile(_ s: PlayerSettings, _ environment: [String: String]) -> String? {
    s.nameFilePath(environment: environment, mac: Self.mac)
  }

  @Test func nameFileFlagWins() throws {
    let s = try settings(["-N", "/etc/slimplay/name", "--state-dir", "/srv/state"])
    #expect(nameFile(s, Self.fullEnvironment) == "/etc/slimplay/name")
  }

  @Test func eachPlayerHasAFolderOfItsOwnInTheStateFolder() throws {
    let s = try settings(["--state-dir", "/srv/state"])
    #expect(nameFile(s, Self.fullEnvironment) == "/srv/state/02-11-22-33-44-5a/name")
    #expect(s.stateDirectoryPath(environment: [:]) == "/srv/state")
    #expect(s.playerStateDirectoryPath(environment: [:], mac: Self.mac) == "/srv/state/02-11-22-33-44-5a")
    let other = MACAddress("02:11:22:33:44:5b")!
    #expect(s.playerStateDirectoryPath(environment: [:], mac: other) == "/srv/state/02-11-22-33-44-5b")
  }

  @Test func systemdStateDirectoryThenXDGThenHome() throws {
    let s = try settings([])
    #expect(nameFile(s, Self.fullEnvironment) == "/var/lib/slimplay/02-11-22-33-44-5a/name")
    #expect(
      nameFile(s, ["XDG_STATE_HOME": "/home/u/.state", "HOME": "/home/u"])
        == "/home/u/.state/slimplay/02-11-22-33-44-5a/name")
    #expect(nameFile(s, ["HOME": "/home/u"]) == "/home/u/.local/state/slimplay/02-11-22-33-44-5a/name")
    #expect(nameFile(s, [:]) == nil)
  }

  @Test func systemdMayListSeveralFolders() throws {
    let s = try settings([])
    #expect(s.stateDirectoryPath(environment: ["STATE_DIRECTORY": "/var/lib/a:/var/lib/b"]) == "/var/lib/a")
  }

  @Test func emptyVariablesAreSkipped() throws {
    let s = try settings([])
    let environment = ["STATE_DIRECTORY": "", "XDG_STATE_HOME": "", "HOME": "/root"]
    #expect(s.stateDirectoryPath(environment: environment) == "/root/.local/state/slimplay")
    #expect(s.stateDirectoryPath(environment: ["HOME": ""]) == nil)
  }
}

@Suite("A player's state folder")
struct PlayerStateFolderTests {
  let logger = Logger(label: "test")

  @Test func aSinglePlayerLayoutMovesIntoTheFirstPlayersFolderOnly() throws {
    let base = TemporaryDirectory()
    defer { base.remove() }
    base.writeFile("name", "kitchen\n")
    base.writeFile("playback.json", "{}")
    base.makeDirectory("cache")
    base.writeFile("cache/index.json", "{}")
    let first = MACAddress("02:00:00:00:00:01")!
    let second = MACAddress("02:00:00:00:00:02")!
    let firstLock = try PlayerStateFolder.prepare(base: base.path, mac: first, logger: logger).get()
    #expect(base.exists("02-00-00-00-00-01/name"))
    #expect(base.exists("02-00-00-00-00-01/playback.json"))
    #expect(base.exists("02-00-00-00-00-01/cache/index.json"))
    #expect(!base.exists("name") && !base.exists("playback.json") && !base.exists("cache"))
    let secondLock = try PlayerStateFolder.prepare(base: base.path, mac: second, logger: logger).get()
    #expect(base.exists("02-00-00-00-00-02"))
    #expect(!base.exists("02-00-00-00-00-02/name"))
    withExtendedLifetime((firstLock, secondLock)) {}
  }

  @Test func aPlayerThatHasItsFolderTakesNothingFromTheStateFolder() throws {
    let base = TemporaryDirectory()
    defer { base.remove() }
    base.makeDirectory("02-00-00-00-00-01")
    base.writeFile("02-00-00-00-00-01/name", "hall\n")
    base.writeFile("name", "a name written by an older version\n")
    let mac = MACAddress("02:00:00:00:00:01")!
    let lock = try PlayerStateFolder.prepare(base: base.path, mac: mac, logger: logger).get()
    #expect(FileIO.readText(base.path + "/02-00-00-00-00-01/name") == "hall\n")
    #expect(base.exists("name"))
    withExtendedLifetime(lock) {}
  }

  @Test func aSecondProcessForTheSamePlayerIsRefusedUntilTheFirstEnds() throws {
    let base = TemporaryDirectory()
    defer { base.remove() }
    let mac = MACAddress("02:00:00:00:00:01")!
    var first: FolderLock? = try PlayerStateFolder.prepare(base: base.path, mac: mac, logger: logger).get()
    // flock conflicts between open file descriptions, so a second open in this process stands for
    // a second process.
    let second = PlayerStateFolder.prepare(base: base.path, mac: mac, logger: logger)
    #expect(throws: FolderLock.Failure.held(folder: base.path + "/02-00-00-00-00-01", pid: getpid())) {
      try second.get()
    }
    withExtendedLifetime(first) {}
    first = nil
    #expect((try? PlayerStateFolder.prepare(base: base.path, mac: mac, logger: logger).get()) != nil)
  }
}
