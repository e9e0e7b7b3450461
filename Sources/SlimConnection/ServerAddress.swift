/// A SlimProto server: host name or IPv4 address, and TCP port (3483 for LMS).
public struct ServerAddress: Hashable, Sendable, CustomStringConvertible {
  public static let defaultPort = 3483

  public var host: String
  public var port: Int

  public init(host: String, port: Int = ServerAddress.defaultPort) {
    self.host = host
    self.port = port
  }

  /// Parses `host` or `host:port`.
  public init?(parsing text: String, defaultPort: Int = ServerAddress.defaultPort) {
    let parts = text.split(separator: ":", omittingEmptySubsequences: false)
    switch parts.count {
    case 1 where !text.isEmpty:
      self.init(host: text, port: defaultPort)
    case 2 where !parts[0].isEmpty:
      guard let port = Int(parts[1]), (1...65535).contains(port) else { return nil }
      self.init(host: String(parts[0]), port: port)
    default:
      return nil
    }
  }

  /// An IPv4 address carried as a big-endian number (`strm` and `serv` fields).
  public init(ipv4 value: UInt32, port: Int) {
    let octets = [value >> 24, value >> 16 & 0xff, value >> 8 & 0xff, value & 0xff]
    self.init(host: octets.map(String.init).joined(separator: "."), port: port)
  }

  public var description: String { "\(host):\(port)" }
}
