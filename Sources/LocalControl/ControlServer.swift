import LMSControl
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
  import Glibc
#endif

/// The local control API over HTTP/1.1 (NIOHTTP1, already linked for JSON-RPC: no new
/// dependency). It runs on the control event loop, where the player's state lives.
public final class ControlServer: @unchecked Sendable {
  private let eventLoop: any EventLoop
  private let router: ControlRouter
  private let requestGuard: RequestGuard
  private let target: any ControlTarget
  private let logger: Logger
  private var channel: (any Channel)?
  /// Open client connections (on the loop); beyond `connectionLimit` new ones are closed at once.
  private var connections = 0
  static let connectionLimit = 32
  /// Made on the loop by the first client that asks.
  private let broadcasterBox: NIOLoopBoundBox<StatusBroadcaster?>

  private var broadcaster: StatusBroadcaster {
    if let existing = broadcasterBox.value { return existing }
    let made = StatusBroadcaster(eventLoop: eventLoop, target: target)
    broadcasterBox.value = made
    return made
  }

  /// `ownNames`: the names besides IP literals and `localhost` by which clients reach the API.
  public init(
    eventLoop: any EventLoop, token: String?, ownNames: [String] = [], target: any ControlTarget, logger: Logger
  ) {
    self.eventLoop = eventLoop
    self.router = ControlRouter(token: token)
    self.requestGuard = RequestGuard(ownNames: ownNames)
    broadcasterBox = .makeEmptyBox(eventLoop: eventLoop)
    self.target = target
    self.logger = logger
  }

  /// Binds `host:port`, or with `furtherPorts` the first free one of the ports after it (the
  /// default address, where several players on one machine would meet); failure is logged and the
  /// player runs on without the API.
  public func start(host: String, port: Int, furtherPorts: Int = 0) {
    eventLoop.execute { self.target.startBackgroundWork() }
    bind(host: host, port: port, furtherPorts: furtherPorts)
  }

  /// A client's connection, on the control loop: counted in (refused past the limit), then the
  /// HTTP codec and the API's handler.
  func configure(_ channel: any Channel) throws {
    guard admit(channel) else {
      logger.warning("API: more than \(Self.connectionLimit) connections; one refused")
      channel.close(promise: nil)
      return
    }
    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
    try channel.pipeline.syncOperations.addHandler(
      ControlHTTPHandler(
        router: router, requestGuard: requestGuard, target: target, broadcaster: broadcaster, logger: logger))
  }

  private func bind(host: String, port: Int, furtherPorts: Int) {
    let logger = self.logger
    ServerBootstrap(group: eventLoop)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .childChannelInitializer { channel in
        // Child channels run on the control loop, where the target and the broadcaster live.
        channel.eventLoop.makeCompletedFuture { try self.configure(channel) }
      }
      .bind(host: host, port: port)
      .whenComplete { result in
        switch result {
        case .success(let channel):
          self.channel = channel
          logger.notice("API on http://\(host):\(port)/api/status")
        case .failure(let error as IOError) where error.errnoCode == EADDRINUSE && furtherPorts > 0:
          logger.notice("\(host):\(port) is in use (another player?): trying \(port + 1)")
          self.bind(host: host, port: port + 1, furtherPorts: furtherPorts - 1)
        case .failure(let error):
          logger.error("cannot listen on \(host):\(port): \(error)")
        }
      }
  }

  public func stop() {
    channel?.close(promise: nil)
    channel = nil
  }

  /// On the loop: counts the connection in, and out when it closes; false past the limit.
  private func admit(_ channel: any Channel) -> Bool {
    guard connections < Self.connectionLimit else { return false }
    connections += 1
    channel.closeFuture.whenComplete { _ in self.eventLoop.execute { self.connections -= 1 } }
    return true
  }
}

private final class ControlHTTPHandler: ChannelInboundHandler {
  typealias InboundIn = HTTPServerRequestPart
  typealias OutboundOut = HTTPServerResponsePart

  private let router: ControlRouter
  private let requestGuard: RequestGuard
  private let target: any ControlTarget
  private let broadcaster: StatusBroadcaster
  private let logger: Logger
  private var head: HTTPRequestHead?
  private var streaming = false
  private var body: [UInt8] = []
  /// Set once the connection is being closed: what else arrives is ignored.
  private var refused = false
  /// A client has this long to send a whole request (and to start the next one on a kept
  /// connection): a slow or silent client cannot hold a connection.
  private var requestDeadline: Scheduled<Void>?
  static let bodyLimit = 64 * 1024
  static let requestTimeout = TimeAmount.seconds(10)

  init(
    router: ControlRouter, requestGuard: RequestGuard, target: any ControlTarget, broadcaster: StatusBroadcaster,
    logger: Logger
  ) {
    self.router = router
    self.requestGuard = requestGuard
    self.target = target
    self.broadcaster = broadcaster
    self.logger = logger
  }

  func handlerAdded(context: ChannelHandlerContext) {
    armRequestDeadline(context: context)
  }

  func channelInactive(context: ChannelHandlerContext) {
    requestDeadline?.cancel()
    if streaming { broadcaster.remove(ObjectIdentifier(self)) }
    context.fireChannelInactive()
  }

  /// After a response: the connection gets the same time for its next request (or is closed
  /// then, if the client keeps a connection it asked to close).
  private func awaitNextRequest(context: ChannelHandlerContext) {
    if !refused { armRequestDeadline(context: context) }
  }

