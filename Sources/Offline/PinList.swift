import LMSControl
import Support

/// Music the listener asked the player to keep: an album, a saved playlist or a single track of one
/// server, with the tracks it had when it was pinned.
public struct Pin: Equatable, Sendable {
  public enum Kind: String, Equatable, Sendable, CaseIterable {
    case album, playlist, track
  }

  public var kind: Kind
  /// The album's, playlist's or track's id on `server`.
  public var id: Int
  public var title: String
  /// The server the ids belong to (`LMSEndpoint.identity`).
  public var server: String
  public var tracks: [QueueTrack]

  public init(kind: Kind, id: Int, title: String, server: String, tracks: [QueueTrack]) {
    self.kind = kind
    self.id = id
    self.title = title
    self.server = server
    self.tracks = tracks
  }

  /// The files that hold it.
  public var keys: [CacheKey] {
    tracks.map { CacheKey(server: server, url: $0.url, fileSize: $0.fileSize) }
  }
}

/// The pins, in the order they were made, kept in `pins.json` beside the cache index.
public struct PinList: Equatable, Sendable {
  public private(set) var pins: [Pin] = []

  public init(pins: [Pin] = []) { self.pins = pins }

  /// Adds `pin`, replacing one of the same kind and id (pinning again refreshes its tracks).
  public mutating func add(_ pin: Pin) {
    if let index = pins.firstIndex(where: { $0.kind == pin.kind && $0.id == pin.id && $0.server == pin.server }) {
      pins[index] = pin
    } else {
      pins.append(pin)
    }
  }

  /// Removes the pin; nil when there was none.
  public mutating func remove(kind: Pin.Kind, id: Int, server: String) -> Pin? {
    guard let index = pins.firstIndex(where: { $0.kind == kind && $0.id == id && $0.server == server }) else {
      return nil
    }
    return pins.remove(at: index)
  }

  /// Every pinned file, once.
  public var keys: Set<CacheKey> { Set(pins.flatMap(\.keys)) }

  /// Each pinned track once (a track in two pins is downloaded once), in pin order, with the
  /// server it is on.
  public var plannedTracks: [(key: CacheKey, track: QueueTrack, server: String)] {
    var seen: Set<CacheKey> = []
    var planned: [(key: CacheKey, track: QueueTrack, server: String)] = []
    for pin in pins {
      for (key, track) in zip(pin.keys, pin.tracks) where track.isDownloadable && seen.insert(key).inserted {
        planned.append((key, track, pin.server))
      }
    }
    return planned
  }

  // MARK: On disk: one pin a line (`JSONLines`)

  private static let layout = JSONLines(head: #"{"version":1,"pins":["#, tail: "]}")

  /// Where a cache folder keeps its pins.
  public static func path(in cacheFolder: String) -> String { cacheFolder + "/pins.json" }

  /// The list saved at `path`; a pin that cannot be read is left out.
  public static func load(from path: String) -> PinList? {
    guard let bytes = FileIO.read(path, limit: 64 << 20) else { return nil }
    var list = PinList()
    do {
      if try layout.forEachItem(in: bytes, { if let pin = Pin($0) { list.pins.append(pin) } }) == nil {
        list.pins = try JSONValue(parsing: bytes)["pins"]?.array?.compactMap(Pin.init) ?? []
      }
    } catch {
      return nil
    }
    return list
  }

  public func save(to path: String) throws {
    try FileIO.writeAtomically(path, Self.layout.document(pins.map(\.json.encoded)))
  }
}

extension Pin {
  var json: JSONValue {
    [
      "kind": .string(kind.rawValue), "id": .number(Double(id)), "title": .string(title), "server": .string(server),
      "tracks": .array(tracks.map(\.json)),
    ]
  }

