import Logging
import NIOCore
import NIOPosix
import SlimProto
import Support
import Synchronization
import Testing

@testable import GroupSync

#if canImport(Glibc)
  import Glibc
#endif

/// Whether this machine's sockets take `IP_MULTICAST_IF`. Every Linux kernel does; qemu-user 7.2 (the
/// arm64 unit tests run under it) does not pass the option through and answers ENOPROTOOPT.
private let multicastInterfaceIsSettable: Bool = {
  let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
  guard fd >= 0 else { return false }
  defer { close(fd) }
  var local = in_addr(s_addr: INADDR_LOOPBACK.bigEndian)
  let result = setsockopt(fd, Int32(IPPROTO_IP), IP_MULTICAST_IF, &local, socklen_t(MemoryLayout<in_addr>.size))
  return result == 0 || errno != ENOPROTOOPT
}()

/// The group's datagrams on a real socket: each comes with the time the kernel received it.
@Suite struct GroupLinkTests {
  @Test(
    .enabled(
      if: multicastInterfaceIsSettable,
      "the sockets here refuse IP_MULTICAST_IF (ENOPROTOOPT): qemu-user 7.2, not a kernel, as in the arm64 tests"))
  func aDatagramComesWithTheTimeTheKernelReceivedIt() async throws {
    let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let player = try #require(MACAddress("02:11:22:33:55:07"))
    let configuration = GroupLink.Configuration(
      port: Int.random(in: 40000...60000), interfaceAddress: "127.0.0.1", key: nil)
    let link = GroupLink(
      configuration: configuration, player: player, eventLoop: loops.next(), logger: Logger(label: "test"))
    let heard = Mutex<[(message: GroupMessage, arrivedAt: UInt64?, readAt: UInt64)]>([])
    try await link.open { message, _, _, arrivedAt in
      let readAt = MonotonicClock.nanoseconds()
      heard.withLock { $0.append((message, arrivedAt, readAt)) }
    }.get()
    let sentAt = MonotonicClock.nanoseconds()
    try await loops.next().submit { link.send(.timeRequest(sent: sentAt), group: player) }.get()
    let deadline = sentAt + 5_000_000_000
    while heard.withLock({ $0.isEmpty }) && MonotonicClock.nanoseconds() < deadline {
      try await Task.sleep(for: .milliseconds(10))
    }
    try await loops.next().submit { link.close() }.get()
    try await loops.shutdownGracefully()
    let first = try #require(heard.withLock { $0.first })
    #expect(first.message.body == .timeRequest(sent: sentAt))
    let arrivedAt = try #require(first.arrivedAt)
    #expect(
      arrivedAt >= sentAt && arrivedAt <= first.readAt, "sent \(sentAt), arrived \(arrivedAt), read \(first.readAt)")
  }
}
