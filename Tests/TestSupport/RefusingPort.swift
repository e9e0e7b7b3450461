#if canImport(Glibc)
  import Glibc
#endif

/// A loopback TCP port that refuses every connection for as long as this lives: a socket bound to it
/// and never listening. Unlike a port bound and closed again, no one else can take it meanwhile (the
/// tests of a suite run side by side, each binding ports of its own).
public final class RefusingPort: Sendable {
  public let port: Int
  private let descriptor: Int32

  public init() throws(RefusingPortError) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw RefusingPortError(step: "socket", code: errno) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
        bind(fd, generic, length) == 0 && getsockname(fd, generic, &length) == 0
      }
    }
    guard bound else {
      let code = errno
      close(fd)
      throw RefusingPortError(step: "bind", code: code)
    }
    descriptor = fd
    port = Int(UInt16(bigEndian: address.sin_port))
  }

  deinit { close(descriptor) }
}

public struct RefusingPortError: Error {
  public let step: String
  public let code: Int32
}
