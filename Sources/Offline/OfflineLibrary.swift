import LMSControl

/// What the cache holds, as a listener browses it: albums with their covers and tracks, by
/// artist, and a search. Built from the cache's records alone, so it needs no server; files
/// cached without a track record (taken in after a crash, or from a server that gave none) are
/// left out.
public struct OfflineLibrary: Sendable {
  public struct Track: Equatable, Sendable {
    public var key: CacheKey
    public var record: QueueTrack
    public var pinned: Bool
  }

  public struct Album: Equatable, Sendable {
    /// `a<album id>` when the server gave one, else `n<key of artist and title>`: stable while
    /// the cache holds it.
    public var id: String
    public var title: String
    public var artist: String
    public var coverID: String?
    /// By disc, then track number, then title.
    public var tracks: [Track]
  }

  /// By artist, then title (case aside).
  public private(set) var albums: [Album] = []
  private var albumIndex: [String: Int] = [:]
  private var trackIndex: [CacheKey: Track] = [:]

  public init(records: [CacheRecord], pinned: (CacheKey) -> Bool) {
    var grouped: [String: Album] = [:]
    for cached in records {
      guard let record = cached.track, !record.title.isEmpty else { continue }
      let track = Track(key: cached.key, record: record, pinned: pinned(cached.key))
      trackIndex[cached.key] = track
      let id =
        record.albumID.map { "a\($0)" }
        ?? "n" + CacheKey(server: "", url: record.artist + "\n" + record.album, fileSize: nil).value
      grouped[id, default: Album(id: id, title: record.album, artist: record.artist, coverID: nil, tracks: [])]
        .tracks.append(track)
    }
    albums = grouped.values.map { album in
      var album = album
      album.tracks.sort { a, b in
        let left = (a.record.disc ?? 1, a.record.trackNumber ?? Int.max, a.record.title)
        let right = (b.record.disc ?? 1, b.record.trackNumber ?? Int.max, b.record.title)
        return left < right
      }
      album.coverID = album.tracks.lazy.compactMap(\.record.coverID).first
      // An album's artist: its first track's (a compilation's first artist, as LMS lists it without one).
      album.artist = album.tracks.first?.record.artist ?? ""
      return album
    }.sorted {
      ($0.artist.lowercased(), $0.title.lowercased(), $0.id) < ($1.artist.lowercased(), $1.title.lowercased(), $1.id)
    }
    for (index, album) in albums.enumerated() { albumIndex[album.id] = index }
  }

  public var trackCount: Int { trackIndex.count }

  public func album(id: String) -> Album? { albumIndex[id].map { albums[$0] } }

  public func track(key: String) -> Track? { CacheKey(hex: key).flatMap { trackIndex[$0] } }

  /// Albums whose title or artist holds every word of `text`, and tracks whose title, artist or
  /// album does (case aside), at most `limit` of each.
  public func search(_ text: String, limit: Int = 50) -> (albums: [Album], tracks: [Track]) {
    let words = text.lowercased().split(whereSeparator: \.isWhitespace).map(String.init)
    guard !words.isEmpty else { return ([], []) }
    let matches = { (fields: String) in words.allSatisfy { fields.contains($0) } }
    let foundAlbums = albums.lazy.filter { matches(($0.title + "\n" + $0.artist).lowercased()) }.prefix(limit)
    var foundTracks: [Track] = []
    for album in albums {
      for track in album.tracks
      where matches((track.record.title + "\n" + track.record.artist + "\n" + track.record.album).lowercased()) {
        foundTracks.append(track)
        if foundTracks.count == limit { return (Array(foundAlbums), foundTracks) }
      }
    }
    return (Array(foundAlbums), foundTracks)
  }
}

extension OfflineLibrary.Album {
  /// The album as a list shows it: no tracks, their count.
  public var summary: JSONValue {
    [
      "id": .string(id), "title": .string(title), "artist": .string(artist),
      "coverid": coverID.map { .string($0) } ?? .null, "tracks": .number(Double(tracks.count)),
      "pinned": .bool(tracks.allSatisfy(\.pinned)),
    ]
  }

  public var json: JSONValue {
    guard case .object(var members) = summary else { return summary }
    members["tracks"] = .array(tracks.map(\.json))
    return .object(members)
  }
}

extension OfflineLibrary.Track {
  public var json: JSONValue {
    [
      "key": .string(key.value), "id": .number(Double(record.id)), "title": .string(record.title),
      "artist": .string(record.artist), "album": .string(record.album),
      "duration": record.duration.map { .number($0) } ?? .null,
      "tracknum": record.trackNumber.map { .number(Double($0)) } ?? .null,
      "coverid": record.coverID.map { .string($0) } ?? .null, "pinned": .bool(pinned),
    ]
  }
}
