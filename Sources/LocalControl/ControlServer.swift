import LMSControl
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// The local control API over HTTP/1.1 (NIOHTTP1, already linked for JSON-RPC: no new
/// dependency). It runs on the control event loop, where the player's state lives.
public final class ControlServer: @unchecked Sendable {
  private let eventLoop: any EventLoop
  private let router: ControlRouter
  private let target: any ControlTarget
  private let logger: Logger
  private var channel: (any Channel)?
  /// Made on the loop by the first client that asks.
  private let broadcasterBox: NIOLoopBoundBox<StatusBroadcaster?>

  private var broadcaster: StatusBroadcaster {
    if let existing = broadcasterBox.value { return existing }
    let made = StatusBroadcaster(eventLoop: eventLoop, target: target)
    broadcasterBox.value = made
    return made
  }

  public init(eventLoop: any EventLoop, token: String?, target: any ControlTarget, logger: Logger) {
    self.eventLoop = eventLoop
    self.router = ControlRouter(token: token)
    broadcasterBox = .makeEmptyBox(eventLoop: eventLoop)
    self.target = target
    self.logger = logger
  }

  /// Binds `host:port`; failure is logged and the player runs on without the API.
  public func start(host: String, port: Int) {
    let router = self.router
    let logger = self.logger
    eventLoop.execute { self.target.startBackgroundWork() }
    ServerBootstrap(group: eventLoop)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .childChannelInitializer { channel in
        // Child channels run on the control loop, where the target and the broadcaster live.
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
          try channel.pipeline.syncOperations.addHandler(
            ControlHTTPHandler(router: router, target: self.target, broadcaster: self.broadcaster, logger: logger))
        }
      }
      .bind(host: host, port: port)
      .whenComplete { result in
        switch result {
        case .success(let channel):
          self.channel = channel
          logger.notice("API on http://\(host):\(port)/api/status")
        case .failure(let error):
          logger.error("cannot listen on \(host):\(port): \(error)")
        }
      }
  }

  public func stop() {
    channel?.close(promise: nil)
    channel = nil
  }
}

private final class ControlHTTPHandler: ChannelInboundHandler {
  typealias InboundIn = HTTPServerRequestPart
  typealias OutboundOut = HTTPServerResponsePart

  private let router: ControlRouter
  private let target: any ControlTarget
  private let broadcaster: StatusBroadcaster
  private let logger: Logger
  private var head: HTTPRequestHead?
  private var streaming = false
  private var body: [UInt8] = []
  private var tooLarge = false
  static let bodyLimit = 64 * 1024

  init(router: ControlRouter, target: any ControlTarget, broadcaster: StatusBroadcaster, logger: Logger) {
    self.router = router
    self.target = target
    self.broadcaster = broadcaster
    self.logger = logger
  }

  func channelInactive(context: ChannelHandlerContext) {
    if streaming { broadcaster.remove(ObjectIdentifier(self)) }
    context.fireChannelInactive()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    switch unwrapInboundIn(data) {
    case .head(let head):
      self.head = head
      body = []
      tooLarge = false
    case .body(let buffer):
      if body.count + buffer.readableBytes > Self.bodyLimit {
        tooLarge = true
      } else {
        body.append(contentsOf: buffer.readableBytesView)
      }
    case .end:
      guard let head else { return }
      self.head = nil
      let keepAlive = head.isKeepAlive
      if tooLarge {
        respond(context: context, ControlResponse(.badRequest("body too large")), keepAlive: false)
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
    let bytes = Array(ControlPage.html.utf8)
    var headers = HTTPHeaders()
    headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
    headers.add(name: "Content-Length", value: String(bytes.count))
    headers.add(name: "Cache-Control", value: "no-store")
    let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)
    context.write(wrapOutboundOut(.head(head)), promise: nil)
    context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes)))), promise: nil)
    context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
  }

  private func respondImage(context: ChannelHandlerContext, _ bytes: [UInt8], keepAlive: Bool) {
    var headers = HTTPHeaders()
    headers.add(name: "Content-Type", value: bytes.starts(with: [0x89, 0x50]) ? "image/png" : "image/jpeg")
    headers.add(name: "Content-Length", value: String(bytes.count))
    headers.add(name: "Cache-Control", value: "no-store")
    let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)
    context.write(wrapOutboundOut(.head(head)), promise: nil)
    context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes)))), promise: nil)
    context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
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
    let bytes = Array((response.body.encoded + "\n").utf8)
    var headers = HTTPHeaders()
    headers.add(name: "Content-Type", value: "application/json; charset=utf-8")
    headers.add(name: "Content-Length", value: String(bytes.count))
    headers.add(name: "Cache-Control", value: "no-store")
    if !keepAlive { headers.add(name: "Connection", value: "close") }
    let head = HTTPResponseHead(version: .http1_1, status: .init(statusCode: response.status), headers: headers)
    context.write(wrapOutboundOut(.head(head)), promise: nil)
    context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes)))), promise: nil)
    if keepAlive {
      context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    } else {
      let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
      context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in bound.value.close(promise: nil) }
    }
  }
}
