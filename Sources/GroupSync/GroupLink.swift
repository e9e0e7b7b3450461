import CSupport
import Logging
import NIOCore
import NIOPosix
import SlimProto

#if canImport(Glibc)
  import Glibc
#endif

/// The group's datagrams on the LAN: one multicast address and port, joined on the interface that
/// reaches LMS (loopback when LMS runs on this machine), so several players on one machine and
/// players across the LAN hear each other alike. Sends stamp sender, group, boot and sequence, and
/// sign with the key when there is one. Each datagram comes with the time the kernel received it:
/// on a loaded machine the event loop can get to it milliseconds later, and a time exchange
/// (`ClockOffset`) dated then reads the other member's clock off by half of that. Confined to its
/// event loop.
public final class GroupLink: @unchecked Sendable {
  public struct Configuration: Sendable {
    public var groupAddress: String
    public var port: Int
    /// The local IPv4 address whose interface carries the group (nil: the system's choice).
    public var interfaceAddress: String?
    public var key: GroupKey?

    public init(groupAddress: String = "239.255.83.80", port: Int = 3484, interfaceAddress: String?, key: GroupKey?) {
      self.groupAddress = groupAddress
      self.port = port
      self.interfaceAddress = interfaceAddress
      self.key = key
    }
  }

  /// `arrivedAt`: when the kernel received it (CLOCK_MONOTONIC ns; nil when not known).
  public typealias Receive =
    @Sendable (GroupMessage, _ from: String, MessageFilter.Authentication, _ arrivedAt: UInt64?) -> Void

  public let configuration: Configuration
  let player: MACAddress
  let eventLoop: any EventLoop
  let logger: Logger
  /// Drawn when the link is made: a restarted player's sequence starts again under a new boot.
  let boot = UInt32.random(in: 1...UInt32.max)
  private var sequence: UInt64 = 0
  private var channel: (any Channel)?
  private var destination: SocketAddress?

  public init(configuration: Configuration, player: MACAddress, eventLoop: any EventLoop, logger: Logger) {
    self.configuration = configuration
    self.player = player
    self.eventLoop = eventLoop
    self.logger = logger
  }

  /// Joins the group; `receive` gets every datagram that decodes, on the event loop.
  public func open(receive: @escaping Receive) -> EventLoopFuture<Void> {
    let configuration = configuration
    let key = configuration.key
    let logger = logger
    let destination: SocketAddress
    do {
      destination = try SocketAddress(ipAddress: configuration.groupAddress, port: configuration.port)
    } catch {
      return eventLoop.makeFailedFuture(error)
    }
    self.destination = destination
    let interface = configuration.interfaceAddress.flatMap { try? SocketAddress(ipAddress: $0, port: 0) }
    guard case .v4(let bound) = destination else {
      return eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
    }
    // Made here, not by the bootstrap, to read each datagram's arrival time from it.
    let socket = slimplay_udp_socket(bound.address.sin_addr.s_addr, UInt16(configuration.port))
    guard socket >= 0 else {
      return eventLoop.makeFailedFuture(IOError(errnoCode: -socket, reason: "bind"))
    }
    return DatagramBootstrap(group: eventLoop)
      .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHandler(
            GroupDatagramHandler(socket: socket, key: key, logger: logger, receive: receive))
        }
      }
      .withBoundSocket(socket)
      .flatMap { (channel: any Channel) -> EventLoopFuture<any Channel> in
        guard let provider = channel as? any SocketOptionProvider, case .v4(let group) = destination else {
          channel.close(promise: nil)
          return channel.eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
        }
        // The membership set directly: NIO's `joinGroup` refuses an interface without the multicast
        // flag, loopback among them, where the kernel delivers a group's datagrams all the same.
        let local: in_addr =
          if case .v4(let address) = interface { address.address.sin_addr } else {
            in_addr(s_addr: INADDR_ANY.bigEndian)
          }
        let membership = ip_mreq(imr_multiaddr: group.address.sin_addr, imr_interface: local)
        return provider.unsafeSetSocketOption(level: .ip, name: .ip_add_membership, value: membership)
          .flatMap { provider.setIPMulticastLoop(1) }
          .flatMap { provider.setIPMulticastTTL(1) }
          .flatMap { provider.setIPMulticastIF(local) }
          .map { channel }
          .flatMapError { error in
            // The channel owns the socket now: closed with it, not left open behind a failed start.
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(error)
          }
      }
      .hop(to: eventLoop)
      .map { [self] (channel: any Channel) in
        self.channel = channel
        let on = configuration.interfaceAddress.map { " on the interface of \($0)" } ?? ""
        logger.info("listening on \(configuration.groupAddress):\(configuration.port)\(on)")
      }
  }

  public func send(_ body: GroupMessage.Body, group: MACAddress) {
    guard let channel, let destination else { return }
    sequence += 1
    let message = GroupMessage(sender: player, group: group, boot: boot, sequence: sequence, body: body)
    var bytes = message.encoded(tagged: configuration.key != nil)
    if let key = configuration.key { bytes += key.tag(bytes) }
    var buffer = channel.allocator.buffer(capacity: bytes.count)
    buffer.writeBytes(bytes)
    channel.writeAndFlush(AddressedEnvelope(remoteAddress: destination, data: buffer)).whenFailure { [logger] in
      logger.debug("a datagram was not sent: \($0)")
    }
  }

  public func close() {
    channel?.close(promise: nil)
    channel = nil
  }

  /// The local address this machine would use to reach `host` (a UDP socket connected, nothing
  /// sent): the interface the group's members are reached on when they are LMS's players.
  public static func localAddress(reaching host: String, port: Int) -> String? {
    guard let remote = try? SocketAddress(ipAddress: host, port: port), case .v4(let v4) = remote else { return nil }
    let socket = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    guard socket >= 0 else { return nil }
    defer { Glibc.close(socket) }
    var target = v4.address
    let connected = withUnsafePointer(to: &target) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard connected == 0 else { return nil }
    var local = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &local) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
    }
    guard named == 0 else { return nil }
    return SocketAddress(local, host: "").ipAddress
  }
}

/// Decodes and authenticates each datagram; what does not decode is logged and dropped.
private final class GroupDatagramHandler: ChannelInboundHandler {
  typealias InboundIn = AddressedEnvelope<ByteBuffer>

  /// The channel's socket: NIO reads one datagram and hands it on before it reads the next, so
  /// the kernel's time for the last one read is this datagram's.
  let socket: CInt
  let key: GroupKey?
  let logger: Logger
  let receive: GroupLink.Receive

  init(socket: CInt, key: GroupKey?, logger: Logger, receive: @escaping GroupLink.Receive) {
    self.socket = socket
    self.key = key
    self.logger = logger
    self.receive = receive
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    let envelope = unwrapInboundIn(data)
    let arrival = slimplay_datagram_arrival(socket)
    let source = envelope.remoteAddress.ipAddress ?? "?"
    let decoded: (message: GroupMessage, tag: GroupMessage.Tag?)
    do {
      decoded = try GroupMessage.decode(Array(envelope.data.readableBytesView))
    } catch {
      logger.info("a datagram from \(source) that is not a group message: \(error)")
      return
    }
    let authentication: MessageFilter.Authentication =
      if let key {
        decoded.tag.map(key.verify) == true ? .valid : .invalid
      } else {
        .notRequired
      }
    receive(decoded.message, source, authentication, arrival == 0 ? nil : arrival)
  }
}
