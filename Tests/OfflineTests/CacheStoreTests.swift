import LMSControl
import Logging
import SlimConnection
import Support
import TestSupport
import Testing

@testable import Offline

#if canImport(Glibc)
  import Glibc
#endif

private func temporaryFolder() -> String { TemporaryDirectory().path }

/// The folder and the files in it (the cache keeps no subfolders).
private func removeFolder(_ path: String) {
  for name in FileIO.entries(of: path) { unlink(path + "/" + name) }
  rmdir(path)
}

private func write(_ path: String, _ bytes: [UInt8]) {
  try! FileIO.writeAtomically(path, bytes)
}

private let logger = Logger(label: "cache-test")

/// A store over `folder`, its index read.
private func loadedStore(_ folder: String, capacity: Int = 1 << 20) -> CacheStore {
  let store = CacheStore(directory: folder, capacityBytes: capacity, logger: logger)
  store.load()
  return store
}

/// Puts a file into the store as a finished download would.
@discardableResult
private func addFile(_ store: CacheStore, url: String, bytes: [UInt8], protected: Set<CacheKey> = []) -> CacheKey {
  let key = CacheKey(server: "lms:9000", url: url, fileSize: bytes.count)
  let partial = store.partialPath(of: key)
  write(partial, bytes)
  #expect(
    store.add(
      key, url: url, type: "flc", from: partial, checksum: CacheFiles.checksum(partial)!, protected: protected))
  return key
}

@Suite struct CacheStoreTests {
  @Test func keysFollowContentNotTrackIDs() {
    let a = CacheKey(server: "lms:9000", url: "file:///m/a.flac", fileSize: 100)
    #expect(a == CacheKey(server: "lms:9000", url: "file:///m/a.flac", fileSize: 100))
    #expect(a != CacheKey(server: "lms:9000", url: "file:///m/a.flac", fileSize: 101))
    #expect(a != CacheKey(server: "other:9000", url: "file:///m/a.flac", fileSize: 100))
    #expect(a.value.count == 16)
  }

  @Test func entriesAreFoundInsertedAndRemovedByKey() {
    func entry(_ raw: UInt64, size: Int) -> CacheEntry {
      CacheEntry(key: CacheKey(raw: raw), size: size, checksum: raw, modified: 0, lastUsed: 0)
    }
    var entries = CacheEntries([entry(9, size: 1), entry(3, size: 1), entry(9, size: 2), entry(5, size: 1)])
    #expect(entries.values.map(\.key.raw) == [3, 5, 9])
    #expect(entries[CacheKey(raw: 9)]?.size == 2, "the later of two with one key stays")
    var reference: [UInt64: Int] = [3: 1, 5: 1, 9: 2]
    var generator = SystemRandomNumberGenerator()
    for step in 0..<2000 {
      let raw = UInt64.random(in: 0..<64, using: &generator)
      if step % 3 == 0 {
        #expect(entries.removeValue(forKey: CacheKey(raw: raw))?.size == reference.removeValue(forKey: raw))
      } else {
        entries[CacheKey(raw: raw)] = entry(raw, size: step)
        reference[raw] = step
      }
    }
    #expect(entries.values.map(\.key.raw) == reference.keys.sorted())
    #expect(entries.values.map(\.size) == reference.sorted { $0.key < $1.key }.map(\.value))
    #expect(entries[CacheKey(raw: 64)] == nil)
  }

  @Test func theIndexSurvivesARestartDropsWhatNoLongerMatchesAndTakesInWhatItMissed() {
    let folder = temporaryFolder()
    defer { removeFolder(folder) }
    let store = loadedStore(folder)
    let kept = addFile(store, url: "file:///a", bytes: Array(repeating: 1, count: 1000))
    let truncated = addFile(store, url: "file:///b", bytes: Array(repeating: 2, count: 1000))
    let deleted = addFile(store, url: "file:///c", bytes: Array(repeating: 3, count: 1000))
    write(store.path(of: truncated), Array(repeating: 2, count: 10))
    unlink(store.path(of: deleted))
    // Complete, but the index was not written after it got its name (a crash in between).
    write(folder + "/ffffffffffffffff.audio", [1, 2, 3])
    write(folder + "/stray.audio", [4, 5, 6])  // not a name the cache gives

    let reopened = loadedStore(folder)
    let missed = CacheKey(hex: "ffffffffffffffff")!
    #expect(reopened.keys == [kept, missed])
    #expect(reopened.lookUp(kept) == store.path(of: kept))
    #expect(reopened.entry(missed)?.size == 3)
    #expect(reopened.entry(missed)?.checksum == CacheFiles.checksum(folder + "/ffffffffffffffff.audio"))
    #expect(CacheFiles.status(store.path(of: truncated)) == nil, "a file shorter than its entry is deleted")
    #expect(CacheFiles.status(folder + "/stray.audio") == nil)
  }

