import NIOCore
import NIOHTTP1
import NIOPosix
import NetworkSupport

/// Requests to one HTTP server over a single kept-alive HTTP/1.1 connection, one at a time, in
/// the order sent. LMS keeps an idle connection open (more than 40 s measured), so a status poll
/// every 1.5 s costs one write and one read instead of a TCP handshake, a channel, its pipeline
/// and a close. Loop-confined: every method runs on `eventLoop`.
final class KeptAliveConnection {
  typealias Completion = (Result<(HTTPResponseHead, [UInt8]), HTTPExchangeError>) -> Void

  struct Request {
    var spec: HTTPRequestSpec
    var bodyLimit: Int
    var completion: Completion
    /// Already sent once on a kept connection that turned out to be closed: not sent again.
    var resent = false

    var target: Target { Target(host: spec.host, port: spec.port) }
  }

  struct Target: Equatable {
    var host: String
    var port: Int
  }

  /// The request on the wire and what has come back of its response.
  private struct Exchange {
    var request: Request
    /// Written on a connection an earlier exchange had used.
    var reused: Bool
    var head: HTTPResponseHead?
    var body: [UInt8] = []
    var deadline: Scheduled<Void>?
  }

  private enum State {
    case closed
    /// Connecting to `Target` for the request at the head of the queue.
    case connecting(Target)
    /// Connected; nothing in flight.
    case idle(any Channel, Target)
    case exchanging(any Channel, Target, Exchange)
  }

  let eventLoop: any EventLoop
  /// A connection unused for this long is closed, well before the server would drop it.
  private let idleLimit: TimeAmount
  private var state = State.closed
  private var queue: [Request] = []
  private var idleCloser: Scheduled<Void>?

  init(eventLoop: any EventLoop, idleLimit: TimeAmount = .seconds(20)) {
    self.eventLoop = eventLoop
    self.idleLimit = idleLimit
  }

  func send(_ spec: HTTPRequestSpec, bodyLimit: Int, completion: @escaping Completion) {
    eventLoop.preconditionInEventLoop()
    queue.append(Request(spec: spec, bodyLimit: bodyLimit, completion: completion))
    advance()
  }

  /// Fails what is queued and closes the connection.
  func close() {
    eventLoop.preconditionInEventLoop()
    let waiting = queue
    queue.removeAll()
    switch state {
    case .exchanging(let channel, _, _):
      abandon(channel, .refusedBySink("closed"))
    case .idle(let channel, _):
      state = .closed
      channel.close(promise: nil)
    case .closed, .connecting:
      state = .closed
    }
    for request in waiting { request.completion(.failure(.refusedBySink("closed"))) }
  }

  private func advance() {
    guard let next = queue.first else { return }
    switch state {
    case .connecting, .exchanging:
      return
    case .idle(let channel, let target) where target == next.target:
      queue.removeFirst()
      write(next, on: channel, target: target, reused: true)
    case .idle(let channel, _):
      channel.close(promise: nil)
      connect(to: next.target, timeout: next.spec.idleTimeout)
    case .closed:
      connect(to: next.target, timeout: next.spec.idleTimeout)
    }
  }

