import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import TestSupport
import Testing

@testable import LMSControl

/// JSON-RPC calls over the kept-alive connection, against a loopback HTTP/1.1 server that counts
/// its connections and answers each request as told.
@Suite struct KeptAliveConnectionTests {
  @Test func callsShareOneConnection() throws {
    let server = try JSONServer()
    defer { server.close() }
    let client = server.client()
    for expected in 1...3 {
      let result = try client.request(["status"]).wait()
      #expect(result["request"]?.int == expected)
    }
    #expect(server.connections == 1)
    #expect(server.requestsSeen == 3)
  }

  @Test func aConnectionTheServerDroppedIsReplaced() throws {
    let server = try JSONServer()
    defer { server.close() }
    server.script([.replyThenDrop])
    let client = server.client()
    #expect(try client.request(["status"]).wait()["request"]?.int == 1)
    // The drop may reach the client before or after the next call goes out; either way the call
    // is answered, on a new connection.
    #expect(try client.request(["status"]).wait()["request"]?.int == 2)
    #expect(server.connections == 2)
  }

  @Test func aServerAskingToCloseGetsANewConnectionNextTime() throws {
    let server = try JSONServer()
    defer { server.close() }
    server.script([.replyAndClose, .reply])
    let client = server.client()
    #expect(try client.request(["status"]).wait()["request"]?.int == 1)
    #expect(try client.request(["status"]).wait()["request"]?.int == 2)
    #expect(try client.request(["status"]).wait()["request"]?.int == 3)
    #expect(server.connections == 2)
  }

  @Test func aSilentServerTimesOutAndTheNextCallConnectsAfresh() throws {
    let server = try JSONServer()
    defer { server.close() }
    server.script([.silent])
    let client = server.client(timeout: .milliseconds(300))
    #expect(throws: LMSError.transport(.timedOut)) { try client.request(["status"]).wait() }
    #expect(try client.request(["status"]).wait()["request"]?.int == 2)
    #expect(server.connections == 2)
  }

  @Test func callsMadeTogetherAreAnsweredInOrder() throws {
    let server = try JSONServer()
    defer { server.close() }
    let client = server.client()
    let futures = (0..<5).map { _ in client.request(["status"]) }
    let numbers = try futures.map { try $0.wait()["request"]?.int }
    #expect(numbers == [1, 2, 3, 4, 5])
    #expect(server.connections == 1)
  }

  @Test func noServerFailsEveryCallWithoutHanging() throws {
    let refusing = try RefusingPort()  // held: a port closed again may be taken by a test beside this one
    let port = refusing.port
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    defer { try? group.syncShutdownGracefully() }
    let client = LMSClient(eventLoop: group.next(), playerID: "aa", timeout: .milliseconds(500)) {
      LMSEndpoint(host: "127.0.0.1", port: port)
    }
    for _ in 0..<2 {
      #expect(throws: LMSError.self) { try client.request(["status"]).wait() }
    }
  }
}

/// Answers `POST /jsonrpc.js` with `{"result":{"request":N}}`, N counting requests from 1.
private final class JSONServer: Sendable {
  enum Behaviour: Sendable {
    case reply
    /// Replies with `Connection: close`, then closes.
    case replyAndClose
    /// Replies as if keeping the connection, then closes it (a server's idle limit).
    case replyThenDrop
    /// Reads the request and never answers.
    case silent
  }

  private let server: LoopbackServer
  private final class Tally: Sendable {
    let lock = Mutex<(connections: Int, requests: Int, script: [Behaviour])>((0, 0, []))
  }

  private let tally = Tally()
  var port: Int { server.port }
  private let clientGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)

  init() throws {
    let tally = self.tally
    server = try LoopbackServer { channel in
      tally.lock.withLock { $0.connections += 1 }
      try channel.pipeline.syncOperations.configureHTTPServerPipeline()
      try channel.pipeline.syncOperations.addHandler(Responder(tally: tally))
    }
  }

  var connections: Int { tally.lock.withLock { $0.connections } }
  var requestsSeen: Int { tally.lock.withLock { $0.requests } }

  /// How the next requests are answered, in order; then `.reply`.
  func script(_ behaviours: [Behaviour]) { tally.lock.withLock { $0.script = behaviours } }

  func client(timeout: TimeAmount = .seconds(5)) -> LMSClient {
    let port = self.port
    return LMSClient(eventLoop: clientGroup.next(), playerID: "aa:bb", timeout: timeout) {
      LMSEndpoint(host: "127.0.0.1", port: port)
    }
  }

  func close() {
    server.close()
    try? clientGroup.syncShutdownGracefully()
  }

  private final class Responder: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    let tally: Tally

    init(tally: Tally) { self.tally = tally }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      guard case .end = unwrapInboundIn(data) else { return }
      let (number, behaviour) = tally.lock.withLock { state -> (Int, Behaviour) in
        state.requests += 1
        return (state.requests, state.script.isEmpty ? .reply : state.script.removeFirst())
      }
      if case .silent = behaviour { return }
      let body = Array(#"{"id":1,"result":{"request":\#(number)}}"#.utf8)
      var headers = HTTPHeaders([("Content-Type", "application/json"), ("Content-Length", String(body.count))])
      if case .replyAndClose = behaviour { headers.add(name: "Connection", value: "close") }
      context.write(
        wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
      context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: body)))), promise: nil)
      let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
      switch behaviour {
      case .replyAndClose, .replyThenDrop:
        let channel = context.channel
        written.whenComplete { _ in channel.close(promise: nil) }
      case .reply, .silent:
        break
      }
    }
  }
}
