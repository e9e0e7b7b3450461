import CTLS
import NIOCore

/// Debian's OpenSSL for `https` streams, through `CTLS`: found on disk at start-up (for
/// `CanHTTPS`), loaded when the first such stream starts.
public enum TLSLibrary {
  /// libssl is installed where the dynamic linker looks; nothing is loaded to tell.
  public static var isInstalled: Bool { slimplay_tls_available() != 0 }
}

/// A TLS failure, as OpenSSL explains it.
struct TLSError: Error, CustomStringConvertible {
  let description: String
}

/// TLS between the socket and `StreamHandler`: ciphertext below, plaintext above, so the stream
/// handler behaves as for `http`. Its request, written at once, waits here until the handshake is
/// done. Reading stays the stream handler's to drive (`autoRead` is off): a read that brings only
/// handshake or a partial record passes nothing up, and its read-complete makes it read again.
final class TLSHandler: ChannelDuplexHandler {
  typealias InboundIn = ByteBuffer
  typealias InboundOut = ByteBuffer
  typealias OutboundIn = ByteBuffer
  typealias OutboundOut = ByteBuffer

  private enum State {
    case handshaking
    case open
    case closed
  }

  private var state = State.handshaking
  private let session: OpaquePointer
  /// Plaintext written before the handshake finished.
  private var waiting: [(ByteBuffer, EventLoopPromise<Void>?)] = []
  /// Plaintext from the session and ciphertext for the network pass through here.
  private var scratch = [UInt8](repeating: 0, count: 16 * 1024)
  private let onEstablished: (String) -> Void

  /// `serverName`: sent for virtual hosting (SNI). `onEstablished` hears the protocol and cipher.
  init(serverName: String?, onEstablished: @escaping (String) -> Void) throws(TLSError) {
    var error = [CChar](repeating: 0, count: 256)
    guard let session = slimplay_tls_new(serverName, &error, error.count) else {
      throw TLSError(description: "TLS unavailable: \(TLSHandler.text(error))")
    }
    self.session = session
    self.onEstablished = onEstablished
  }

  deinit { slimplay_tls_free(session) }

  func channelActive(context: ChannelHandlerContext) {
    context.fireChannelActive()  // the request it writes waits for the handshake
    advanceHandshake(context: context)
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    let buffer = unwrapInboundIn(data)
    guard state != .closed else { return }
    let fed = buffer.withUnsafeReadableBytes { slimplay_tls_feed(session, $0.baseAddress, $0.count) }
    guard fed == 0 else { return fail(context: context) }
    if state == .handshaking { advanceHandshake(context: context) }
    if state == .open { readPlaintext(context: context) }
  }

  func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
    let buffer = unwrapOutboundIn(data)
    switch state {
    case .handshaking: waiting.append((buffer, promise))
    case .open: encrypt(buffer, promise: promise, context: context)
    case .closed: promise?.fail(ChannelError.ioOnClosedChannel)
    }
  }

  func channelInactive(context: ChannelHandlerContext) {
    state = .closed
    for (_, promise) in waiting { promise?.fail(ChannelError.ioOnClosedChannel) }
    waiting = []
    context.fireChannelInactive()
  }

  // MARK: Session

  private func advanceHandshake(context: ChannelHandlerContext) {
    let status = slimplay_tls_handshake(session)
    sendCiphertext(context: context, promise: nil)
    guard status >= 0 else { return fail(context: context) }
    guard status == 1 else { return }
    state = .open
    var text = [CChar](repeating: 0, count: 128)
    slimplay_tls_describe(session, &text, text.count)
    onEstablished(Self.text(text))
    let pending = waiting
    waiting = []
    for (buffer, promise) in pending { encrypt(buffer, promise: promise, context: context) }
  }

  private func encrypt(_ buffer: ByteBuffer, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
    var rest = buffer
    while rest.readableBytes > 0 {
      let taken = rest.withUnsafeReadableBytes { slimplay_tls_write(session, $0.baseAddress, $0.count) }
      guard taken > 0 else {
        promise?.fail(TLSError(description: "TLS write refused"))
        return fail(context: context)
      }
      rest.moveReaderIndex(forwardBy: taken)
    }
    sendCiphertext(context: context, promise: promise)
  }

  /// Passes up all the plaintext the records received so far hold.
  private func readPlaintext(context: ChannelHandlerContext) {
    while state == .open {
      let count = scratch.withUnsafeMutableBytes { slimplay_tls_read(session, $0.baseAddress, $0.count) }
      if count > 0 {
        var out = context.channel.allocator.buffer(capacity: count)
        out.writeBytes(scratch[0..<count])
        context.fireChannelRead(wrapInboundOut(out))
      } else if count == 0 {
        break  // more ciphertext needed
      } else if count == -2 {
        // The server's close_notify ends the body (HTTP/1.0): ours answers it (a server may wait
        // for it before it closes), then the connection closes.
        state = .closed
        slimplay_tls_shutdown(session)
        sendCiphertext(context: context, promise: nil)
        context.close(promise: nil)
        return
      } else {
        return fail(context: context)
      }
    }
    // A key update or a session ticket may want an answer.
    sendCiphertext(context: context, promise: nil)
  }

  private func sendCiphertext(context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
    var out: ByteBuffer?
    while true {
      let count = scratch.withUnsafeMutableBytes { slimplay_tls_drain(session, $0.baseAddress, $0.count) }
      guard count > 0 else { break }
      if out == nil { out = context.channel.allocator.buffer(capacity: count) }
      out?.writeBytes(scratch[0..<count])
    }
    if let out {
      context.writeAndFlush(wrapOutboundOut(out), promise: promise)
    } else {
      promise?.succeed(())
    }
  }

  private func fail(context: ChannelHandlerContext) {
    var text = [CChar](repeating: 0, count: 256)
    slimplay_tls_error(session, &text, text.count)
    state = .closed
    let error = TLSError(description: Self.text(text))
    for (_, promise) in waiting { promise?.fail(error) }
    waiting = []
    context.fireErrorCaught(error)
  }

  /// A NUL-terminated message the C side wrote into `buffer`.
  private static func text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