  init?(_ item: JSONValue) {
    guard let kind = item["kind"]?.string.flatMap(Pin.Kind.init(rawValue:)), let id = item["id"]?.int,
      let server = item["server"]?.string
    else { return nil }
    let tracks = (item["tracks"]?.array ?? []).enumerated().compactMap { QueueTrack($1, index: $0) }
    self.init(kind: kind, id: id, title: item["title"]?.string ?? "", server: server, tracks: tracks)
  }
}

/// A pin as the player holds it between changes: what names it and its files, without its
/// tracks' records (those of cached tracks are in the cache's records; the whole list is in
/// `pins.json`, read again when a pin is added or removed).
public struct PinSummary: Equatable, Sendable {
  public var kind: Pin.Kind
  public var id: Int
  public var title: String
  public var server: String
  public var keys: [CacheKey]
  /// The sum of the sizes the server gave, and the tracks it gave none for.
  public var sizedBytes: Int
  public var unsized: [CacheKey]
  /// The covers of its tracks, each once, in order.
  public var coverIDs: [String]

  public init(_ pin: Pin) {
    kind = pin.kind
    id = pin.id
    title = pin.title
    server = pin.server
    keys = pin.keys
    sizedBytes = pin.tracks.reduce(0) { $0 + ($1.fileSize ?? 0) }
    unsized = zip(pin.keys, pin.tracks).compactMap { $1.fileSize == nil ? $0 : nil }
    var seen: Set<String> = []
    coverIDs = pin.tracks.compactMap(\.coverID).filter { seen.insert($0).inserted }
  }
}

/// The pins in memory: their summaries, and the tracks still to download (a pinned track leaves
/// memory once it is cached). What an idle player with gigabytes pinned holds is a few bytes a
/// track; which files are pinned, the cache store knows.
public struct PinnedMusic: Sendable {
  public private(set) var pins: [PinSummary] = []
  /// Pinned tracks not cached when last looked at, each once, in pin order.
  public private(set) var waiting: [(key: CacheKey, track: QueueTrack, server: String)] = []
  /// Every pin's covers, each once, sorted: made once, so a caller that keeps it can tell a change by
  /// the array's identity alone.
  public private(set) var coverIDs: [String] = []

  public init() {}

  public init(_ list: PinList, isCached: (CacheKey) -> Bool) {
    pins = list.pins.map(PinSummary.init)
    waiting = list.plannedTracks.filter { !isCached($0.key) }
    coverIDs = Set(pins.flatMap(\.coverIDs)).sorted()
  }

  /// Forgets the waiting tracks that are cached now.
  public mutating func dropCached(_ isCached: (CacheKey) -> Bool) {
    if waiting.contains(where: { isCached($0.key) }) { waiting.removeAll { isCached($0.key) } }
  }
}

/// How far a pin's download has come.
public struct PinProgress: Equatable, Sendable {
  public var pin: PinSummary
  public var cachedTracks: Int
  public var cachedBytes: Int
  /// The sum of the server's file sizes (a track without one counts once cached).
  public var totalBytes: Int

  public var isComplete: Bool { cachedTracks == pin.keys.count }

  public init(pin: PinSummary, isCached: (CacheKey) -> Int?) {
    self.pin = pin
    var tracks = 0
    var bytes = 0
    for key in pin.keys {
      guard let size = isCached(key) else { continue }
      tracks += 1
      bytes += size
    }
    let total = pin.unsized.reduce(pin.sizedBytes) { $0 + (isCached($1) ?? 0) }
    cachedTracks = tracks
    cachedBytes = bytes
    totalBytes = total
  }

  public var json: JSONValue {
    [
      "kind": .string(pin.kind.rawValue), "id": .number(Double(pin.id)), "title": .string(pin.title),
      "tracks": .number(Double(pin.keys.count)), "cached_tracks": .number(Double(cachedTracks)),
      "cached_bytes": .number(Double(cachedBytes)), "total_bytes": .number(Double(totalBytes)),
      "complete": .bool(isComplete), "coverid": pin.coverIDs.first.map { .string($0) } ?? .null,
    ]
  }
}
