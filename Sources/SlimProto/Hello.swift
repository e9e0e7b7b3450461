import Support

/// HELO: the player introduces itself. Always the full 36-byte header, then the capabilities.
public struct Hello: Equatable, Sendable {
  /// 12 = squeezeplay, the device class whose capabilities string LMS parses.
  public static let squeezePlayDeviceID: UInt8 = 12
  /// wlan_channellist bit 14: the player kept its stream and buffers across the reconnect.
  public static let reconnectBit: UInt16 = 0x4000

  public var deviceID: UInt8
  public var revision: UInt8
  public var mac: MACAddress
  public var uuid: [UInt8]
  public var wlanChannelList: UInt16
  /// Bytes received so far of the current stream.
  public var bytesReceived: UInt64
  public var language: [UInt8]
  public var capabilities: String

  public init(
    deviceID: UInt8 = Hello.squeezePlayDeviceID, revision: UInt8 = 0, mac: MACAddress,
    uuid: [UInt8] = Array(repeating: 0, count: 16), isReconnect: Bool, bytesReceived: UInt64,
    language: [UInt8] = [0, 0], capabilities: String
  ) {
    self.deviceID = deviceID
    self.revision = revision
    self.mac = mac
    self.uuid = uuid
    self.wlanChannelList = isReconnect ? Hello.reconnectBit : 0
    self.bytesReceived = bytesReceived
    self.language = language
    self.capabilities = capabilities
  }

  public var isReconnect: Bool { wlanChannelList & Hello.reconnectBit != 0 }

  public init(parsing payload: [UInt8]) throws(WireError) {
    var reader = ByteReader(payload, message: "HELO")
    deviceID = try reader.u8()
    revision = try reader.u8()
    mac = MACAddress(bytes: try reader.bytes(6))!
    uuid = try reader.bytes(16)
    wlanChannelList = try reader.u16()
    bytesReceived = try reader.u64()
    language = try reader.bytes(2)
    capabilities = String(decoding: reader.rest(), as: UTF8.self)
  }

  public func encoded() -> [UInt8] {
    var writer = ByteWriter(capacity: 36 + capabilities.utf8.count)
    writer.u8(deviceID)
    writer.u8(revision)
    writer.append(mac.bytes)
    writer.append(uuid.prefix(16))
    writer.append(repeatElement(0, count: max(0, 16 - uuid.count)))
    writer.u16(wlanChannelList)
    writer.u64(bytesReceived)
    writer.append(language.prefix(2))
    writer.append(repeatElement(0, count: max(0, 2 - language.count)))
    writer.ascii(capabilities)
    return writer.bytes
  }
}

/// A player's 6-byte hardware address, which LMS uses as the player id.
public struct MACAddress: Hashable, Sendable, CustomStringConvertible {
  public let bytes: [UInt8]

  public init?(bytes: [UInt8]) {
    guard bytes.count == 6 else { return nil }
    self.bytes = bytes
  }

  /// Parses `aa:bb:cc:dd:ee:ff` (also with `-` separators).
  public init?(_ text: String) {
    let parts = text.split(whereSeparator: { $0 == ":" || $0 == "-" })
    guard parts.count == 6 else { return nil }
    var bytes: [UInt8] = []
    for part in parts {
      guard part.count == 2, let byte = UInt8(part, radix: 16) else { return nil }
      bytes.append(byte)
    }
    self.bytes = bytes
  }

  public var description: String {
    bytes.map { Hex.string($0, width: 2) }.joined(separator: ":")
  }

  public var isZero: Bool { bytes.allSatisfy { $0 == 0 } }
}
