/// Reads big-endian fields from a message payload, throwing `WireError.truncated` past the end.
/// Shared with the package's other wire protocol (the sync group's LAN messages).
package struct ByteReader {
  private let bytes: ArraySlice<UInt8>
  package private(set) var position: Int
  package let message: String

  package init(_ bytes: ArraySlice<UInt8>, message: String) {
    self.bytes = bytes
    self.position = bytes.startIndex
    self.message = message
  }

  package init(_ bytes: [UInt8], message: String) {
    self.init(bytes[...], message: message)
  }

  package var remaining: Int { bytes.endIndex - position }
  package var offset: Int { position - bytes.startIndex }

  private mutating func take(_ count: Int) throws(WireError) -> ArraySlice<UInt8> {
    guard count <= remaining else {
      throw .truncated(message: message, needed: offset + count, available: bytes.count)
    }
    defer { position += count }
    return bytes[position..<position + count]
  }

  package mutating func u8() throws(WireError) -> UInt8 {
    try take(1).first!
  }

  package mutating func u16() throws(WireError) -> UInt16 {
    let s = try take(2)
    return UInt16(s[s.startIndex]) << 8 | UInt16(s[s.startIndex + 1])
  }

  package mutating func u32() throws(WireError) -> UInt32 {
    var value: UInt32 = 0
    for byte in try take(4) { value = value << 8 | UInt32(byte) }
    return value
  }

  /// A 64-bit count sent as two 32-bit words, high word first.
  package mutating func u64() throws(WireError) -> UInt64 {
    let high = try u32()
    let low = try u32()
    return UInt64(high) << 32 | UInt64(low)
  }

  package mutating func bytes(_ count: Int) throws(WireError) -> [UInt8] {
    Array(try take(count))
  }

  package mutating func rest() -> [UInt8] {
    defer { position = bytes.endIndex }
    return Array(bytes[position...])
  }
}

/// Appends big-endian fields to a byte array.
package struct ByteWriter {
  package var bytes: [UInt8] = []

  package init(capacity: Int = 64) {
    bytes.reserveCapacity(capacity)
  }

  package mutating func u8(_ value: UInt8) { bytes.append(value) }

  package mutating func u16(_ value: UInt16) {
    bytes.append(UInt8(value >> 8))
    bytes.append(UInt8(truncatingIfNeeded: value))
  }

  package mutating func u32(_ value: UInt32) {
    bytes.append(UInt8(value >> 24))
    bytes.append(UInt8(truncatingIfNeeded: value >> 16))
    bytes.append(UInt8(truncatingIfNeeded: value >> 8))
    bytes.append(UInt8(truncatingIfNeeded: value))
  }

  package mutating func u64(_ value: UInt64) {
    u32(UInt32(truncatingIfNeeded: value >> 32))
    u32(UInt32(truncatingIfNeeded: value))
  }

  package mutating func append<S: Sequence>(_ data: S) where S.Element == UInt8 {
    bytes.append(contentsOf: data)
  }

  package mutating func ascii(_ text: String) {
    bytes.append(contentsOf: text.utf8)
  }
}

extension UInt8 {
  /// The ASCII code of a one-character string literal, for code tables.
  static func ascii(_ character: Unicode.Scalar) -> UInt8 { UInt8(character.value) }
}
