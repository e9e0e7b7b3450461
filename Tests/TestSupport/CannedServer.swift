import NIOCore
import Synchronization

/// A one-shot HTTP server on loopback: each connection gets `response` and is then closed, or
/// held open with `holdOpen`.
public final class CannedServer: Sendable {
  private let server: LoopbackServer
  public var port: Int { server.port }
  private let received = Received()

  public var requests: [[UInt8]] { received.all }

  private final class Received: Sendable {
    private let list = Mutex<[[UInt8]]>([])
    var all: [[UInt8]] { list.withLock { $0 } }
    func add(_ request: [UInt8]) { list.withLock { $0.append(request) } }
  }

  public init(response: [UInt8], holdOpen: Bool = false) throws {
    let received = self.received
    let record: @Sendable ([UInt8]) -> Void = { received.add($0) }
    server = try LoopbackServer { channel in
      try channel.pipeline.syncOperations.addHandler(Responder(response: response, holdOpen: holdOpen, record: record))
    }
  }

  public func close() { server.close() }

  private final class Responder: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let response: [UInt8]
    let holdOpen: Bool
    let record: @Sendable ([UInt8]) -> Void

    init(response: [UInt8], holdOpen: Bool, record: @escaping @Sendable ([UInt8]) -> Void) {
      self.response = response
      self.holdOpen = holdOpen
      self.record = record
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      let request = Array(unwrapInboundIn(data).readableBytesView)
      record(request)
      let written = context.writeAndFlush(NIOAny(context.channel.allocator.buffer(bytes: response)))
      if !holdOpen {
        let channel = context.channel
        written.whenComplete { _ in channel.close(promise: nil) }
      }
    }
  }
}
