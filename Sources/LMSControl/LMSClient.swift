import Logging
import NIOCore
import NIOHTTP1

/// Where LMS's HTTP side is and how to log in.
public struct LMSEndpoint: Equatable, Sendable {
  public var host: String
  public var port: Int
  public var credentials: Credentials?

  public struct Credentials: Equatable, Sendable {
    public var user: String
    public var password: String

    public init(user: String, password: String) {
      self.user = user
      self.password = password
    }

    var authorization: String { "Basic " + Base64.encode(Array("\(user):\(password)".utf8)) }
  }

  public init(host: String, port: Int, credentials: Credentials? = nil) {
    self.host = host
    self.port = port
    self.credentials = credentials
  }

  /// Headers every request to LMS carries (Basic auth covers every path when enabled).
  public var headers: [(String, String)] {
    credentials.map { [("Authorization", $0.authorization)] } ?? []
  }

  /// Identifies the server in cache keys: the same track id means different files on two servers.
  public var identity: String { "\(host):\(port)" }
}

/// Why a JSON-RPC call failed.
public enum LMSError: Error, Equatable, CustomStringConvertible {
  case transport(HTTPExchangeError)
  case badReply(String)
  case server(String)

  public var description: String {
    switch self {
    case .transport(let error): "\(error)"
    case .badReply(let reason): "unreadable reply: \(reason)"
    case .server(let message): "server error: \(message)"
    }
  }
}

/// LMS's JSON-RPC (`POST /jsonrpc.js`, `slim.request`), one call at a time over a kept-alive
/// connection. Every call has a deadline: LMS hangs on some requests and closes the socket on a
/// bad command.
public final class LMSClient: @unchecked Sendable {
  public let eventLoop: any EventLoop
  public let playerID: String
  private let endpointSource: @Sendable () -> LMSEndpoint?
  private let timeout: TimeAmount
  private var nextID = 1
  /// Every call goes over one kept-alive connection; only touched on `eventLoop`.
  private let connection: KeptAliveConnection

  /// `endpoint` is asked on every call: the server may change (`serv`, rediscovery).
  public init(
    eventLoop: any EventLoop, playerID: String, timeout: TimeAmount = .seconds(5),
    endpoint: @escaping @Sendable () -> LMSEndpoint?
  ) {
    self.eventLoop = eventLoop
    self.playerID = playerID
    self.timeout = timeout
    self.endpointSource = endpoint
    self.connection = KeptAliveConnection(eventLoop: eventLoop)
  }

  /// Closes the kept connection (shutdown); calls still queued fail.
  public func close() {
    let connection = UncheckedSendableBox(self.connection)
    eventLoop.execute { connection.value.close() }
  }

  public var endpoint: LMSEndpoint? { endpointSource() }

  /// Sends one command for this player (`asPlayer` false: for the server alone, which LMS answers
  /// whether or not it knows the player); succeeds with the reply's `result` object.
  public func request(_ command: [JSONValue], asPlayer: Bool = true) -> EventLoopFuture<JSONValue> {
    let promise = eventLoop.makePromise(of: JSONValue.self)
    guard let endpoint = endpointSource() else {
      promise.fail(LMSError.transport(.cannotConnect("no server")))
      return promise.futureResult
    }
    let id: Int = eventLoop.inEventLoop ? takeID() : 1
    let body: JSONValue = [
      "id": .number(Double(id)), "method": "slim.request",
      "params": [.string(asPlayer ? playerID : ""), .array(command)],
    ]
    let spec = HTTPRequestSpec(
      method: .POST, host: endpoint.host, port: endpoint.port, path: "/jsonrpc.js",
      headers: endpoint.headers + [("Content-Type", "application/json")], body: Array(body.encoded.utf8),
      deadline: timeout, idleTimeout: timeout)
    // The connection is only ever used on `eventLoop`.
    let connection = UncheckedSendableBox(self.connection)
    eventLoop.execute {
      connection.value.send(spec, bodyLimit: 4 << 20) { result in
        switch result {
        case .failure(let error):
          promise.fail(LMSError.transport(error))
        case .success(let (head, _)) where head.status != .ok:
          promise.fail(LMSError.transport(.badStatus(Int(head.status.code))))
        case .success(let (_, bytes)):
          do {
            promise.succeed(try Self.result(of: bytes))
          } catch {
            promise.fail(error)
          }
        }
      }
    }
    return promise.futureResult
  }

  private func takeID() -> Int {
    defer { nextID += 1 }
    return nextID
  }

  static func result(of bytes: [UInt8]) throws(LMSError) -> JSONValue {
    let reply: JSONValue
    do {
      reply = try JSONValue(parsing: bytes)
    } catch {
      throw .badReply("\(error)")
    }
    if let error = reply["error"], error != .null {
      throw .server(error["message"]?.string ?? error.encoded)
    }
    guard let result = reply["result"], result.object != nil else {
      throw .badReply("no result object")
    }
    return result
  }
}

/// RFC 4648 base64, for Basic auth.
enum Base64 {
  private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

  static func encode(_ bytes: [UInt8]) -> String {
    var out: [UInt8] = []
    out.reserveCapacity((bytes.count + 2) / 3 * 4)
    var index = 0
    while index < bytes.count {
      let b0 = bytes[index]
      let b1 = index + 1 < bytes.count ? bytes[index + 1] : 0
      let b2 = index + 2 < bytes.count ? bytes[index + 2] : 0
      out.append(alphabet[Int(b0 >> 2)])
      out.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
      out.append(index + 1 < bytes.count ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "="))
      out.append(index + 2 < bytes.count ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "="))
      index += 3
    }
    return String(decoding: out, as: UTF8.self)
  }
}
