import NIOCore
import NIOHTTP1
import NIOPosix
import NetworkSupport

/// What went wrong with one HTTP exchange.
public enum HTTPExchangeError: Error, Equatable, CustomStringConvertible {
  case cannotConnect(String)
  case timedOut
  case closedEarly
  case badStatus(Int)
  case bodyTooLarge
  case refusedBySink(String)

  public var description: String {
    switch self {
    case .cannotConnect(let reason): "cannot connect: \(reason)"
    case .timedOut: "timed out"
    case .closedEarly: "connection closed before the response was complete"
    case .badStatus(let code): "HTTP status \(code)"
    case .bodyTooLarge: "response body too large"
    case .refusedBySink(let reason): reason
    }
  }
}

/// One request to an HTTP server. `startHTTPExchange` gives it a connection of its own
/// (`Connection: close`: downloads, artwork); JSON-RPC calls share a kept-alive one
/// (`KeptAliveConnection`).
public struct HTTPRequestSpec: Sendable {
  public var method: HTTPMethod
  public var host: String
  public var port: Int
  public var path: String
  public var headers: [(String, String)]
  public var body: [UInt8]
  /// The whole exchange must finish within this (JSON-RPC), or nil for none.
  public var deadline: TimeAmount?
  /// No byte for this long ends the exchange.
  public var idleTimeout: TimeAmount

  public init(
    method: HTTPMethod, host: String, port: Int, path: String, headers: [(String, String)] = [],
    body: [UInt8] = [], deadline: TimeAmount? = .seconds(5), idleTimeout: TimeAmount = .seconds(5)
  ) {
    self.method = method
    self.host = host
    self.port = port
    self.path = path
    self.headers = headers
    self.body = body
    self.deadline = deadline
    self.idleTimeout = idleTimeout
  }
}

/// Receives a response as it arrives. Called on the exchange's event loop.
public protocol HTTPResponseSink: AnyObject {
  /// Return an error to abandon the exchange (wrong status, unwanted body).
  func received(head: HTTPResponseHead) -> HTTPExchangeError?
  /// Return an error to abandon the exchange (the body could not be stored).
  func received(body: ByteBuffer) -> HTTPExchangeError?
  /// How long to wait before reading more from the socket; `nil` reads on at once. A download
  /// uses it to stay out of the live stream's way.
  func delayBeforeNextRead() -> TimeAmount?
  /// Exactly once, last.
  func finished(_ error: HTTPExchangeError?)
}

/// Runs `spec` on `eventLoop`, feeding `sink`; returns a handle that can cancel it.
@discardableResult
public func startHTTPExchange(
  _ spec: HTTPRequestSpec, on eventLoop: any EventLoop, sink: any HTTPResponseSink
) -> HTTPExchangeHandle {
  let handle = HTTPExchangeHandle(eventLoop: eventLoop)
  // The sink is only ever used on `eventLoop`, from here on.
  let carried = UncheckedSendableBox(sink)
  eventLoop.execute {
    let handler = HTTPExchangeHandler(spec: spec, sink: carried.value, handle: handle)
    handle.handler = handler
    let bound = NIOLoopBound(handler, eventLoop: eventLoop)
    if let deadline = spec.deadline {
      handler.deadlineTask = eventLoop.assumeIsolated().scheduleTask(in: deadline) {
        bound.value.fail(.timedOut)
      }
    }
    ClientBootstrap(group: eventLoop)
      .connectTimeout(min(spec.idleTimeout, .seconds(5)))
      .channelOption(.autoRead, value: false)
      .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHTTPClientHandlers()
          try channel.pipeline.syncOperations.addHandler(
            IdleStateHandler(readTimeout: spec.idleTimeout))
          try channel.pipeline.syncOperations.addHandler(bound.value)
        }
      }
      .connect(hostOrAddress: spec.host, port: spec.port)
      .whenComplete { result in
        let handler = bound.value
        switch result {
        case .success(let channel):
          if handler.isFinished {
            channel.close(promise: nil)
          } else {
            handler.channel = channel
          }
        case .failure(let error):
          handler.fail(.cannotConnect("\(error)"))
        }
      }
  }
  return handle
}

/// Carries a loop-confined value to its loop.
struct UncheckedSendableBox<Value>: @unchecked Sendable {
  let value: Value
  init(_ value: Value) { self.value = value }
}

/// Cancels an exchange from any thread.
public final class HTTPExchangeHandle: @unchecked Sendable {
  let eventLoop: any EventLoop
  /// Only touched on `eventLoop`.
  var handler: HTTPExchangeHandler?

