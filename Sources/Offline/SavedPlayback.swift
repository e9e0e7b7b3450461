import LMSControl
import SlimConnection
import Support

/// What the player was playing, saved while it plays (the position every few seconds), so a player restarted with
/// no server in reach can resume from the cache where it was.
public struct SavedPlayback: Equatable, Sendable {
  public var server: String
  public var playlistTimestamp: Double?
  /// Queue index of the track being heard.
  public var index: Int
  /// Seconds into it.
  public var position: Double
  public var sampleRate: Int
  /// Tracks in the whole queue, to tell an edited queue from the same one on reconnect.
  public var trackCount: Int?
  /// The queue from the current track on.
  public var queue: [QueueTrack]
  /// The LMS sync group the player was in, and the addresses LMS had for its members: a member
  /// restarted while the server is away finds the others and falls in with them.
  public var group: SyncGroup?
  public var groupAddresses: [String: String] = [:]
  /// LMS's audio delay for this player in its group (`playDelay`, ms), kept by the group's clock.
  public var playDelayMilliseconds = 0
  /// Whose queue it is: the server's, or one the listener built with the server away.
  public var owner: QueueOwner = .server

  public enum QueueOwner: Equatable, Sendable {
    case server
    /// The whole queue is saved (it is the player's own), with the server's queue when the listener
    /// first edited (nil: the player had not heard the server), to tell at the return whether the
    /// server's was edited meanwhile.
    case listener(serverQueue: Queue?)
  }

  /// A queue as the server had it.
  public struct Queue: Equatable, Sendable {
    public var tracks: [QueueTrack]
    public var current: Int
    public var trackCount: Int?
    public var playlistTimestamp: Double?

    public init(tracks: [QueueTrack], current: Int, trackCount: Int?, playlistTimestamp: Double?) {
      self.tracks = tracks
      self.current = current
      self.trackCount = trackCount
      self.playlistTimestamp = playlistTimestamp
    }
  }

  public var json: JSONValue {
    var members: [String: JSONValue] = [
      "version": 1, "server": .string(server), "index": .number(Double(index)), "position": .number(position),
      "sample_rate": .number(Double(sampleRate)), "queue": .array(queue.map(\.json)),
    ]
    if let playlistTimestamp { members["playlist_timestamp"] = .number(playlistTimestamp) }
    if let trackCount { members["track_count"] = .number(Double(trackCount)) }
    if case .listener(let serverQueue) = owner {
      members["listeners_queue"] = ["server_queue": serverQueue.map(\.json) ?? .null]
    }
    if let group {
      members["group"] = [
        "master": .string(group.master), "slaves": .array(group.slaves.map(JSONValue.string)),
        "addresses": .object(groupAddresses.mapValues(JSONValue.string)),
        "play_delay_ms": .number(Double(playDelayMilliseconds)),
      ]
    }
    return .object(members)
  }

  public init(
    server: String, playlistTimestamp: Double?, index: Int, position: Double, sampleRate: Int,
    trackCount: Int? = nil, queue: [QueueTrack], group: SyncGroup? = nil, groupAddresses: [String: String] = [:],
    playDelayMilliseconds: Int = 0, owner: QueueOwner = .server
  ) {
    self.owner = owner
    self.server = server
    self.playlistTimestamp = playlistTimestamp
    self.index = index
    self.position = position
    self.sampleRate = sampleRate
    self.trackCount = trackCount
    self.queue = queue
    self.group = group
    self.groupAddresses = groupAddresses
    self.playDelayMilliseconds = playDelayMilliseconds
  }

  public init?(_ value: JSONValue) {
    guard let server = value["server"]?.string, let index = value["index"]?.int,
      let position = value["position"]?.double, let queue = value["queue"]?.array
    else { return nil }
    let group = value["group"].flatMap { group in
      SyncGroup(
        master: group["master"]?.string, slaves: group["slaves"]?.array?.compactMap(\.string).joined(separator: ","))
    }
    var addresses: [String: String] = [:]
    for (member, address) in value["group"]?["addresses"]?.object ?? [:] {
      if let address = address.string { addresses[member] = address }
    }
    self.init(
      server: server, playlistTimestamp: value["playlist_timestamp"]?.double, index: index, position: position,
      sampleRate: value["sample_rate"]?.int ?? 44100, trackCount: value["track_count"]?.int,
      queue: queue.compactMap { QueueTrack($0) }, group: group, groupAddresses: addresses,
      playDelayMilliseconds: value["group"]?["play_delay_ms"]?.int ?? 0,
      owner: value["listeners_queue"].map { .listener(serverQueue: $0["server_queue"].flatMap(Queue.init)) } ?? .server)
  }

  public static func load(from path: String) -> SavedPlayback? {
    guard let bytes = FileIO.read(path), let value = try? JSONValue(parsing: bytes) else { return nil }
    return SavedPlayback(value)
  }

  public func save(to path: String, durable: Bool = true) throws(FileIO.Failure) {
    try FileIO.writeAtomically(path, Array(json.encoded.utf8), durable: durable)
  }

  /// The same queue and track, only further into it.
  public func differsOnlyInPosition(from other: SavedPlayback) -> Bool {
    var moved = other
    moved.position = position
    return moved == self
  }
}

extension SavedPlayback.Queue {
  var json: JSONValue {
    var members: [String: JSONValue] = ["tracks": .array(tracks.map(\.json)), "current": .number(Double(current))]
    if let trackCount { members["track_count"] = .number(Double(trackCount)) }
    if let playlistTimestamp { members["playlist_timestamp"] = .number(playlistTimestamp) }
    return .object(members)
  }

  init?(_ value: JSONValue) {
    guard let tracks = value["tracks"]?.array, let current = value["current"]?.int else { return nil }
    self.init(
      tracks: tracks.compactMap { QueueTrack($0) }, current: current, trackCount: value["track_count"]?.int,
      playlistTimestamp: value["playlist_timestamp"]?.double)
  }
}
