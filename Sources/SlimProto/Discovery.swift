/// UDP discovery (port 3483): a TLV request `e` + tags, answered by `E` + tag/length/value items.
public enum DiscoveryTag: String, Sendable, CaseIterable {
  case ipAddress = "IPAD"
  case name = "NAME"
  case jsonPort = "JSON"
  case version = "VERS"
  case uuid = "UUID"
  case cliPort = "CLIP"
}

public struct DiscoveryRequest: Equatable, Sendable {
  public var tags: [DiscoveryTag]

  public init(tags: [DiscoveryTag] = [.ipAddress, .name, .jsonPort, .version, .uuid]) {
    self.tags = tags
  }

  /// Each requested tag travels with a zero length byte.
  public func encoded() -> [UInt8] {
    var writer = ByteWriter(capacity: 1 + 5 * tags.count)
    writer.u8(.ascii("e"))
    for tag in tags {
      writer.ascii(tag.rawValue)
      writer.u8(0)
    }
    return writer.bytes
  }
}

/// A server's discovery reply. Unknown tags are skipped.
public struct DiscoveryReply: Equatable, Sendable {
  public var ipAddress: String?
  public var name: String?
  public var jsonPort: Int?
  public var version: String?
  public var uuid: String?

  public init(
    ipAddress: String? = nil, name: String? = nil, jsonPort: Int? = nil, version: String? = nil,
    uuid: String? = nil
  ) {
    self.ipAddress = ipAddress
    self.name = name
    self.jsonPort = jsonPort
    self.version = version
    self.uuid = uuid
  }

  public init(parsing datagram: [UInt8]) throws(WireError) {
    var reader = ByteReader(datagram, message: "discovery reply")
    let marker = try reader.u8()
    guard marker == .ascii("E") else {
      throw .invalidField(message: "discovery reply", field: "marker", value: UInt32(marker))
    }
    while reader.remaining > 0 {
      let tag = String(decoding: try reader.bytes(4), as: UTF8.self)
      let length = Int(try reader.u8())
      let value = String(decoding: try reader.bytes(length), as: UTF8.self)
      switch DiscoveryTag(rawValue: tag) {
      case .ipAddress: ipAddress = value
      case .name: name = value
      case .jsonPort: jsonPort = Int(value)
      case .version: version = value
      case .uuid: uuid = value
      case .cliPort, nil: break
      }
    }
  }

  public func encoded() -> [UInt8] {
    var writer = ByteWriter()
    writer.u8(.ascii("E"))
    func item(_ tag: DiscoveryTag, _ value: String?) {
      guard let value else { return }
      let bytes = Array(value.utf8.prefix(255))
      writer.ascii(tag.rawValue)
      writer.u8(UInt8(bytes.count))
      writer.append(bytes)
    }
    item(.ipAddress, ipAddress)
    item(.name, name)
    item(.jsonPort, jsonPort.map(String.init))
    item(.version, version)
    item(.uuid, uuid)
    return writer.bytes
  }
}