  @Test func aDamagedIndexIsRebuiltFromTheFiles() throws {
    let folder = temporaryFolder()
    defer { removeFolder(folder) }
    let store = loadedStore(folder)
    let keys = (0..<3).map { addFile(store, url: "file:///\($0)", bytes: Array(repeating: UInt8($0), count: 500 + $0)) }
    let entries = keys.map { store.entry($0)! }
    for damage in [Array("{\"entries\": [".utf8), [0xff, 0x00, 0x13]] {
      write(folder + "/index.json", damage)
      let rebuilt = loadedStore(folder)
      #expect(rebuilt.keys == Set(keys))
      for entry in entries {
        #expect(rebuilt.entry(entry.key)?.size == entry.size)
        #expect(rebuilt.entry(entry.key)?.checksum == entry.checksum)
        #expect(rebuilt.verify(entry.key, expectedSize: entry.size))
      }
      // and written back, one entry a line: the next start reads it
      let written = FileIO.read(folder + "/index.json", limit: 1 << 20) ?? []
      let index = try JSONValue(parsing: written)
      #expect(index["entries"]?.array?.count == 3)
      #expect(written.split(separator: UInt8(ascii: "\n")).count == 5)
      var read: [JSONValue] = []
      try CacheStore.forEachIndexEntry(in: written) { item, _ in read.append(item) }
      #expect(read == index["entries"]?.array)
    }
  }

  @Test func aFileWhoseSizeIsNotTheServersIsDropped() {
    let folder = temporaryFolder()
    defer { removeFolder(folder) }
    let store = loadedStore(folder)
    let key = addFile(store, url: "file:///a", bytes: Array(repeating: 1, count: 1000))
    #expect(store.verify(key, expectedSize: 1000))
    #expect(store.verify(key, expectedSize: nil))
    #expect(!store.verify(key, expectedSize: 999))
    #expect(store.entry(key) == nil)
    #expect(CacheFiles.status(store.path(of: key)) == nil)
  }

  @Test func aCorruptFileIsDroppedWhenItChanged() {
    let folder = temporaryFolder()
    defer { removeFolder(folder) }
    let store = loadedStore(folder)
    let key = addFile(store, url: "file:///a", bytes: Array(repeating: 7, count: 4096))
    #expect(store.verify(key))
    var bytes = Array(repeating: UInt8(7), count: 4096)
    bytes[2000] = 8
    usleep(20_000)  // a later modification time
    let fd = open(store.path(of: key), O_WRONLY)
    _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    close(fd)
    #expect(!store.verify(key))
    #expect(store.entry(key) == nil)
    #expect(CacheFiles.status(store.path(of: key)) == nil)
  }

  @Test func evictsTheLeastRecentlyUsedButNeverAProtectedEntry() {
    let folder = temporaryFolder()
    defer { removeFolder(folder) }
    let store = loadedStore(folder, capacity: 2500)
    let first = addFile(store, url: "file:///1", bytes: Array(repeating: 1, count: 1000))
    let second = addFile(store, url: "file:///2", bytes: Array(repeating: 2, count: 1000))
    _ = store.lookUp(first)  // now the second is the least recently used
    let third = addFile(store, url: "file:///3", bytes: Array(repeating: 3, count: 1000), protected: [second])
    #expect(store.keys == [second, third])
    #expect(store.totalBytes <= 2500 + 1000)  // the protected one may hold the store over its cap
    #expect(!store.hasRoom(for: 1000, protecting: [second, third]))
    #expect(store.hasRoom(for: 500, protecting: [second]))
  }