  private func armRequestDeadline(context: ChannelHandlerContext) {
    requestDeadline?.cancel()
    let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
    requestDeadline = context.eventLoop.scheduleTask(in: Self.requestTimeout) { bound.value.close(promise: nil) }
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    guard !refused else { return }
    switch unwrapInboundIn(data) {
    case .head(let head):
      self.head = head
      body = []
    case .body(let buffer):
      guard body.count + buffer.readableBytes <= Self.bodyLimit else {
        // Answered now: the rest of an oversized body is not worth reading.
        refused = true
        respond(
          context: context, ControlResponse(.tooLarge("body larger than \(Self.bodyLimit) bytes")), keepAlive: false)
        return
      }
      body.append(contentsOf: buffer.readableBytesView)
    case .end:
      guard let head else { return }
      self.head = nil
      requestDeadline?.cancel()
      requestDeadline = nil
      let keepAlive = head.isKeepAlive
      if let refusal = requestGuard.check(
        method: head.method.rawValue, host: head.headers.first(name: "Host"),
        origin: head.headers.first(name: "Origin"), fetchSite: head.headers.first(name: "Sec-Fetch-Site"))
      {
        logger.warning("API: \(head.method.rawValue) \(head.uri) refused: \(refusal.description)")
        respond(context: context, ControlResponse(.forbidden(refusal.description)), keepAlive: false)
        return
      }
      let request = ControlRequest(
        method: head.method.rawValue, uri: head.uri, body: body,
        authorization: head.headers.first(name: "Authorization"))
      if request.method == "GET",
        request.path == "/" || request.path == "/api/events" || request.path.hasPrefix("/api/artwork/")
      {
        do {
          try router.authorize(request)
        } catch {
          respond(context: context, ControlResponse(error), keepAlive: false)
          return
        }
        if request.path == "/" {
          respondPage(context: context, keepAlive: keepAlive)
        } else if request.path.hasPrefix("/api/artwork/") {
          let name = String(request.path.dropFirst("/api/artwork/".count))
          let image = name == "current" ? target.currentArtwork() : target.artwork(coverID: name)
          let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
          image.whenSuccess { image in
            let (handler, context) = bound.value
            if let image {
              handler.respondImage(context: context, image, keepAlive: keepAlive)
            } else {
              handler.respond(
                context: context, ControlResponse(.notFound("no artwork for this track")), keepAlive: keepAlive)
            }
          }
        } else {
          startEvents(context: context)
        }
        return
      }
      let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
      router.route(request, to: target, on: context.eventLoop).whenSuccess { response in
        let (handler, context) = bound.value
        handler.respond(context: context, response, keepAlive: keepAlive)
      }
    }
  }

  private func respondPage(context: ChannelHandlerContext, keepAlive: Bool) {
    send(
      context: context, status: .ok, contentType: "text/html; charset=utf-8", Array(ControlPage.html.utf8),
      keepAlive: keepAlive)
  }

  private func respondImage(context: ChannelHandlerContext, _ bytes: [UInt8], keepAlive: Bool) {
    let contentType = bytes.starts(with: [0x89, 0x50]) ? "image/png" : "image/jpeg"
    send(context: context, status: .ok, contentType: contentType, bytes, keepAlive: keepAlive)
  }

  /// `text/event-stream`: the connection stays open and gets every status event.
  private func startEvents(context: ChannelHandlerContext) {
    var headers = HTTPHeaders()
    headers.add(name: "Content-Type", value: "text/event-stream")
    headers.add(name: "Cache-Control", value: "no-store")
    let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)
    context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
    streaming = true
    let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
    broadcaster.add(ObjectIdentifier(self)) { event in
      let (handler, context) = bound.value
      context.writeAndFlush(handler.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: event)))), promise: nil)
    }
  }

  private func respond(context: ChannelHandlerContext, _ response: ControlResponse, keepAlive: Bool) {
    send(
      context: context, status: .init(statusCode: response.status), contentType: "application/json; charset=utf-8",
      Array((response.body.encoded + "\n").utf8), keepAlive: keepAlive)
  }

  /// One whole response: with `keepAlive` the connection then waits for the next request, without
  /// it the response says `Connection: close` and the connection closes once it is written.
  private func send(
    context: ChannelHandlerContext, status: HTTPResponseStatus, contentType: String, _ bytes: [UInt8],
    keepAlive: Bool
  ) {
    var headers = HTTPHeaders()
    headers.add(name: "Content-Type", value: contentType)
    headers.add(name: "Content-Length", value: String(bytes.count))
    headers.add(name: "Cache-Control", value: "no-store")
    if !keepAlive { headers.add(name: "Connection", value: "close") }
    let head = HTTPResponseHead(version: .http1_1, status: status, headers: headers)
    context.write(wrapOutboundOut(.head(head)), promise: nil)
    context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes)))), promise: nil)
    if keepAlive {
      context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
      awaitNextRequest(context: context)
    } else if refused {
      // The client may still be sending (an oversized body): closing now would answer its next
      // bytes with a reset, which can destroy this response before it is read. Only our side is
      // closed; what still arrives is dropped until the client closes or its time is up.
      let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
      context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
        bound.value.close(mode: .output, promise: nil)
      }
      armRequestDeadline(context: context)
    } else {
      let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
      context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in bound.value.close(promise: nil) }
    }
  }
}
