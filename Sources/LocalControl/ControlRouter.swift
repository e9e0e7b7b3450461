import LMSControl
import NIOCore

/// The player as the control API sees it. Calls arrive on the control event loop.
public protocol ControlTarget: AnyObject {
  func status() -> JSONValue
  func perform(_ command: ControlCommand) -> EventLoopFuture<Void>
  /// The current track's cover (JPEG/PNG bytes), nil when there is none.
  func currentArtwork() -> EventLoopFuture<[UInt8]?>
  /// A cover by LMS cover id.
  func artwork(coverID: String) -> EventLoopFuture<[UInt8]?>
  /// Once, on the loop, when the API starts: work the target does meanwhile (artwork prefetch).
  func startBackgroundWork()
  /// Completes once `status()` has something current to say (a first poll after a quiet spell).
  func statusReady(on loop: any EventLoop) -> EventLoopFuture<Void>
  /// `GET /api/pins`: each pin and how far its download has come.
  func pins() -> JSONValue
  /// Pins or unpins; answers with the pin.
  func perform(_ command: PinCommand, on loop: any EventLoop) -> EventLoopFuture<JSONValue>
  /// `GET /api/library`: every album (`?album=ID`: one with its tracks; `?q=text`: a search).
  func library(query: [String: String]) -> JSONValue?
  func perform(_ command: QueueCommand, on loop: any EventLoop) -> EventLoopFuture<Void>
  func choose(_ choice: ServerChoice)
}

extension ControlTarget {
  public func startBackgroundWork() {}
  public func statusReady(on loop: any EventLoop) -> EventLoopFuture<Void> { loop.makeSucceededVoidFuture() }
  public func pins() -> JSONValue { ["pins": []] }
  public func perform(_ command: PinCommand, on loop: any EventLoop) -> EventLoopFuture<JSONValue> {
    loop.makeFailedFuture(ControlError.unavailable("this player keeps no pins"))
  }
  public func library(query: [String: String]) -> JSONValue? { nil }
  public func choose(_ choice: ServerChoice) {}
  public func perform(_ command: QueueCommand, on loop: any EventLoop) -> EventLoopFuture<Void> {
    loop.makeFailedFuture(ControlError.unavailable("this player has no library"))
  }
}

/// One parsed request.
public struct ControlRequest: Equatable, Sendable {
  public var method: String
  public var path: String
  public var query: [String: String]
  public var body: [UInt8]
  public var authorization: String?

  public init(method: String, uri: String, body: [UInt8] = [], authorization: String? = nil) {
    self.method = method
    let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
    path = String(parts.first ?? "")
    var query: [String: String] = [:]
    if parts.count > 1 {
      for pair in parts[1].split(separator: "&") {
        let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        query[String(kv[0])] = kv.count > 1 ? String(kv[1]) : ""
      }
    }
    self.query = query
    self.body = body
    self.authorization = authorization
  }
}

/// An answer: status and a JSON body.
public struct ControlResponse: Equatable, Sendable {
  public var status: Int
  public var body: JSONValue

  public init(status: Int, body: JSONValue) {
    self.status = status
    self.body = body
  }

  public init(_ error: ControlError) {
    self.init(status: error.status, body: ["error": .string(error.description)])
  }
}

/// Maps requests to the target: `GET /api/status`, `POST /api/<command>`. Pure routing and
/// validation, so every bad request gets a 4xx with a message, never a crash.
public struct ControlRouter: Sendable {
  public let token: String?

  public init(token: String?) { self.token = token }

