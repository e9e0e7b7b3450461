import NIOCore
import NIOPosix

/// A TCP server on 127.0.0.1, on a port and an event loop of its own: `setUp` builds each
/// accepted connection's pipeline (on its loop, synchronously).
public final class LoopbackServer: Sendable {
  private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
  private let channel: any Channel
  public let port: Int

  public init(_ setUp: @escaping @Sendable (any Channel) throws -> Void) throws {
    channel = try ServerBootstrap(group: group)
      .childChannelInitializer { channel in channel.eventLoop.makeCompletedFuture { try setUp(channel) } }
      .bind(host: "127.0.0.1", port: 0).wait()
    port = channel.localAddress!.port!
  }

  public func close() {
    try? channel.close().wait()
    try? group.syncShutdownGracefully()
  }
}
