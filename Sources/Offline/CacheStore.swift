import LMSControl
import Logging
import SlimConnection
import Support
import Synchronization

/// Identifies a cached file by what it is, not by LMS's track id (which changes when the
/// library is rescanned): the server, the track's URL and its size, hashed (FNV-1a, 64 bits). Its
/// 16 hex digits name the file.
public struct CacheKey: Hashable, Sendable, CustomStringConvertible {
  public let raw: UInt64

  public init(server: String, url: String, fileSize: Int?) {
    raw = CacheFiles.fnv1a("\(server)\n\(url)\n\(fileSize ?? -1)")
  }

  init(raw: UInt64) { self.raw = raw }

  /// From a file name or an index line: exactly the 16 lower-case hex digits the key would write.
  public init?(hex: some StringProtocol) {
    guard hex.utf8.count == 16, let raw = UInt64(hex, radix: 16), CacheFiles.hex(raw) == hex else { return nil }
    self.raw = raw
  }

  public var value: String { CacheFiles.hex(raw) }
  public var description: String { value }
}

/// One complete, verified file in the cache: what the store keeps in memory for it (what the file
/// is lives in its `CacheRecord`, on disk).
public struct CacheEntry: Equatable, Sendable {
  public var key: CacheKey
  public var size: Int
  public var checksum: UInt64
  /// The file's modification time when it was verified: a change means it must be rechecked.
  public var modified: Int
  /// Larger is more recent (least recently used goes first).
  public var lastUsed: Int
}

/// The cache folder: complete files named by key, `.part` files being downloaded, `index.json`
/// (each file's size, checksum, time and use), rewritten atomically after every change so a restart
/// finds what it left, and `records.jsonl`, what each file is (`CacheRecords`), kept on disk only.
/// Shared by the control loop (lookups) and the download loop (additions), hence the lock; no
/// lock is held across file I/O.
///
/// Pinned files (the listener's, see `PinList`) are never evicted and count against their own cap,
/// `pinCapacityBytes`; the others share `capacityBytes`, least recently used out first.
public final class CacheStore: Sendable {
  public let directory: String
  public let capacityBytes: Int
  public let pinCapacityBytes: Int
  private let logger: Logger
  private let state = Mutex(State())
  private let records: CacheRecords

  private struct State {
    var entries = CacheEntries()
    var pinned: Set<CacheKey> = []
    var clock = 0
    var writable = true
    /// Lines in the records file, live or stale.
    var recordLines = 0
    /// A pinned file was dropped (found changed or corrupt): the pins' downloads must look again.
    var droppedPinned = false

    func bytes(pinned wanted: Bool) -> Int {
      entries.values.reduce(0) { $0 + (pinned.contains($1.key) == wanted ? $1.size : 0) }
    }
  }

  /// The folder's lock, held as long as the store lives (nil: the caller keeps the folder to itself).
  private let owner: FolderLock?

  public init(
    directory: String, capacityBytes: Int, pinCapacityBytes: Int = 0, logger: Logger, owner: FolderLock? = nil
  ) {
    self.directory = directory
    self.capacityBytes = capacityBytes
    self.pinCapacityBytes = pinCapacityBytes
    self.logger = logger
    self.owner = owner
    records = CacheRecords(path: directory + "/records.jsonl", logger: logger)
  }

  var indexPath: String { directory + "/index.json" }
  public func path(of key: CacheKey) -> String { directory + "/" + key.value + ".audio" }
  public func partialPath(of key: CacheKey) -> String { directory + "/" + key.value + ".part" }

  /// Reads the index and drops what does not match the disk (missing files, wrong sizes). A
  /// complete file the index does not list is taken in: a file gets its final name only once its
  /// download is complete and verified, so it was left by a crash before the index was written, or
  /// the index itself was lost or damaged, in which case the whole index is rebuilt from the files.
  /// `pinned` (the saved pins' files) are spared by the eviction that follows. An index of version
  /// 1, which held the records too, has them moved to the records file.
  public func load(pinned: Set<CacheKey> = []) {
    guard FileIO.makeDirectories(directory) else {
      logger.error("cannot create \(directory): caching is off")
      state.withLock { $0.writable = false }
      return
    }
    var loaded: [CacheEntry] = []
    var listed: Set<CacheKey> = []
    var clock = 0
    var damaged = false
    var movedRecords: [CacheRecord] = []
    if let bytes = FileIO.read(indexPath, limit: 64 << 20) {
      do {
        try Self.forEachIndexEntry(in: bytes) { item, holdsRecords in
          guard let entry = CacheEntry(item) else { return }
          listed.insert(entry.key)
          guard let status = CacheFiles.status(path(of: entry.key)), status.size == entry.size else {
            logger.warning("\(entry.key) is missing or has the wrong size: dropped")
            return
          }
          loaded.append(entry)
          clock = max(clock, entry.lastUsed)
          if holdsRecords, let record = CacheRecord(item) { movedRecords.append(record) }
        }
      } catch {
        logger.error("index unreadable (\(error)): rebuilding it from the files")
        damaged = true
      }
    }
    var entries = CacheEntries(loaded)
    loaded = []
    var adopted = 0
    for name in FileIO.entries(of: directory) where name.hasSuffix(".audio") {
      let key = CacheKey(hex: name.dropLast(6))
      guard let key, entries[key] == nil else {
        if key == nil { CacheFiles.remove(directory + "/" + name) }
        continue
      }
      if !listed.contains(key), let entry = adopt(key) {
        entries[key] = entry
        adopted += 1
      } else {
        CacheFiles.remove(directory + "/" + name)
      }
    }
    if !movedRecords.isEmpty {
      records.replace(with: movedRecords)
      logger.notice("\(movedRecords.count) track records moved out of the index into \(records.path)")
    }
    let count = entries.count
    let lines = records.lineCount()
    let kept = lines > 2 * count + 64 ? records.compact { entries[$0] != nil } : lines
    state.withLock {
      $0.entries = entries
      $0.clock = clock
      $0.pinned = pinned
      $0.recordLines = kept
    }
    if damaged || adopted > 0 {
      logger.notice("\(adopted) complete files the index did not list taken in")
    }
    logger.info("\(count) files in \(directory)")
    evict(protecting: [])
    persist()
  }

