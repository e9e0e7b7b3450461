import Logging
import NIOCore
import NIOPosix
import SlimProto

/// Finds a server with a UDP discovery request, as Squeezebox players do on port 3483.
public struct ServerDiscovery: Sendable {
  /// Where requests go: the broadcast address by default; a unicast address for a known host.
  public var target: ServerAddress
  /// How long to wait for a reply to one request.
  public var timeout: TimeAmount

  public init(
    target: ServerAddress = ServerAddress(host: "255.255.255.255", port: ServerAddress.defaultPort),
    timeout: TimeAmount = .seconds(5)
  ) {
    self.target = target
    self.timeout = timeout
  }

  public struct Found: Equatable, Sendable {
    /// The SlimProto server: the reply's IPAD (else its source address) at the port that answered.
    public var server: ServerAddress
    public var reply: DiscoveryReply
  }

  /// Sends one request and waits for the first valid reply; nil on timeout.
  public func discover(on group: any EventLoopGroup, logger: Logger) -> EventLoopFuture<Found?> {
    let loop = group.next()
    let promise = loop.makePromise(of: Found?.self)
    let bootstrap = DatagramBootstrap(group: loop)
      .channelOption(.socketOption(.so_broadcast), value: 1)
      .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHandler(
            DiscoveryReplyHandler(promise: promise, logger: logger))
        }
      }
    bootstrap.bind(host: "0.0.0.0", port: 0).whenComplete { result in
      switch result {
      case .failure(let error):
        logger.warning("discovery socket failed: \(error)")
        promise.succeed(nil)
      case .success(let channel):
        let timer = loop.scheduleTask(in: timeout) { promise.succeed(nil) }
        promise.futureResult.whenComplete { _ in
          timer.cancel()
          channel.close(promise: nil)
        }
        do {
          let address = try SocketAddress.makeAddressResolvingHost(target.host, port: target.port)
          let request = DiscoveryRequest().encoded()
          var buffer = channel.allocator.buffer(capacity: request.count)
          buffer.writeBytes(request)
          channel.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: buffer)).whenFailure {
            logger.warning("discovery request to \(target) failed: \($0)")
          }
        } catch {
          logger.warning("discovery target \(target) unusable: \(error)")
          promise.succeed(nil)
        }
      }
    }
    return promise.futureResult
  }
}

private final class DiscoveryReplyHandler: ChannelInboundHandler {
  typealias InboundIn = AddressedEnvelope<ByteBuffer>

  private let promise: EventLoopPromise<ServerDiscovery.Found?>
  private let logger: Logger

  init(promise: EventLoopPromise<ServerDiscovery.Found?>, logger: Logger) {
    self.promise = promise
    self.logger = logger
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    let envelope = unwrapInboundIn(data)
    let bytes = Array(envelope.data.readableBytesView)
    let reply: DiscoveryReply
    do {
      reply = try DiscoveryReply(parsing: bytes)
    } catch {
      logger.debug("ignoring discovery datagram from \(envelope.remoteAddress): \(error)")
      return
    }
    guard let sourceIP = envelope.remoteAddress.ipAddress, let port = envelope.remoteAddress.port else {
      return
    }
    let host = reply.ipAddress.flatMap { $0.isEmpty || $0 == "0.0.0.0" ? nil : $0 } ?? sourceIP
    promise.succeed(.init(server: ServerAddress(host: host, port: port), reply: reply))
  }
}
