import Support
import TestSupport
import Testing

@Suite("FileIO")
struct FileIOTests {
  @Test func writeAtomicallyLeavesNoTemporaryFile() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let path = dir.path + "/state"
    try FileIO.writeAtomically(path, Array("hello\n".utf8))
    #expect(FileIO.read(path) == Array("hello\n".utf8))
    #expect(!dir.exists("state.tmp"))
    #expect(dir.entries() == ["state"])
  }

  @Test func writeAtomicallyReplacesLongerContent() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let path = dir.path + "/state"
    try FileIO.writeAtomically(path, Array("a much longer first version".utf8))
    try FileIO.writeAtomically(path, Array("short".utf8))
    #expect(FileIO.readText(path) == "short")
    #expect(dir.entries() == ["state"])
  }

  @Test func writeAtomicallyHandlesEmptyAndLargeFiles() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    try FileIO.writeAtomically(dir.path + "/empty", [])
    #expect(FileIO.read(dir.path + "/empty") == [])
    let large = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
    try FileIO.writeAtomically(dir.path + "/large", large)
    #expect(FileIO.read(dir.path + "/large") == large)
    #expect(dir.entries() == ["empty", "large"])
  }

  @Test func writeIntoAMissingFolderThrows() {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    #expect(throws: FileIO.Failure.self) {
      try FileIO.writeAtomically(dir.path + "/missing/state", [1])
    }
    #expect(dir.entries().isEmpty)
  }

  @Test func readLimitAndMissingFile() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    #expect(FileIO.read(dir.path + "/absent") == nil)
    #expect(FileIO.readText(dir.path + "/absent") == nil)
    try FileIO.writeAtomically(dir.path + "/f", [UInt8](repeating: 7, count: 10_000))
    let limited = try #require(FileIO.read(dir.path + "/f", limit: 100))
    #expect(limited.count >= 100)
    #expect(limited.count < 10_000)
  }

  @Test func makeDirectoriesIsLikeMkdirP() {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    #expect(FileIO.makeDirectories(dir.path + "/a/b/c"))
    #expect(dir.exists("a/b/c"))
    #expect(FileIO.makeDirectories(dir.path + "/a/b/c"))  // already there
    dir.writeFile("file", "x")
    #expect(!FileIO.makeDirectories(dir.path + "/file/sub"))
  }

  @Test func directoryName() {
    #expect(FileIO.directoryName(of: "/var/lib/slimplay/name") == "/var/lib/slimplay")
    #expect(FileIO.directoryName(of: "/name") == "/")
    #expect(FileIO.directoryName(of: "name") == ".")
    #expect(FileIO.directoryName(of: "state/name") == "state")
  }
}
