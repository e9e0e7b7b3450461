import LMSControl
import Offline

/// What the control API can ask of the player.
public enum ControlCommand: Equatable, Sendable {
  case play
  case pause
  case toggle
  case next
  case previous
  case seek(seconds: Double)
  case volume(percent: Int)

  /// From `POST /api/<name>` with its parameters (query or JSON body); nil name = unknown route.
  public init?(name: String, parameters: [String: JSONValue]) throws(ControlError) {
    switch name {
    case "play": self = .play
    case "pause": self = .pause
    case "toggle": self = .toggle
    case "next": self = .next
    case "previous": self = .previous
    case "seek":
      guard let seconds = parameters["seconds"]?.double, seconds.isFinite, seconds >= 0 else {
        throw .badRequest("seek needs 'seconds', a number ≥ 0")
      }
      self = .seek(seconds: seconds)
    case "volume":
      guard let value = parameters["value"]?.int, (0...100).contains(value) else {
        throw .badRequest("volume needs 'value', an integer from 0 to 100")
      }
      self = .volume(percent: value)
    default:
      return nil
    }
  }

  /// The same command as LMS's CLI, for when the server is there and stays authoritative.
  public var lmsCommand: [JSONValue] {
    switch self {
    case .play: ["play"]
    case .pause: ["pause", "1"]
    case .toggle: ["pause"]
    case .next: ["playlist", "index", "+1"]
    case .previous: ["playlist", "index", "-1"]
    case .seek(let seconds): ["time", .number(seconds)]
    case .volume(let percent): ["mixer", "volume", .number(Double(percent))]
    }
  }
}

/// An API error with its HTTP status; the body is `{"error": message}`.
public enum ControlError: Error, Equatable, CustomStringConvertible {
  case badRequest(String)
  case unauthorized
  /// Refused whatever the token: a foreign `Host` or `Origin` (see `RequestGuard`).
  case forbidden(String)
  case notFound(String)
  /// A thing the request names that does not exist (404, with the message as given).
  case missing(String)
  case tooLarge(String)
  case unavailable(String)

  public var status: Int {
    switch self {
    case .badRequest: 400
    case .unauthorized: 401
    case .forbidden: 403
    case .notFound, .missing: 404
    case .tooLarge: 413
    case .unavailable: 503
    }
  }

  public var description: String {
    switch self {
    case .badRequest(let message): message
    case .unauthorized: "a valid token is required"
    case .forbidden(let why): why
    case .tooLarge(let what): what
    case .notFound(let what): "no such endpoint: \(what)"
    case .missing(let what): what
    case .unavailable(let why): why
    }
  }
}

/// `POST /api/return` and `POST /api/stay-offline`: the listener's answer when the server is back
/// (`--return-to-server ask`).
public enum ServerChoice: String, Equatable, Sendable {
  case returnToServer = "return"
  case stayOffline = "stay-offline"
}

/// `POST /api/pin` and `POST /api/unpin`: what to keep on the device, or to keep no longer.
public enum PinCommand: Equatable, Sendable {
  /// An album, playlist or track by id; without one, the album or track heard now, or a
  /// playlist by name.
  case pin(Pin.Kind, id: Int?, name: String?)
  case unpin(Pin.Kind, id: Int)

  public init?(name: String, parameters: [String: JSONValue]) throws(ControlError) {
    guard name == "pin" || name == "unpin" else { return nil }
    let kinds = Pin.Kind.allCases.map(\.rawValue).joined(separator: ", ")
    guard let kind = parameters["kind"]?.string.flatMap(Pin.Kind.init(rawValue:)) else {
      throw .badRequest("\(name) needs 'kind': one of \(kinds)")
    }
    var id: Int?
    if let given = parameters["id"] {
      guard let value = given.double, value == value.rounded(), value >= 1, value < 9e15 else {
        throw .badRequest("'id' must be a positive integer")
      }
      id = Int(value)
    }
    let title = parameters["name"]?.string.flatMap { $0.isEmpty ? nil : $0 }
    if name == "unpin" {
      guard let id else { throw .badRequest("unpin needs 'id'") }
      self = .unpin(kind, id: id)
    } else {
      if title != nil && kind != .playlist { throw .badRequest("'name' names playlists only") }
      self = .pin(kind, id: id, name: title)
    }
  }
}

/// `POST /api/queue/<play|add|remove|move>`: the listener's queue edits, with library tracks by
/// their cache key or a library album by its id.
public enum QueueCommand: Equatable, Sendable {
  public enum Music: Equatable, Sendable {
    case album(String)
    case tracks([String])
  }

  /// The queue becomes this music, from its entry `start`.
  case play(Music, start: Int)
  case add(Music)
  case remove(index: Int)
  case move(from: Int, to: Int)

  public init?(name: String, parameters: [String: JSONValue]) throws(ControlError) {
    let entry = { (key: String) throws(ControlError) -> Int in
      guard let value = parameters[key]?.double, value == value.rounded(), value >= 0, value < 1e9 else {
        throw .badRequest("\(name) needs '\(key)', a queue entry (from 0)")
      }
      return Int(value)
    }
    let music = { () throws(ControlError) -> Music in
      if let album = parameters["album"]?.string, !album.isEmpty { return .album(album) }
      let keys = (parameters["tracks"]?.array ?? []).compactMap(\.string)
      guard !keys.isEmpty, keys.count == parameters["tracks"]?.array?.count else {
        throw .badRequest("\(name) needs 'album' (an album id) or 'tracks' (track keys)")
      }
      return .tracks(keys)
    }
    switch name {
    case "queue/play": self = .play(try music(), start: parameters["start"] == nil ? 0 : try entry("start"))
    case "queue/add": self = .add(try music())
    case "queue/remove": self = .remove(index: try entry("index"))
    case "queue/move": self = .move(from: try entry("from"), to: try entry("to"))
    default: return nil
    }
  }
}
