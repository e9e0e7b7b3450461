import NIOCore
import SlimProto

/// The pipeline side of `StreamFetcher`: request out, head parsed, body moved to the ring as room
/// allows. Reading is explicit (`autoRead` off): the next `read()` is issued only when everything
/// received so far has found a place, which is what holds the sender back.
final class StreamHandler: ChannelInboundHandler {
  typealias InboundIn = ByteBuffer

  private enum State {
    case connecting
    case awaitingHead([UInt8])
    /// Head done; the body waits for `cont` (direct streams).
    case holding
    case body
    case finished
  }

  private var fetcher: StreamFetcher?
  private let request: [UInt8]
  private let holdBody: Bool
  private var state = State.connecting
  private var context: ChannelHandlerContext?
  /// Body bytes received but not yet in the ring (ICY metadata already removed).
  private var pending: ByteBuffer?
  /// Body bytes received while held, before the ICY interval is known.
  private var held: ByteBuffer?
  private var icy: ICYMetadataFilter?
  /// An Ogg stream's link comments, sent as META (see `OggCommentScanner`).
  private var oggComments: OggCommentScanner?
  private var contentLength: Int?
  private var bodyBytes = 0
  /// Set when the connection ended; reported once the pending bytes are stored.
  private var endReason: DisconnectReason?
  private(set) var lastActivity = NIODeadline.now()
  /// Body bytes the last read brought (see `ReadPacing`).
  private var lastReadBytes = 0
  private var pacedRead: Scheduled<Void>?

  init(fetcher: StreamFetcher, request: [UInt8], holdBody: Bool, oggMetadata: Bool = false) {
    self.fetcher = fetcher
    self.request = request
    self.holdBody = holdBody
    oggComments = oggMetadata ? OggCommentScanner() : nil
  }

  /// True while progress depends on the network, not on the consumer or the server's `cont`.
  var isWaitingForNetwork: Bool {
    switch state {
    case .connecting, .awaitingHead: return true
    case .body: return pending == nil && endReason == nil
    case .holding, .finished: return false
    }
  }

  func handlerAdded(context: ChannelHandlerContext) {
    self.context = context
  }

  /// The channel closed: the context holds this handler, so keeping it here would keep both (and
  /// the channel with its buffers) for the life of the process, once per stream.
  func handlerRemoved(context: ChannelHandlerContext) {
    pacedRead?.cancel()
    pacedRead = nil
    self.context = nil
  }

  func channelActive(context: ChannelHandlerContext) {
    state = .awaitingHead([])
    lastActivity = .now()
    var buffer = context.channel.allocator.buffer(capacity: request.count)
    buffer.writeBytes(request)
    context.writeAndFlush(NIOAny(buffer), promise: nil)
    context.read()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    var buffer = unwrapInboundIn(data)
    guard let fetcher else { return }
    lastActivity = .now()
    switch state {
    case .awaitingHead(var bytes):
      bytes.append(contentsOf: buffer.readableBytesView)
      guard let end = HTTPResponseHead.endOfHead(in: bytes) else {
        if bytes.count > HTTPResponseHead.maximumLength {
          fail("response head larger than \(HTTPResponseHead.maximumLength) bytes", reason: .remoteReset)
        } else {
          state = .awaitingHead(bytes)
        }
        return
      }
      acceptHead(Array(bytes[..<end]), body: bytes[end...])
    case .holding:
      bodyBytes += buffer.readableBytes
      fetcher.received(byteCount: buffer.readableBytes)
      held.append(&buffer)
    case .body:
      lastReadBytes = buffer.readableBytes
      fetcher.received(byteCount: buffer.readableBytes)
      accept(&buffer)
      deliver()
    case .connecting, .finished:
      break
    }
  }

  func channelReadComplete(context: ChannelHandlerContext) {
    switch state {
    case .awaitingHead: context.read()
    case .body where pending == nil: readNext(context: context)
    default: break
    }
  }

