import LMSControl

/// What the server holds under a pin: the JSON-RPC query for its tracks, and the reading of the
/// reply. LMS 7.9.1 and 8.3.0 answer alike (`titles_loop`, `playlisttracks_loop`).
public enum PinResolver {
  /// The longest album or playlist a pin takes in.
  static let trackLimit = 5000

  public static func query(_ kind: Pin.Kind, id: Int) -> [JSONValue] {
    let limit = JSONValue.number(Double(trackLimit))
    return switch kind {
    case .album: ["titles", 0, limit, .string("album_id:\(id)"), "sort:tracknum", .string(QueueTrack.tags)]
    case .playlist: ["playlists", "tracks", 0, limit, .string("playlist_id:\(id)"), .string(QueueTrack.tags)]
    case .track: ["titles", 0, 1, .string("track_id:\(id)"), .string(QueueTrack.tags)]
    }
  }

  /// The pin the reply describes; nil when the server knows nothing by that id.
  public static func pin(_ kind: Pin.Kind, id: Int, server: String, reply: JSONValue) -> Pin? {
    let loop = kind == .playlist ? "playlisttracks_loop" : "titles_loop"
    var tracks = (reply[loop]?.array ?? []).enumerated().compactMap { QueueTrack($1, index: $0) }
    // A playlist's entries carry their place; a `titles` list is in the order asked for.
    for index in tracks.indices { tracks[index].index = index }
    guard let first = tracks.first else { return nil }
    let title =
      switch kind {
      case .album: first.album
      case .playlist: reply["__playlistTitle"]?.string ?? "Playlist \(id)"
      case .track: first.title
      }
    return Pin(kind: kind, id: id, title: title, server: server, tracks: tracks)
  }

  /// `playlists 0 N search:name`: the id of the saved playlist called `name` (case aside).
  public static let playlistsQuery: [JSONValue] = ["playlists", 0, 1000]

  public static func playlistID(named name: String, in reply: JSONValue) -> Int? {
    let wanted = name.lowercased()
    return (reply["playlists_loop"]?.array ?? []).first { $0["playlist"]?.string?.lowercased() == wanted }?["id"]?.int
  }
}
