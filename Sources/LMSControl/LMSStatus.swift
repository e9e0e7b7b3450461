/// One entry of LMS's `playlist_loop`, or a library track (`titles`, `playlists tracks`).
public struct QueueTrack: Equatable, Sendable {
  public var index: Int
  /// LMS's track id: positive for library tracks, negative (volatile) for remote streams.
  public var id: Int
  public var title: String
  public var artist: String
  public var album: String
  public var duration: Double?
  public var url: String
  /// LMS's content type (`flc`, `mp3`, `ops`, `wav`, `aif`…).
  public var type: String
  public var fileSize: Int?
  public var coverID: String?
  public var isRemote: Bool
  public var albumID: Int?
  public var trackNumber: Int?
  public var disc: Int?

  public init(
    index: Int, id: Int, title: String, artist: String = "", album: String = "", duration: Double? = nil,
    url: String, type: String, fileSize: Int? = nil, coverID: String? = nil, isRemote: Bool = false,
    albumID: Int? = nil, trackNumber: Int? = nil, disc: Int? = nil
  ) {
    self.index = index
    self.id = id
    self.title = title
    self.artist = artist
    self.album = album
    self.duration = duration
    self.url = url
    self.type = type
    self.fileSize = fileSize
    self.coverID = coverID
    self.isRemote = isRemote
    self.albumID = albumID
    self.trackNumber = trackNumber
    self.disc = disc
  }

  /// A library file the server can hand over through `/music/<id>/download`.
  public var isDownloadable: Bool { id > 0 && !isRemote && !url.hasPrefix("http") }

  /// An entry of `playlist_loop` (or of a saved queue, which uses the same keys); a library
  /// track (no `playlist index`) takes `index`, its place in the list it came in.
  public init?(_ item: JSONValue, index: Int? = nil) {
    guard let index = item["playlist index"]?.int ?? index, let id = item["id"]?.int else { return nil }
    self.init(
      index: index, id: id, title: item["title"]?.string ?? "", artist: item["artist"]?.string ?? "",
      album: item["album"]?.string ?? "", duration: item["duration"]?.double, url: item["url"]?.string ?? "",
      type: item["type"]?.string ?? "", fileSize: item["filesize"]?.int, coverID: item["coverid"]?.string,
      isRemote: item["remote"]?.bool ?? false, albumID: item["album_id"]?.int, trackNumber: item["tracknum"]?.int,
      disc: item["disc"]?.int)
  }
}

extension QueueTrack {
  /// The `playlist_loop` form, for saving a queue snapshot or a cache record.
  public var json: JSONValue {
    var members: [String: JSONValue] = [
      "playlist index": .number(Double(index)), "id": .number(Double(id)), "title": .string(title),
      "artist": .string(artist), "album": .string(album), "url": .string(url), "type": .string(type),
      "remote": .number(isRemote ? 1 : 0),
    ]
    if let duration { members["duration"] = .number(duration) }
    if let fileSize { members["filesize"] = .number(Double(fileSize)) }
    if let coverID { members["coverid"] = .string(coverID) }
    if let albumID { members["album_id"] = .number(Double(albumID)) }
    if let trackNumber { members["tracknum"] = .number(Double(trackNumber)) }
    if let disc { members["disc"] = .number(Double(disc)) }
    return .object(members)
  }

  /// The tags that fill every field: a artist, l album, e album id, t track number, i disc,
  /// d duration, c cover id, u url, f file size, o type, x remote.
  public static let tags = "tags:aletidcufox"
}

/// The reply to `status - N tags:…`, decoded leniently.
public struct LMSStatus: Equatable, Sendable {
  public enum Mode: String, Sendable {
    case play, pause, stop
  }

  /// LMS's `playlist repeat`: what follows the end of a track.
  public enum RepeatMode: Int, Sendable {
    case off = 0
    case track = 1
    case queue = 2
  }

  public var mode: Mode
  /// Seconds into the current track (LMS: start offset + the player's elapsed).
  public var time: Double
  public var duration: Double?
  public var currentIndex: Int?
  /// Changes whenever the queue is edited.
  public var playlistTimestamp: Double?
  public var trackCount: Int
  public var volume: Int?
  public var isPlayerConnected: Bool
  /// From the current track on (`status -`), in queue order.
  public var tracks: [QueueTrack]
  public var repeatMode: RepeatMode
  /// The LMS sync group the player is in, if any.
  public var syncGroup: SyncGroup?

  public init(
    mode: Mode, time: Double = 0, duration: Double? = nil, currentIndex: Int? = nil,
    playlistTimestamp: Double? = nil, trackCount: Int = 0, volume: Int? = nil, isPlayerConnected: Bool = true,
    tracks: [QueueTrack] = [], repeatMode: RepeatMode = .off, syncGroup: SyncGroup? = nil
  ) {
    self.mode = mode
    self.time = time
    self.duration = duration
    self.currentIndex = currentIndex
    self.playlistTimestamp = playlistTimestamp
    self.trackCount = trackCount
    self.volume = volume
    self.isPlayerConnected = isPlayerConnected
    self.tracks = tracks
    self.repeatMode = repeatMode
    self.syncGroup = syncGroup
  }

  public init(result: JSONValue) {
    let tracks = (result["playlist_loop"]?.array ?? []).compactMap { QueueTrack($0) }
    self.init(
      mode: result["mode"]?.string.flatMap(Mode.init(rawValue:)) ?? .stop,
      time: result["time"]?.double ?? 0,
      duration: result["duration"]?.double,
      currentIndex: result["playlist_cur_index"]?.int,
      playlistTimestamp: result["playlist_timestamp"]?.double,
      trackCount: result["playlist_tracks"]?.int ?? tracks.count,
      volume: result["mixer volume"]?.int,
      isPlayerConnected: result["player_connected"]?.bool ?? true,
      tracks: tracks, repeatMode: result["playlist repeat"]?.int.flatMap(RepeatMode.init(rawValue:)) ?? .off,
      syncGroup: SyncGroup(master: result["sync_master"]?.string, slaves: result["sync_slaves"]?.string))
  }

  public var currentTrack: QueueTrack? { tracks.first { $0.index == currentIndex } }

  /// Equal but for the time into the current track (which moves while it plays).
  public func equalsIgnoringTime(_ other: LMSStatus) -> Bool {
    var copy = other
    copy.time = time
    return self == copy
  }

  /// The tags the poller asks for: `QueueTrack.tags` and K, the artwork URL.
  public static let tags = QueueTrack.tags + "K"
}

/// An LMS sync group as a member's `status` shows it: the master (whose queue the group plays and whose
/// reports set the group's time) and the other members, by MAC address in LMS's lower-case form.
public struct SyncGroup: Equatable, Sendable {
  public var master: String
  public var slaves: [String]

  public init(master: String, slaves: [String]) {
    self.master = master
    self.slaves = slaves
  }

  /// From `sync_master` and `sync_slaves` (comma-separated); nil when the player is not synced.
  public init?(master: String?, slaves: String?) {
    guard let master = master.map(Self.normalized), !master.isEmpty else { return nil }
    let others = (slaves ?? "").split(separator: ",").map { Self.normalized(String($0)) }
    self.init(master: master, slaves: others.filter { !$0.isEmpty && $0 != master })
  }

  /// Every member, the master first.
  public var members: [String] { [master] + slaves }

  public func contains(_ mac: String) -> Bool { members.contains(Self.normalized(mac)) }

  static func normalized(_ mac: String) -> String {
    mac.lowercased().filter { !$0.isWhitespace }
  }
}