  private func connect(to target: Target, timeout: TimeAmount) {
    state = .connecting(target)
    let bound = NIOLoopBound(self, eventLoop: eventLoop)
    ClientBootstrap(group: eventLoop)
      .connectTimeout(min(timeout, .seconds(5)))
      .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHTTPClientHandlers()
          try channel.pipeline.syncOperations.addHandler(KeptAliveHandler(owner: bound.value))
        }
      }
      .connect(hostOrAddress: target.host, port: target.port)
      .whenComplete { result in bound.value.connected(to: target, result) }
  }

  private func connected(to target: Target, _ result: Result<any Channel, any Error>) {
    guard case .connecting(let wanted) = state, wanted == target else {
      if case .success(let channel) = result { channel.close(promise: nil) }
      return
    }
    switch result {
    case .success(let channel):
      state = .idle(channel, target)
      if let next = queue.first, next.target == target {
        queue.removeFirst()
        write(next, on: channel, target: target, reused: false)
      } else {
        advance()
      }
    case .failure(let error):
      state = .closed
      if !queue.isEmpty { queue.removeFirst().completion(.failure(.cannotConnect("\(error)"))) }
      advance()
    }
  }

  private func write(_ request: Request, on channel: any Channel, target: Target, reused: Bool) {
    idleCloser?.cancel()
    idleCloser = nil
    var exchange = Exchange(request: request, reused: reused)
    let limit = request.spec.deadline ?? request.spec.idleTimeout
    exchange.deadline = eventLoop.assumeIsolated().scheduleTask(in: limit) { [self] in
      abandon(channel, .timedOut)
    }
    state = .exchanging(channel, target, exchange)
    let spec = request.spec
    var headers = HTTPHeaders()
    headers.add(name: "Host", value: spec.port == 80 ? spec.host : "\(spec.host):\(spec.port)")
    headers.add(name: "User-Agent", value: "slimplay")
    if !spec.body.isEmpty || spec.method == .POST {
      headers.add(name: "Content-Length", value: String(spec.body.count))
    }
    for (name, value) in spec.headers { headers.add(name: name, value: value) }
    let head = HTTPRequestHead(version: .http1_1, method: spec.method, uri: spec.path, headers: headers)
    channel.write(HTTPClientRequestPart.head(head), promise: nil)
    if !spec.body.isEmpty {
      channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: spec.body))), promise: nil)
    }
    channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
  }

  // MARK: events of the channel

  fileprivate func received(_ part: HTTPClientResponsePart, from channel: any Channel) {
    guard case .exchanging(let current, let target, var exchange) = state, current === channel else { return }
    switch part {
    case .head(let head):
      exchange.head = head
      state = .exchanging(channel, target, exchange)
    case .body(let buffer):
      guard exchange.body.count + buffer.readableBytes <= exchange.request.bodyLimit else {
        abandon(channel, .bodyTooLarge)
        return
      }
      exchange.body.append(contentsOf: buffer.readableBytesView)
      state = .exchanging(channel, target, exchange)
    case .end:
      exchange.deadline?.cancel()
      guard let head = exchange.head else {
        abandon(channel, .closedEarly)
        return
      }
      if head.isKeepAlive {
        state = .idle(channel, target)
        idleCloser = eventLoop.assumeIsolated().scheduleTask(in: idleLimit) { [self] in closeIfIdle(channel) }
      } else {
        state = .closed
        channel.close(promise: nil)
      }
      exchange.request.completion(.success((head, exchange.body)))
      advance()
    }
  }

  fileprivate func closed(_ channel: any Channel) {
    switch state {
    case .idle(let current, _) where current === channel:
      state = .closed
      advance()
    case .exchanging(let current, _, _) where current === channel:
      if !resendAfterDrop(on: channel) { abandon(channel, .closedEarly) }
    default:
      break
    }
  }

  fileprivate func failed(_ channel: any Channel, _ error: any Error) {
    // A reset is the same drop as a close, only noisier.
    if resendAfterDrop(on: channel) {
      channel.close(promise: nil)
    } else {
      abandon(channel, .cannotConnect("\(error)"))
    }
  }

  /// A kept connection the server dropped (closed or reset) just as a request went out on it: the
  /// request never reached the server, so it goes again, once, on a new connection. False when
  /// that does not apply (a new connection, a response begun, a request already resent).
  private func resendAfterDrop(on channel: any Channel) -> Bool {
    guard case .exchanging(let current, _, var exchange) = state, current === channel,
      exchange.reused, exchange.head == nil, !exchange.request.resent
    else { return false }
    exchange.deadline?.cancel()
    exchange.request.resent = true
    state = .closed
    queue.insert(exchange.request, at: 0)
    advance()
    return true
  }

  private func abandon(_ channel: any Channel, _ error: HTTPExchangeError) {
    if case .exchanging(let current, _, let exchange) = state, current === channel {
      exchange.deadline?.cancel()
      state = .closed
      channel.close(promise: nil)
      exchange.request.completion(.failure(error))
      advance()
    } else {
      channel.close(promise: nil)
    }
  }

  private func closeIfIdle(_ channel: any Channel) {
    guard case .idle(let current, _) = state, current === channel else { return }
    state = .closed
    channel.close(promise: nil)
  }
}

/// Hands a kept-alive connection's response parts and its end to its owner.
private final class KeptAliveHandler: ChannelInboundHandler, RemovableChannelHandler {
  typealias InboundIn = HTTPClientResponsePart

  private let owner: KeptAliveConnection

  init(owner: KeptAliveConnection) { self.owner = owner }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    owner.received(unwrapInboundIn(data), from: context.channel)
  }

  func channelInactive(context: ChannelHandlerContext) {
    owner.closed(context.channel)
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    owner.failed(context.channel, error)
  }
}
