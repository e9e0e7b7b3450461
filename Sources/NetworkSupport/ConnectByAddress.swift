import NIOCore
import NIOPosix

extension ClientBootstrap {
  /// A numeric address is connected to directly: the name resolver would hand every connect to a
  /// thread of its own for `getaddrinfo`, even for an address that needs no lookup.
  public func connect(hostOrAddress host: String, port: Int) -> EventLoopFuture<any Channel> {
    if let address = try? SocketAddress(ipAddress: host, port: port) {
      return connect(to: address)
    }
    return connect(host: host, port: port)
  }
}
