import LMSControl
import NIOCore
import NIOHTTP1
import NIOPosix
import SlimConnection

#if canImport(Glibc)
  import Glibc
#endif

/// `slimplay ctl …`: talks to a running player's local control API.
public struct ControlClientCommand: RunnableCommand {
  public static let name = "ctl"
  public static let abstract = "Control a running slimplay through its local API."
  public static let discussion = """
    Actions: status, play, pause, toggle, next, previous, seek SECONDS, volume 0-100;
    pin album|track [ID] (the one playing without an ID), pin playlist ID|NAME,
    unpin album|playlist|track ID, pins (each pin and how much of it is on the device).
    Online the player passes commands to the server; offline it applies them itself.
    """
  public static let usage =
    "slimplay ctl <action> [<value>] [<id>] [--api <addr:port>] [--token <token>] [--json]"

  public static var positionals: [CommandPositional<ControlClientCommand>] {
    [
      CommandPositional(
        "action", help: "status | play | pause | toggle | next | previous | seek | volume | pin | unpin | pins",
        required: true, \.action),
      CommandPositional(
        "value", help: "Seconds for seek, 0-100 for volume; album, playlist or track for pin and unpin.",
        required: false, \.value),
      CommandPositional(
        "id", help: "What to pin or unpin: an id (or a playlist's name).", required: false, \.target),
    ]
  }

  public static var options: [CommandOption<ControlClientCommand>] {
    [
      .value(
        "--api", valueName: "addr:port", help: "Where the player's control API listens (its --control).",
        .text(\.api)),
      .value("--token", valueName: "token", help: "The player's --control-token.", .optionalText(\.token)),
      .flag("--json", help: "Print the API's JSON reply as is.", \.json),
    ]
  }

  var action: String?
  var value: String?
  var target: String?
  var api = "127.0.0.1:9393"
  var token: String?
  var json = false

  public init() {}

  public mutating func validate() throws {
    let known = ["status", "play", "pause", "toggle", "next", "previous", "seek", "volume", "pin", "unpin", "pins"]
    let action = action ?? ""
    guard known.contains(action) else { throw UsageError("unknown action '\(action)'") }
    if action == "seek" || action == "volume" {
      guard let value, Double(value) != nil else { throw UsageError("\(action) needs a number") }
    }
    if action == "pin" || action == "unpin" {
      guard let value, ["album", "playlist", "track"].contains(value) else {
        throw UsageError("\(action) needs what: album, playlist or track")
      }
      if action == "unpin" || value == "playlist" {
        guard target != nil else {
          throw UsageError("\(action) \(value) needs an id\(value == "playlist" ? " or a name" : "")")
        }
      }
      if let target, value != "playlist", Int(target) == nil {
        throw UsageError("\(action) \(value): '\(target)' is not an id")
      }
    }
    guard ServerAddress(parsing: api) != nil else { throw UsageError("invalid --api '\(api)'") }
  }

  public func run() throws {
    let action = action ?? "status"  // validated: always given
    let address = ServerAddress(parsing: api)!
    var body: [UInt8] = []
    switch action {
    case "seek": body = Array(JSONValue.object(["seconds": .number(Double(value!)!)]).encoded.utf8)
    case "volume": body = Array(JSONValue.object(["value": .number(Double(value!)!.rounded())]).encoded.utf8)
    case "pin", "unpin":
      var parameters: [String: JSONValue] = ["kind": .string(value!)]
      if let target {
        parameters[Int(target) == nil ? "name" : "id"] = Int(target).map { .number(Double($0)) } ?? .string(target)
      }
      body = Array(JSONValue.object(parameters).encoded.utf8)
    default: break
    }
    let reads = action == "status" || action == "pins"
    let spec = HTTPRequestSpec(
      method: reads ? .GET : .POST, host: address.host, port: address.port, path: "/api/\(action)",
      headers: token.map { [("Authorization", "Bearer \($0)")] } ?? [], body: body)
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    defer { try? group.syncShutdownGracefully() }
    let promise = group.next().makePromise(of: (Int, [UInt8]).self)
    let sink = CollectingSink(limit: 1 << 20, requiresOK: false) { result in
      switch result {
      case .success(let (head, body)): promise.succeed((Int(head.status.code), body))
      case .failure(let error): promise.fail(error)
      }
    }
    startHTTPExchange(spec, on: group.next(), sink: sink)
    let (status, bytes): (Int, [UInt8])
    do {
      (status, bytes) = try promise.futureResult.wait()
    } catch {
      printError("error: no player answers on \(api): \(error)")
      throw ExitStatus(3)
    }
    let reply = (try? JSONValue(parsing: bytes)) ?? .null
    if json {
      print(String(decoding: bytes, as: UTF8.self), terminator: "")
    } else if status != 200 {
      printError("error: \(reply["error"]?.string ?? "HTTP \(status)")")
    } else if action == "status" {
      print(Self.describe(reply))
    } else if action == "pins" {
      print(Self.describePins(reply["pins"]?.array ?? []))
    } else if action == "pin" {
      print(Self.describePins([reply]))
    } else {
      print("ok")
    }
    if status != 200 { throw ExitStatus.failure }
  }

  /// Two lines and the queue, for people.
  static func describe(_ status: JSONValue) -> String {
    var lines: [String] = []
    let state = status["state"]?.string ?? "?"
    let playing = status["playing"]?.bool == true ? "playing" : "stopped or paused"
    let volume = status["volume"]?.int.map { ", volume \($0)" } ?? ""
    lines.append("\(state), \(playing)\(volume)")
    if let now = status["now_playing"], let title = now["title"]?.string {
      let artist = now["artist"]?.string.map { $0.isEmpty ? "" : " - \($0)" } ?? ""
      let position = status["position"]?.double.map(clock) ?? "?"
      let duration = now["duration"]?.double.map(clock) ?? "?"
      lines.append("now: \(title)\(artist)  \(position) / \(duration)")
    }
    for track in status["queue"]?.array ?? [] {
      let index = (track["index"]?.int ?? 0) + 1
      let mark = track["cached"]?.bool == true ? "cached" : "      "
      lines.append("  \(index). [\(mark)] \(track["title"]?.string ?? "")")
    }
    return lines.joined(separator: "\n")
  }

  /// One line a pin: what it is and how much of it is on the device.
  static func describePins(_ pins: [JSONValue]) -> String {
    guard !pins.isEmpty else { return "nothing pinned" }
    return pins.map { pin in
      let megabytes = { (bytes: Int?) -> String in
        let tenths = ((bytes ?? 0) * 10 + 524_288) / 1_048_576
        return "\(tenths / 10).\(tenths % 10)"
      }
      let kind = pin["kind"]?.string ?? "?"
      let id = pin["id"]?.int.map(String.init) ?? "?"
      return
        "\(kind) \(id) '\(pin["title"]?.string ?? "")': \(pin["cached_tracks"]?.int ?? 0)/\(pin["tracks"]?.int ?? 0) tracks, "
        + "\(megabytes(pin["cached_bytes"]?.int)) of \(megabytes(pin["total_bytes"]?.int)) MB"
    }.joined(separator: "\n")
  }

  static func clock(_ seconds: Double) -> String {
    let total = Int(seconds)
    let rest = total % 60
    return "\(total / 60):\(rest < 10 ? "0" : "")\(rest)"
  }
}

private func printError(_ text: String) {
  let line = Array((text + "\n").utf8)
  _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}
