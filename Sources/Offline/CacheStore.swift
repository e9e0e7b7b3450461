import LMSControl
import Logging
import SlimConnection
import Support
import Synchronization

/// Identifies a cached file by what it is, not by LMS's track id (which changes when the
/// library is rescanned): the server, the track's URL and its size.
public struct CacheKey: Hashable, Sendable, CustomStringConvertible {
  public let value: String

  public init(server: String, url: String, fileSize: Int?) {
    value = CacheFiles.hex(CacheFiles.fnv1a("\(server)\n\(url)\n\(fileSize ?? -1)"))
  }

  init(value: String) { self.value = value }

  public var description: String { value }
}

/// One complete, verified file in the cache.
public struct CacheEntry: Equatable, Sendable {
  public var key: CacheKey
  public var url: String
  public var type: String
  public var size: Int
  public var checksum: UInt64
  /// The file's modification time when it was verified: a change means it must be rechecked.
  public var modified: Int
  /// Larger is more recent (least recently used goes first).
  public var lastUsed: Int
  /// What the server said the file is (title, artist, album, ids), for a library built without it.
  public var track: QueueTrack?
  /// The server it came from (`LMSEndpoint.identity`, what its key was made with).
  public var server: String?

  var fileName: String { key.value + ".audio" }
}

/// The cache folder: complete files named by key, `.part` files being downloaded, and
/// `index.json`, rewritten atomically after every change so a restart finds what it left.
/// Shared by the control loop (lookups) and the download loop (additions), hence the lock; no
/// lock is held across file I/O except the index rewrite, which is small.
///
/// Pinned files (the listener's, see `PinList`) are never evicted and count against their own cap,
/// `pinCapacityBytes`; the others share `capacityBytes`, least recently used out first.
public final class CacheStore: Sendable {
  public let directory: String
  public let capacityBytes: Int
  public let pinCapacityBytes: Int
  private let logger: Logger
  private let state = Mutex(State())

  private struct State {
    var entries: [CacheKey: CacheEntry] = [:]
    var pinned: Set<CacheKey> = []
    var clock = 0
    var writable = true

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
  }

  var indexPath: String { directory + "/index.json" }
  public func path(of key: CacheKey) -> String { directory + "/" + key.value + ".audio" }
  public func partialPath(of key: CacheKey) -> String { directory + "/" + key.value + ".part" }

  /// Reads the index and drops what does not match the disk (missing files, wrong sizes). A
  /// complete file the index does not list is taken in: a file gets its final name only once its
  /// download is complete and verified, so it was left by a crash before the index was written, or
  /// the index itself was lost or damaged, in which case the whole index is rebuilt from the files.
  /// `pinned` (the saved pins' files) are spared by the eviction that follows.
  public func load(pinned: Set<CacheKey> = []) {
    guard FileIO.makeDirectories(directory) else {
      logger.error("cannot create \(directory): caching is off")
      state.withLock { $0.writable = false }
      return
    }
    var entries: [CacheKey: CacheEntry] = [:]
    var listed: Set<CacheKey> = []
    var clock = 0
    var damaged = false
    if let bytes = FileIO.read(indexPath, limit: 16 << 20) {
      do {
        let index = try JSONValue(parsing: bytes)
        for item in index["entries"]?.array ?? [] {
          guard let entry = CacheEntry(item) else { continue }
          listed.insert(entry.key)
          guard let status = CacheFiles.status(path(of: entry.key)), status.size == entry.size else {
            logger.warning("\(entry.key) is missing or has the wrong size: dropped")
            continue
          }
          entries[entry.key] = entry
          clock = max(clock, entry.lastUsed)
        }
      } catch {
        logger.error("index unreadable (\(error)): rebuilding it from the files")
        damaged = true
      }
    }
    var adopted = 0
    for name in FileIO.entries(of: directory) where name.hasSuffix(".audio") {
      let key = CacheKey(value: String(name.dropLast(6)))
      guard entries[key] == nil else { continue }
      if !listed.contains(key), let entry = adopt(key) {
        entries[key] = entry
        adopted += 1
      } else {
        CacheFiles.remove(directory + "/" + name)
      }
    }
    let count = entries.count
    state.withLock {
      $0.entries = entries
      $0.clock = clock
      $0.pinned = pinned
    }
    if damaged || adopted > 0 {
      logger.notice("\(adopted) complete files the index did not list taken in")
    }
    logger.info("\(count) files in \(directory)")
    evict(protecting: [])
    persist()
  }

  /// An entry for a complete file found without one. What only the download knew (the URL, the
  /// type) stays empty; the checksum is taken now; it counts as the least recently used.
  private func adopt(_ key: CacheKey) -> CacheEntry? {
    let file = path(of: key)
    guard key.value.count == 16, UInt64(key.value, radix: 16) != nil, let status = CacheFiles.status(file),
      let checksum = CacheFiles.checksum(file)
    else { return nil }
    return CacheEntry(
      key: key, url: "", type: "", size: status.size, checksum: checksum, modified: status.modified, lastUsed: 0)
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

  /// Room under the pin cap for a pinned file of `bytes`.
  public func hasPinRoom(for bytes: Int) -> Bool {
    state.withLock { $0.bytes(pinned: true) + bytes <= pinCapacityBytes }
  }

  /// Every entry, for a library built from what the cache holds.
  public var entries: [CacheEntry] { state.withLock { Array($0.entries.values) } }

  /// The entry that records `track` (its file and size), whatever server's key it has: a player
  /// started without its server learns from it which server its cache belongs to.
  public func entry(recording track: QueueTrack) -> CacheEntry? {
    state.withLock { state in
      state.entries.values.first { $0.track?.url == track.url && $0.track?.fileSize == track.fileSize }
    }
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
    state.withLock { state in
      state.clock += 1
      state.entries[key] = CacheEntry(
        key: key, url: url, type: type, size: status.size, checksum: checksum, modified: status.modified,
        lastUsed: state.clock, track: track, server: server)
    }
    evict(protecting: protected.union([key]))
    persist()
    return true
  }

  public func remove(_ key: CacheKey) {
    state.withLock { _ = $0.entries.removeValue(forKey: key) }
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

  private func persist() {
    let entries = state.withLock { Array($0.entries.values) }
    let document: JSONValue = [
      "version": 1, "entries": .array(entries.sorted { $0.lastUsed < $1.lastUsed }.map(\.json)),
    ]
    do {
      try FileIO.writeAtomically(indexPath, Array(document.encoded.utf8))
    } catch {
      logger.error("cannot write the index: \(error)")
    }
  }
}

extension CacheEntry {
  var json: JSONValue {
    var members: [String: JSONValue] = [
      "key": .string(key.value), "url": .string(url), "type": .string(type), "size": .number(Double(size)),
      "checksum": .string(CacheFiles.hex(checksum)), "modified": .number(Double(modified)),
      "used": .number(Double(lastUsed)),
    ]
    if let track { members["track"] = track.json }
    if let server { members["server"] = .string(server) }
    return .object(members)
  }

  init?(_ value: JSONValue) {
    guard let key = value["key"]?.string, key.count == 16, let size = value["size"]?.int,
      let checksum = value["checksum"]?.string.flatMap({ UInt64($0, radix: 16) })
    else { return nil }
    self.init(
      key: CacheKey(value: key), url: value["url"]?.string ?? "", type: value["type"]?.string ?? "", size: size,
      checksum: checksum, modified: value["modified"]?.int ?? 0, lastUsed: value["used"]?.int ?? 0,
      track: value["track"].flatMap { QueueTrack($0, index: 0) }, server: value["server"]?.string)
  }
}
