import Logging
import NIOCore
import SlimProto

/// Turns the server's byte stream into `ServerMessage`s and `PlayerMessage`s into bytes.
///
/// A framing error (absurd length, non-ASCII command) means the stream is out of step: the error
/// goes down the pipeline and the connection is closed. A well-framed message whose fields do not
/// parse is logged and skipped; the stream is still in step.
final class FrameCodecHandler: ChannelDuplexHandler {
  typealias InboundIn = ByteBuffer
  typealias InboundOut = ServerMessage
  typealias OutboundIn = PlayerMessage
  typealias OutboundOut = ByteBuffer

  private var reader = ServerFrameReader()
  private var failed = false
  private let logger: Logger

  init(logger: Logger) {
    self.logger = logger
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    guard !failed else { return }
    let buffer = unwrapInboundIn(data)
    reader.append(buffer.readableBytesView)
    while true {
      let frame: ServerFrame?
      do {
        frame = try reader.nextFrame()
      } catch {
        failed = true
        context.fireErrorCaught(error)
        return
      }
      guard let frame else { return }
      do {
        let message = try ServerMessage(frame: frame)
        context.fireChannelRead(wrapInboundOut(message))
      } catch {
        logger.warning("malformed '\(frame.command)' frame ignored: \(error)")
      }
    }
  }

  func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
    let message = unwrapOutboundIn(data)
    let bytes = message.frame.encoded()
    var buffer = context.channel.allocator.buffer(capacity: bytes.count)
    buffer.writeBytes(bytes)
    context.write(wrapOutboundOut(buffer), promise: promise)
  }
}

/// The end of the pipeline: hands messages, errors, idleness and closure to the client.
final class ConnectionEventsHandler: ChannelInboundHandler {
  typealias InboundIn = ServerMessage

  private let client: SlimProtoClient

  init(client: SlimProtoClient) {
    self.client = client
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    client.received(unwrapInboundIn(data), on: context.channel)
  }

  func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
    if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
      client.serverWentSilent(on: context.channel)
    } else {
      context.fireUserInboundEventTriggered(event)
    }
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    client.connectionFailed(with: error, on: context.channel)
    context.close(promise: nil)
  }

  func channelInactive(context: ChannelHandlerContext) {
    client.connectionClosed(context.channel)
  }
}