  @Test func pinnedFilesAreNeverEvictedAndCountAgainstTheirOwnCap() {
    let folder = temporaryFolder()
    defer { removeFolder(folder) }
    let store = CacheStore(directory: folder, capacityBytes: 2500, pinCapacityBytes: 2500, logger: logger)
    store.load()
    let pinned = addFile(store, url: "file:///pinned", bytes: Array(repeating: 9, count: 2000))
    store.setPinned([pinned])
    // The pinned file is the least recently used, and the cache is over its cap but for it.
    let first = addFile(store, url: "file:///1", bytes: Array(repeating: 1, count: 1000))
    let second = addFile(store, url: "file:///2", bytes: Array(repeating: 2, count: 1000))
    let third = addFile(store, url: "file:///3", bytes: Array(repeating: 3, count: 1000))
    #expect(store.keys == [pinned, second, third])
    #expect(store.entry(first) == nil)
    #expect(store.pinnedBytes == 2000)
    #expect(store.hasPinRoom(for: 500))
    #expect(!store.hasPinRoom(for: 501))
    // Pinned files take nothing from the cache's own room.
    #expect(store.hasRoom(for: 1500, protecting: [second]))
    #expect(!store.hasRoom(for: 1501, protecting: [second]))
    // Loaded again with the cache over its cap, the pinned file stays.
    let reloaded = CacheStore(directory: folder, capacityBytes: 1000, pinCapacityBytes: 2500, logger: logger)
    reloaded.load(pinned: [pinned])
    #expect(reloaded.keys == [pinned, third])
    // Unpinned, it is an ordinary file again, and the oldest: out at once, the cache being full.
    store.setPinned([])
    #expect(store.keys == [second, third])
  }

  @Test func aCorruptPinnedFileDroppedIsReportedOnceToBeFetchedAgain() {
    let folder = temporaryFolder()
    defer { removeFolder(folder) }
    let store = CacheStore(directory: folder, capacityBytes: 1 << 20, pinCapacityBytes: 1 << 20, logger: logger)
    store.load()
    let pinned = addFile(store, url: "file:///pinned", bytes: Array(repeating: 9, count: 2000))
    let other = addFile(store, url: "file:///other", bytes: Array(repeating: 8, count: 2000))
    store.setPinned([pinned])
    #expect(!store.takeDroppedPinned())
    store.remove(other)
    #expect(!store.takeDroppedPinned(), "not a pinned file")
    // Changed on disk to another size: dropped by the check before use.
    write(store.path(of: pinned), [1, 2, 3])
    #expect(!store.verify(pinned))
    #expect(store.takeDroppedPinned())
    #expect(!store.takeDroppedPinned(), "told once")
  }