  private func readNext(context: ChannelHandlerContext) {
    guard let fetcher else { return }
    switch fetcher.readPacing(lastRead: lastReadBytes) {
    case .now:
      context.read()
    case .after(let milliseconds):
      guard pacedRead == nil else { return }
      pacedRead = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(milliseconds)) { [self] in
        pacedRead = nil
        if case .body = state, pending == nil, endReason == nil { context.read() }
      }
    }
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    fetcher?.log.warning("stream: \(error)")
    if endReason == nil { endReason = .remoteReset }
    context.close(promise: nil)
  }

  func channelInactive(context: ChannelHandlerContext) {
    if endReason == nil {
      if case .awaitingHead = state {
        fetcher?.log.error("stream: connection closed before the response head")
        endReason = .remoteReset
      } else if let contentLength, bodyBytes < contentLength {
        fetcher?.log.error("stream: body ended after \(bodyBytes) of \(contentLength) bytes")
        endReason = .remoteReset
      } else {
        endReason = .closedNormally
      }
    }
    switch state {
    case .connecting, .awaitingHead: state = .body  // nothing to deliver: the end is reported now
    case .holding, .body, .finished: break
    }
    // While held, the end is reported after `cont` releases the bytes already received.
    deliver()
  }

  // MARK: From the fetcher

  func release(metaInterval: Int) {
    switch state {
    case .holding:
      break
    case .connecting, .awaitingHead:
      // The server answers RESP (the head) with `cont`: one before it has nothing to release and
      // is ignored, as squeezelite ignores it.
      fetcher?.log.warning("stream: cont before the response head, ignored")
      return
    case .body, .finished:
      return
    }
    icy = metaInterval > 0 ? ICYMetadataFilter(interval: metaInterval) : nil
    state = .body
    if var held {
      self.held = nil
      accept(&held, counted: true)
    }
    deliver()
    if pending == nil, endReason == nil { context?.read() }
  }

  func resume() {
    let wasWaitingForRoom = pending != nil
    deliver()
    if case .body = state, pending == nil, endReason == nil {
      // The stall clock runs from when the player asks for bytes again, not from the last read
      // before the ring filled up.
      if wasWaitingForRoom { lastActivity = .now() }
      context?.read()
    }
  }

  func detach() {
    pacedRead?.cancel()
    pacedRead = nil
    fetcher = nil
    state = .finished
    // Bytes that waited for room in the ring are of no use now.
    pending = nil
    held = nil
  }

  /// Closes the connection; the end is reported with `reason`.
  func abort(reason: DisconnectReason) {
    if endReason == nil { endReason = reason }
    pending = nil
    context?.close(promise: nil)
  }

  // MARK: Body handling

  private func acceptHead(_ raw: [UInt8], body: ArraySlice<UInt8>) {
    guard let fetcher else { return }
    guard let head = HTTPResponseHead(raw: raw) else {
      fail("malformed response head", reason: .remoteReset)
      return
    }
    fetcher.head(head)
    contentLength = head.value(of: "Content-Length").flatMap { Int($0) }
    if !holdBody, head.statusCode >= 400 {
      // LMS-style streams have no `cont` step where the server could judge the response.
      fail("HTTP status \(head.statusCode)", reason: .remoteReset)
      return
    }
    var rest = ByteBuffer(bytes: body)
    fetcher.received(byteCount: rest.readableBytes)
    if holdBody {
      state = .holding
      bodyBytes += rest.readableBytes
      held = rest.readableBytes > 0 ? rest : nil
    } else {
      state = .body
      accept(&rest)
      deliver()
    }
  }

  /// Takes received body bytes into `pending`, stripping ICY metadata.
  private func accept(_ buffer: inout ByteBuffer, counted: Bool = false) {
    if !counted { bodyBytes += buffer.readableBytes }
    guard var filter = icy else {
      scanOggComments(buffer)
      pending.append(&buffer)
      return
    }
    var audio = ByteBuffer()
    buffer.withUnsafeReadableBytes { bytes in
      filter.process(bytes, audio: { audio.writeBytes($0) }, metadata: { fetcher?.metadata($0) })
    }
    icy = filter
    scanOggComments(audio)
    pending.append(&audio)
  }

  private func scanOggComments(_ audio: ByteBuffer) {
    guard var scanner = oggComments else { return }
    let found = audio.withUnsafeReadableBytes { scanner.scan($0) }
    oggComments = scanner
    for payload in found { fetcher?.metadata(payload) }
  }

  /// Moves pending bytes into the ring; pauses reading when it is full; reports the end once
  /// everything is stored.
  private func deliver() {
    guard let fetcher else { return }
    if var buffer = pending {
      let stored = buffer.withUnsafeReadableBytes { fetcher.store($0) }
      buffer.moveReaderIndex(forwardBy: stored)
      pending = buffer.readableBytes > 0 ? buffer : nil
      if stored > 0 { fetcher.dataArrived() }
      if pending != nil {
        fetcher.markPaused()
        return
      }
    }
    if let endReason, case .body = state {
      state = .finished
      fetcher.finish(self, reason: endReason)
    }
  }

  private func fail(_ message: String, reason: DisconnectReason) {
    fetcher?.log.error("stream: \(message)")
    endReason = reason
    pending = nil
    state = .body
    context?.close(promise: nil)
  }
}

extension Optional where Wrapped == ByteBuffer {
  fileprivate mutating func append(_ buffer: inout ByteBuffer) {
    guard buffer.readableBytes > 0 else { return }
    if case .some(var existing) = self {
      self = nil
      existing.writeBuffer(&buffer)
      self = existing
    } else {
      self = buffer
    }
  }
}
