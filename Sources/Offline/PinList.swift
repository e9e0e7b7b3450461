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

  // MARK: On disk

  public var json: JSONValue {
    [
      "version": 1,
      "pins": .array(
        pins.map { pin -> JSONValue in
          [
            "kind": .string(pin.kind.rawValue), "id": .number(Double(pin.id)), "title": .string(pin.title),
            "server": .string(pin.server), "tracks": .array(pin.tracks.map(\.json)),
          ]
        }),
    ]
  }

  /// From `json`; a pin that cannot be read is left out.
  public init(json: JSONValue) {
    pins = (json["pins"]?.array ?? []).compactMap { item in
      guard let kind = item["kind"]?.string.flatMap(Pin.Kind.init(rawValue:)), let id = item["id"]?.int,
        let server = item["server"]?.string
      else { return nil }
      let tracks = (item["tracks"]?.array ?? []).enumerated().compactMap { QueueTrack($1, index: $0) }
      return Pin(kind: kind, id: id, title: item["title"]?.string ?? "", server: server, tracks: tracks)
    }
  }

  /// Where a cache folder keeps its pins.
  public static func path(in cacheFolder: String) -> String { cacheFolder + "/pins.json" }

  public static func load(from path: String) -> PinList? {
    guard let bytes = FileIO.read(path, limit: 64 << 20), let json = try? JSONValue(parsing: bytes) else {
      return nil
    }
    return PinList(json: json)
  }

  public func save(to path: String) throws {
    try FileIO.writeAtomically(path, Array(json.encoded.utf8))
  }
}

/// How far a pin's download has come.
public struct PinProgress: Equatable, Sendable {
  public var pin: Pin
  public var cachedTracks: Int
  public var cachedBytes: Int
  /// The sum of the server's file sizes (a track without one counts once cached).
  public var totalBytes: Int

  public var isComplete: Bool { cachedTracks == pin.tracks.count }

  public init(pin: Pin, isCached: (CacheKey) -> Int?) {
    self.pin = pin
    var tracks = 0
    var bytes = 0
    var total = 0
    for (key, track) in zip(pin.keys, pin.tracks) {
      let size = isCached(key)
      if let size {
        tracks += 1
        bytes += size
      }
      total += track.fileSize ?? size ?? 0
    }
    cachedTracks = tracks
    cachedBytes = bytes
    totalBytes = total
  }

  public var json: JSONValue {
    [
      "kind": .string(pin.kind.rawValue), "id": .number(Double(pin.id)), "title": .string(pin.title),
      "tracks": .number(Double(pin.tracks.count)), "cached_tracks": .number(Double(cachedTracks)),
      "cached_bytes": .number(Double(cachedBytes)), "total_bytes": .number(Double(totalBytes)),
      "complete": .bool(isComplete),
      "coverid": pin.tracks.first?.coverID.map { .string($0) } ?? .null,
    ]
  }
}