  @Test func aFilesTrackRecordSurvivesARestart() {
    let folder = temporaryFolder()
    defer { removeFolder(folder) }
    let store = loadedStore(folder)
    let bytes = Array(repeating: UInt8(7), count: 700)
    let track = QueueTrack(
      index: 0, id: 42, title: "Song", artist: "Ann", album: "Alpha", duration: 3.5, url: "file:///a", type: "flc",
      fileSize: bytes.count, coverID: "c0ffee", albumID: 7, trackNumber: 3, disc: 2)
    let key = CacheKey(server: "lms:9000", url: track.url, fileSize: track.fileSize)
    write(store.partialPath(of: key), bytes)
    #expect(
      store.add(
        key, url: track.url, type: track.type, from: store.partialPath(of: key),
        checksum: CacheFiles.checksum(store.partialPath(of: key))!, protected: [], track: track, server: "lms:9000"))
    let reloaded = loadedStore(folder)
    #expect(
      reloaded.cachedRecords() == [CacheRecord(key: key, url: track.url, type: "flc", server: "lms:9000", track: track)]
    )
    #expect(reloaded.record(recording: track)?.server == "lms:9000")
    // Gone from the cache, its record no longer counts.
    reloaded.remove(key)
    #expect(reloaded.cachedRecords().isEmpty)
    #expect(reloaded.record(recording: track) == nil)
  }

  @Test func recordsLeaveTheIndexOfAnEarlierVersionAndStaleOnesAreDroppedInTime() throws {
    let folder = temporaryFolder()
    defer { removeFolder(folder) }
    // A version 1 index: each entry held its record.
    let bytes = Array(repeating: UInt8(5), count: 300)
    let key = CacheKey(server: "lms:9000", url: "file:///a.flac", fileSize: bytes.count)
    write(folder + "/" + key.value + ".audio", bytes)
    let status = try #require(CacheFiles.status(folder + "/" + key.value + ".audio"))
    let checksum = CacheFiles.hex(try #require(CacheFiles.checksum(folder + "/" + key.value + ".audio")))
    let old = """
      {"version":1,"entries":[{"key":"\(key.value)","url":"file:///a.flac","type":"flc","size":300,
      "checksum":"\(checksum)","modified":\(status.modified),"used":4,"server":"lms:9000",
      "track":{"playlist index":0,"id":5,"title":"Five","url":"file:///a.flac","type":"flc","filesize":300}}]}
      """
    write(folder + "/index.json", Array(old.utf8))
    let store = loadedStore(folder, capacity: 1 << 30)
    #expect(store.entry(key)?.checksum == UInt64(checksum, radix: 16))
    #expect(store.cachedRecords().map(\.track?.title) == ["Five"])
    let index = try JSONValue(parsing: FileIO.read(folder + "/index.json") ?? [])
    #expect(index["version"] == 2)
    #expect(index["entries"]?[0]?["track"] == nil, "the index keeps sizes and times only")

    // Many files come and go: the records file keeps the live ones, the newest of each, and a
    // line torn by a full disk is skipped.
    var last: CacheKey = key
    for round in 0..<200 {
      store.remove(last)
      last = addFile(store, url: "file:///\(round)", bytes: Array(repeating: UInt8(round & 0xff), count: 100 + round))
    }
    let recordsPath = folder + "/records.jsonl"
    let fd = open(recordsPath, O_WRONLY | O_APPEND)
    _ = Array(#"{"key":"00000000000000"#.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    close(fd)
    let reopened = loadedStore(folder, capacity: 1 << 30)
    #expect(reopened.cachedRecords().map(\.url) == ["file:///199"])
    addFile(reopened, url: "file:///after", bytes: [1, 2, 3])
    #expect(Set(reopened.cachedRecords().map(\.url)) == ["file:///199", "file:///after"])
    let lines = (FileIO.readText(recordsPath) ?? "").split(separator: "\n")
    #expect(lines.count < 2 * 1 + 64 + 1, "stale lines were dropped")
  }

  @Test func savedPlaybackRoundTrips() throws {
    let folder = temporaryFolder()
    defer { removeFolder(folder) }
    let track = QueueTrack(
      index: 3, id: 42, title: "Song \"1\"", artist: "A", album: "B", duration: 12.5, url: "file:///m/s.flac",
      type: "flc", fileSize: 1234, coverID: "c0ffee")
    let saved = SavedPlayback(
      server: "lms:9000", playlistTimestamp: 1_700_000_000.25, index: 3, position: 7.125, sampleRate: 48000,
      queue: [track])
    try saved.save(to: folder + "/playback.json")
    #expect(SavedPlayback.load(from: folder + "/playback.json") == saved)
    // A member of a sync group keeps its group, the members' addresses and its audio delay.
    var grouped = saved
    grouped.group = SyncGroup(master: "02:11:22:33:55:01", slaves: ["02:11:22:33:55:02", "02:11:22:33:55:03"])
    grouped.groupAddresses = ["02:11:22:33:55:01": "192.168.1.20", "02:11:22:33:55:03": "192.168.1.22"]
    grouped.playDelayMilliseconds = 25
    try grouped.save(to: folder + "/grouped.json")
    #expect(SavedPlayback.load(from: folder + "/grouped.json") == grouped)
    // A queue the listener built stays theirs, with the server's queue of before (or none known).
    for serverQueue in [
      SavedPlayback.Queue(tracks: [track], current: 3, trackCount: 9, playlistTimestamp: 1_700_000_000.5), nil,
    ] {
      var listeners = saved
      listeners.owner = .listener(serverQueue: serverQueue)
      try listeners.save(to: folder + "/listeners.json")
      #expect(SavedPlayback.load(from: folder + "/listeners.json") == listeners)
    }
    write(folder + "/broken.json", Array("{\"server\":".utf8))
    #expect(SavedPlayback.load(from: folder + "/broken.json") == nil)
  }
}