  public func route(_ request: ControlRequest, to target: any ControlTarget, on loop: any EventLoop)
    -> EventLoopFuture<ControlResponse>
  {
    do throws(ControlError) {
      try authorize(request)
      switch (request.method, request.path) {
      case ("GET", "/api/status"):
        return target.statusReady(on: loop).assumeIsolated().map { ControlResponse(status: 200, body: target.status()) }
          .nonisolated()
      case ("GET", "/api/pins"):
        return loop.makeSucceededFuture(ControlResponse(status: 200, body: target.pins()))
      case ("GET", "/api/library"):
        guard let library = target.library(query: request.query.mapValues(Self.percentDecoded)) else {
          throw .missing(request.query["album"].map { "no album \($0) in the library" } ?? "this player has no library")
        }
        return loop.makeSucceededFuture(ControlResponse(status: 200, body: library))
      case ("POST", let path) where path.hasPrefix("/api/"):
        let name = String(path.dropFirst(5))
        if let choice = ServerChoice(rawValue: name) {
          target.choose(choice)
          return loop.makeSucceededFuture(ControlResponse(status: 200, body: ["ok": true]))
        }
        if let command = try QueueCommand(name: name, parameters: parameters(of: request)) {
          return target.perform(command, on: loop).map { ControlResponse(status: 200, body: ["ok": true]) }
            .flatMapErrorThrowing { error in ControlResponse((error as? ControlError) ?? .unavailable("\(error)")) }
        }
        if let command = try PinCommand(name: name, parameters: parameters(of: request)) {
          return target.perform(command, on: loop).map { ControlResponse(status: 200, body: $0) }
            .flatMapErrorThrowing { error in ControlResponse((error as? ControlError) ?? .unavailable("\(error)")) }
        }
        guard let command = try ControlCommand(name: name, parameters: parameters(of: request)) else {
          throw .notFound(request.path)
        }
        return target.perform(command).map { ControlResponse(status: 200, body: ["ok": true]) }
          .flatMapErrorThrowing { error in
            ControlResponse((error as? ControlError) ?? .unavailable("\(error)"))
          }
      case (_, let path) where path.hasPrefix("/api/"):
        throw .notFound("\(request.method) \(path)")
      default:
        throw .notFound(request.path)
      }
    } catch {
      return loop.makeSucceededFuture(ControlResponse(error))
    }
  }

  func authorize(_ request: ControlRequest) throws(ControlError) {
    guard let token else { return }
    let bearer = request.authorization.flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
    // Both candidates are compared, whichever matches, so the time taken says nothing.
    let byHeader = Self.constantTimeEqual(bearer ?? "", token)
    let byQuery = Self.constantTimeEqual(request.query["token"] ?? "", token)
    if byHeader || byQuery { return }
    throw .unauthorized
  }

  /// Equal strings, in a time that depends on their lengths only, not on where they differ: a
  /// token cannot be guessed a byte at a time from response times.
  static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
    let x = Array(a.utf8)
    let y = Array(b.utf8)
    var difference = UInt8(truncatingIfNeeded: x.count ^ y.count)
    difference |= x.count == y.count ? 0 : 1
    for index in 0..<max(x.count, y.count) {
      let left = index < x.count ? x[index] : 0
      let right = index < y.count ? y[index] : 0
      difference |= left ^ right
    }
    return difference == 0
  }

  /// `%xx` escapes and `+` (a form's space) decoded; a malformed escape is kept as it is.
  static func percentDecoded(_ text: String) -> String {
    var bytes: [UInt8] = []
    var input = Array(text.utf8)[...]
    while let byte = input.popFirst() {
      if byte == UInt8(ascii: "%"), input.count >= 2,
        let value = UInt8(String(decoding: input.prefix(2), as: UTF8.self), radix: 16)
      {
        bytes.append(value)
        input = input.dropFirst(2)
      } else {
        bytes.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
      }
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// Query parameters, overridden by a JSON object body.
  private func parameters(of request: ControlRequest) throws(ControlError) -> [String: JSONValue] {
    var values = request.query.mapValues { JSONValue.string($0) }
    if !request.body.isEmpty {
      guard let object = (try? JSONValue(parsing: request.body))?.object else {
        throw .badRequest("the body must be a JSON object")
      }
      values.merge(object) { _, body in body }
    }
    return values
  }
}
