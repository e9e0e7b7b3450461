import Synchronization

/// Where the player's server is, as the session learned it: the SlimProto address it is
/// connected to, its IPv4 address (what `strm` with server IP 0 means), and the HTTP port a
/// discovery reply named. Written by the session (and discovery) on the control loop; read by
/// the JSON-RPC client and the downloads from any loop.
public final class ServerLocation: Sendable {
  public struct Current: Equatable, Sendable {
    public var server: ServerAddress?
    /// The connected peer's IPv4 address as a big-endian number, as `strm` carries it.
    public var ipv4: UInt32?
    public var discoveredHTTPPort: Int?
  }

  private let current = Mutex(Current())

  public init() {}

  public var server: ServerAddress? { current.withLock { $0.server } }
  public var ipv4: UInt32? { current.withLock { $0.ipv4 } }
  public var discoveredHTTPPort: Int? {
    get { current.withLock { $0.discoveredHTTPPort } }
    set { current.withLock { $0.discoveredHTTPPort = newValue } }
  }

  func connected(to server: ServerAddress, ipv4: UInt32?) {
    current.withLock {
      $0.server = server
      $0.ipv4 = ipv4
    }
  }

  /// `a.b.c.d` as a big-endian number; nil for anything else.
  static func ipv4Number(_ text: String) -> UInt32? {
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 4 else { return nil }
    var value: UInt32 = 0
    for part in parts {
      guard let octet = UInt8(part) else { return nil }
      value = value << 8 | UInt32(octet)
    }
    return value
  }
}