  init(eventLoop: any EventLoop) { self.eventLoop = eventLoop }

  public func cancel(_ reason: String = "cancelled") {
    eventLoop.execute { self.handler?.fail(.refusedBySink(reason)) }
  }
}

final class HTTPExchangeHandler: ChannelDuplexHandler, RemovableChannelHandler {
  typealias InboundIn = HTTPClientResponsePart
  typealias OutboundIn = Never
  typealias OutboundOut = HTTPClientRequestPart

  private let spec: HTTPRequestSpec
  private let sink: any HTTPResponseSink
  private weak var handle: HTTPExchangeHandle?
  var channel: (any Channel)?
  var deadlineTask: Scheduled<Void>?
  private(set) var isFinished = false
  private var sawHead = false
  private var context: ChannelHandlerContext?

  init(spec: HTTPRequestSpec, sink: any HTTPResponseSink, handle: HTTPExchangeHandle) {
    self.spec = spec
    self.sink = sink
    self.handle = handle
  }

  func channelActive(context: ChannelHandlerContext) {
    self.context = context
    var headers = HTTPHeaders()
    headers.add(name: "Host", value: spec.port == 80 ? spec.host : "\(spec.host):\(spec.port)")
    headers.add(name: "Connection", value: "close")
    headers.add(name: "User-Agent", value: "slimplay")
    if !spec.body.isEmpty || spec.method == .POST {
      headers.add(name: "Content-Length", value: String(spec.body.count))
    }
    for (name, value) in spec.headers { headers.add(name: name, value: value) }
    let head = HTTPRequestHead(version: .http1_1, method: spec.method, uri: spec.path, headers: headers)
    context.write(wrapOutboundOut(.head(head)), promise: nil)
    if !spec.body.isEmpty {
      context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: spec.body)))), promise: nil)
    }
    context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    context.read()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    guard !isFinished else { return }
    switch unwrapInboundIn(data) {
    case .head(let head):
      sawHead = true
      if let error = sink.received(head: head) { fail(error) }
    case .body(let buffer):
      if let error = sink.received(body: buffer) { fail(error) }
    case .end:
      finish(nil)
    }
  }

  func channelReadComplete(context: ChannelHandlerContext) {
    guard !isFinished else { return }
    if let delay = sink.delayBeforeNextRead() {
      context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
        if !isFinished { self.context?.read() }
      }
    } else {
      context.read()
    }
  }

  func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
    if event is IdleStateHandler.IdleStateEvent {
      fail(.timedOut)
    } else {
      context.fireUserInboundEventTriggered(event)
    }
  }

  func channelInactive(context: ChannelHandlerContext) {
    fail(.closedEarly)
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    fail(.cannotConnect("\(error)"))
  }

  func fail(_ error: HTTPExchangeError) {
    finish(error)
  }

  private func finish(_ error: HTTPExchangeError?) {
    guard !isFinished else { return }
    isFinished = true
    deadlineTask?.cancel()
    channel?.close(promise: nil)
    context?.close(promise: nil)
    context = nil
    handle?.handler = nil
    sink.finished(error)
  }
}

/// Collects a whole (small) response body: JSON-RPC replies, artwork.
public final class CollectingSink: HTTPResponseSink {
  private let limit: Int
  private let completion: (Result<(HTTPResponseHead, [UInt8]), HTTPExchangeError>) -> Void
  private var head: HTTPResponseHead?
  private var body: [UInt8] = []

  private let requiresOK: Bool

  /// `requiresOK`: anything but 200 fails the exchange; otherwise every reply is handed over.
  public init(
    limit: Int, requiresOK: Bool = true,
    completion: @escaping (Result<(HTTPResponseHead, [UInt8]), HTTPExchangeError>) -> Void
  ) {
    self.limit = limit
    self.requiresOK = requiresOK
    self.completion = completion
  }

  public func received(head: HTTPResponseHead) -> HTTPExchangeError? {
    self.head = head
    return head.status.code == 200 || !requiresOK ? nil : .badStatus(Int(head.status.code))
  }

  public func received(body buffer: ByteBuffer) -> HTTPExchangeError? {
    guard body.count + buffer.readableBytes <= limit else { return .bodyTooLarge }
    body.append(contentsOf: buffer.readableBytesView)
    return nil
  }

  public func delayBeforeNextRead() -> TimeAmount? { nil }

  public func finished(_ error: HTTPExchangeError?) {
    if let error {
      completion(.failure(error))
    } else if let head {
      completion(.success((head, body)))
    } else {
      completion(.failure(.closedEarly))
    }
  }
}
