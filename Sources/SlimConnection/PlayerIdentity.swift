import SlimProto
import Support

/// Picks the player's MAC: LMS keys everything on it, so it must not change between runs.
public enum MACAddressSource {
  /// The first non-loopback interface with a real (non-zero OUI) hardware address, by name order;
  /// else an address derived from the machine id, marked locally administered.
  public static func stableAddress(sysfsRoot: String = "/sys/class/net") -> MACAddress {
    if let address = interfaceAddress(sysfsRoot: sysfsRoot) { return address }
    let seed = FileIO.readText("/etc/machine-id") ?? FileIO.readText("/etc/hostname") ?? "slimplay"
    return derivedAddress(from: seed)
  }

  static func interfaceAddress(sysfsRoot: String) -> MACAddress? {
    for name in FileIO.entries(of: sysfsRoot).sorted() where name != "lo" {
      guard let text = FileIO.readText("\(sysfsRoot)/\(name)/address"),
        let address = MACAddress(text.trimmingWhitespace()),
        address.bytes[0..<3] != [0, 0, 0]
      else { continue }
      return address
    }
    return nil
  }

  /// FNV-1a over the seed, folded into six bytes, unicast and locally administered.
  public static func derivedAddress(from seed: String) -> MACAddress {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in seed.trimmingWhitespace().utf8 {
      hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
    }
    var bytes = (0..<6).map { UInt8(truncatingIfNeeded: hash >> (8 * $0)) }
    bytes[0] = (bytes[0] & 0xfe) | 0x02
    return MACAddress(bytes: bytes)!
  }
}

/// The player name: from `-n`, else the name file that `-N` (or the state folder) names. A name
/// set by the server is written back atomically, so it survives restarts.
public struct NameStore: Sendable {
  public let path: String?

  public init(path: String?) {
    self.path = path
  }

  public func load() -> String? {
    guard let path, let text = FileIO.readText(path) else { return nil }
    let name = text.trimmingWhitespace()
    return name.isEmpty ? nil : name
  }

  public func save(_ name: String) throws(FileIO.Failure) {
    guard let path else { return }
    FileIO.makeDirectories(FileIO.directoryName(of: path))
    try FileIO.writeAtomically(path, Array((name + "\n").utf8))
  }
}