  /// The index's entries, with whether they hold records (version 1). As `persist` writes it, one
  /// entry a line, it is read a line at a time (`JSONLines`); any other layout (an earlier
  /// version, an index edited by hand) is read whole.
  static func forEachIndexEntry(in bytes: [UInt8], _ body: (JSONValue, Bool) -> Void) throws(JSONError) {
    if try indexLayout.forEachItem(in: bytes, { body($0, false) }) != nil { return }
    let index = try JSONValue(parsing: bytes)
    let holdsRecords = (index["version"]?.int ?? 1) < 2
    for item in index["entries"]?.array ?? [] { body(item, holdsRecords) }
  }

  private static let indexLayout = JSONLines(head: #"{"version":2,"entries":["#, tail: "]}")

  /// An entry for a complete file found without one: the checksum is taken now; it counts as the
  /// least recently used. It has no record (what only the download knew).
  private func adopt(_ key: CacheKey) -> CacheEntry? {
    let file = path(of: key)
    guard let status = CacheFiles.status(file), let checksum = CacheFiles.checksum(file) else { return nil }
    return CacheEntry(key: key, size: status.size, checksum: checksum, modified: status.modified, lastUsed: 0)
  }

  public var isWritable: Bool { state.withLock { $0.writable } }
  public var totalBytes: Int { state.withLock { $0.entries.values.reduce(0) { $0 + $1.size } } }
  public var pinnedBytes: Int { state.withLock { $0.bytes(pinned: true) } }

  /// The files the listener pinned: kept whatever the LRU says. Files no longer pinned become
  /// ordinary entries, evicted now if the cache is over its cap.
  public func setPinned(_ keys: Set<CacheKey>) {
    let released = state.withLock { state -> Bool in
      defer { state.pinned = keys }
      return !state.pinned.isSubset(of: keys)
    }
    if released {
      evict(protecting: [])
      persist()
    }
  }

  public func isPinned(_ key: CacheKey) -> Bool { state.withLock { $0.pinned.contains(key) } }

  /// Whether a pinned file was dropped since last asked (it is to be fetched again).
  public func takeDroppedPinned() -> Bool {
    state.withLock { state in
      defer { state.droppedPinned = false }
      return state.droppedPinned
    }
  }

  /// Room under the pin cap for a pinned file of `bytes`.
  public func hasPinRoom(for bytes: Int) -> Bool {
    state.withLock { $0.bytes(pinned: true) + bytes <= pinCapacityBytes }
  }

  /// The records of the files cached now, read from disk, for a library built from what the cache
  /// holds.
  public func cachedRecords() -> [CacheRecord] {
    Array(records.read { entry($0) != nil }.values)
  }

  /// The record of a cached file that describes `track` (its URL and size), whatever server's
  /// key it has: a player started without its server learns from it which server its cache
  /// belongs to.
  public func record(recording track: QueueTrack) -> CacheRecord? {
    records.first(recording: track) { entry($0) != nil }
  }

  public var keys: Set<CacheKey> { state.withLock { Set($0.entries.keys) } }

  public func entry(_ key: CacheKey) -> CacheEntry? { state.withLock { $0.entries[key] } }
  /// The path of a complete file, marking it recently used.
  public func lookUp(_ key: CacheKey) -> String? {
    let found = state.withLock { state -> Bool in
      guard state.entries[key] != nil else { return false }
      state.clock += 1
      state.entries[key]!.lastUsed = state.clock
      return true
    }
    return found ? path(of: key) : nil
  }

  /// Checks a cached file before relying on it: unchanged size and time are trusted, anything
  /// else is rehashed; a mismatch drops the entry so it is fetched again.
  /// `expectedSize` is the size the server gives for the track, when it gives one.
  @discardableResult
  public func verify(_ key: CacheKey, expectedSize: Int? = nil) -> Bool {
    guard let entry = entry(key) else { return false }
    let file = path(of: key)
    guard let status = CacheFiles.status(file), status.size == entry.size else {
      logger.warning("\(key) changed size on disk: dropped")
      remove(key)
      return false
    }
    if let expectedSize, expectedSize != entry.size {
      logger.warning("\(key) holds \(entry.size) bytes, the server's file \(expectedSize): dropped")
      remove(key)
      return false
    }
    if status.modified == entry.modified { return true }
    guard CacheFiles.checksum(file) == entry.checksum else {
      logger.warning("\(key) is corrupt (checksum mismatch): dropped")
      remove(key)
      return false
    }
    state.withLock { $0.entries[key]?.modified = status.modified }
    persist()
    return true
  }

  /// Moves a verified download into place and records it, then evicts down to the cap,
  /// sparing `protected` (the tracks about to play).
  public func add(
    _ key: CacheKey, url: String, type: String, from partial: String, checksum: UInt64, protected: Set<CacheKey>,
    track: QueueTrack? = nil, server: String? = nil
  ) -> Bool {
    let file = path(of: key)
    if let code = CacheFiles.rename(partial, file) {
      logger.error("cannot move \(partial) into place: \(errorText(code))")
      CacheFiles.remove(partial)
      return false
    }
    guard let status = CacheFiles.status(file) else { return false }
    records.append(CacheRecord(key: key, url: url, type: type, server: server, track: track))
    let lines = state.withLock { state in
      state.clock += 1
      state.entries[key] = CacheEntry(
        key: key, size: status.size, checksum: checksum, modified: status.modified, lastUsed: state.clock)
      state.recordLines += 1
      return (total: state.recordLines, live: state.entries.count)
    }
    if lines.total > 2 * lines.live + 64 {
      let kept = records.compact { entry($0) != nil }
      state.withLock { $0.recordLines = kept }
    }
    evict(protecting: protected.union([key]))
    persist()
    return true
  }

  public func remove(_ key: CacheKey) {
    state.withLock { state in
      if state.entries.removeValue(forKey: key) != nil, state.pinned.contains(key) { state.droppedPinned = true }
    }
    CacheFiles.remove(path(of: key))
    persist()
  }

  /// Least recently used first, until the files not pinned fit under the cap.
  func evict(protecting protected: Set<CacheKey>) {
    let victims = state.withLock { state -> [CacheKey] in
      var total = state.bytes(pinned: false)
      var victims: [CacheKey] = []
      for entry in state.entries.values.sorted(by: { $0.lastUsed < $1.lastUsed }) where total > capacityBytes {
        guard !protected.contains(entry.key), !state.pinned.contains(entry.key) else { continue }
        total -= entry.size
        victims.append(entry.key)
        state.entries.removeValue(forKey: entry.key)
      }
      return victims
    }
    for key in victims {
      logger.info("evicting \(key) (cache over \(capacityBytes / 1_048_576) MB)")
      CacheFiles.remove(path(of: key))
    }
  }

  /// Room for `bytes` more, not pinned, without evicting a protected entry.
  public func hasRoom(for bytes: Int, protecting protected: Set<CacheKey>) -> Bool {
    state.withLock { state in
      let kept = state.entries.values.reduce(0) { total, entry in
        protected.contains(entry.key) && !state.pinned.contains(entry.key) ? total + entry.size : total
      }
      return kept + bytes <= capacityBytes
    }
  }

  /// Written as text directly (no document tree): it runs after every download, and a tree of
  /// thousands of small values would leave the heap larger than the player needs when idle.
  private func persist() {
    let entries = state.withLock { $0.entries.values.sorted { $0.lastUsed < $1.lastUsed } }
    let lines = entries.map { entry in
      "{\"key\":\"\(entry.key.value)\",\"size\":\(entry.size),\"checksum\":\"\(CacheFiles.hex(entry.checksum))\","
        + "\"modified\":\(entry.modified),\"used\":\(entry.lastUsed)}"
    }
    do {
      try FileIO.writeAtomically(indexPath, Self.indexLayout.document(lines))
    } catch {
      logger.error("cannot write the index: \(error)")
    }
  }
}

extension CacheEntry {
  /// An entry of the index (version 2, or 1, whose entries also held the record).
  init?(_ value: JSONValue) {
    guard let key = value["key"]?.string.flatMap(CacheKey.init(hex:)), let size = value["size"]?.int,
      let checksum = value["checksum"]?.string.flatMap({ UInt64($0, radix: 16) })
    else { return nil }
    self.init(
      key: key, size: size, checksum: checksum, modified: value["modified"]?.int ?? 0,
      lastUsed: value["used"]?.int ?? 0)
  }
}
