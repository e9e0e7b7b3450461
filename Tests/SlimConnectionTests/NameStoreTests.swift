import SlimConnection
import Support
import TestSupport
import Testing

@Suite("NameStore")
struct NameStoreTests {
  @Test func saveThenLoadRoundTrips() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = NameStore(path: dir.path + "/name")
    try store.save("Kitchen")
    #expect(store.load() == "Kitchen")
    #expect(FileIO.readText(dir.path + "/name") == "Kitchen\n")
    try store.save("Living room")
    #expect(store.load() == "Living room")
    #expect(dir.entries() == ["name"])
  }

  @Test func saveCreatesMissingFolders() throws {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    let store = NameStore(path: dir.path + "/state/slimplay/name")
    try store.save("Büro ♫")
    #expect(store.load() == "Büro ♫")
  }

  @Test func loadTrimsWhitespace() {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    dir.writeFile("name", "  \t testplayer \r\n\n")
    #expect(NameStore(path: dir.path + "/name").load() == "testplayer")
  }

  @Test func windowsLineEndingIsTrimmed() {
    // "\r\n" is a single Character in Swift: trimming must still remove it.
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    dir.writeFile("name", "Kitchen\r\n")
    #expect(NameStore(path: dir.path + "/name").load() == "Kitchen")
    dir.writeFile("name", "\r\n\r\n")
    #expect(NameStore(path: dir.path + "/name").load() == nil)
  }

  @Test func blankFileIsNoName() {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    dir.writeFile("name", " \n\t\n")
    #expect(NameStore(path: dir.path + "/name").load() == nil)
    dir.writeFile("empty", "")
    #expect(NameStore(path: dir.path + "/empty").load() == nil)
  }

  @Test func missingFileIsNoName() {
    let dir = TemporaryDirectory()
    defer { dir.remove() }
    #expect(NameStore(path: dir.path + "/absent").load() == nil)
  }

  @Test func withoutAPathNothingIsStored() throws {
    let store = NameStore(path: nil)
    #expect(store.load() == nil)
    try store.save("ignored")
    #expect(store.load() == nil)
  }
}
