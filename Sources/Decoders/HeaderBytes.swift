import AudioBuffers

/// The first bytes of a container header or chunk, gathered from the stream until enough have
/// arrived, then read as fields. The containers of uncompressed audio (WAV, AIFF, DSF, DSDIFF) are
/// parsed a piece at a time through one of these: never more than `capacity` bytes at once.
final class HeaderBytes {
  static let capacity = 64

  let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: HeaderBytes.capacity)
  /// Bytes gathered since the last `reset`.
  private(set) var count = 0

  deinit { bytes.deallocate() }

  func reset() { count = 0 }

  /// Reads until `wanted` bytes (at most `capacity`) are held: true when they are, false while the
  /// stream has none yet. A stream that ends first is `corrupt` ("stream ended inside the
  /// `where`"), or, with `partialAtEnd`, accepted with fewer bytes.
  func collect(
    _ wanted: Int, from input: StreamInput, partialAtEnd: Bool = false, inside where: @autoclosure () -> String
  ) throws(DecodeError) -> Bool {
    precondition(wanted <= Self.capacity)
    while count < wanted {
      let ended = input.hasEnded  // sampled before the read: 0 bytes after it means exhausted
      let n = input.read(into: UnsafeMutableRawBufferPointer(start: bytes + count, count: wanted - count))
      if n == 0 {
        guard ended else { return false }
        if partialAtEnd { return true }
        throw .corrupt("stream ended inside the \(`where`())")
      }
      count += n
    }
    return true
  }

  subscript(offset: Int) -> UInt8 { bytes[offset] }

  /// Four bytes as a chunk name.
  func fourCC(_ offset: Int) -> FourCC { FourCC(value: bigEndian32(offset)) }

  func littleEndian16(_ offset: Int) -> UInt16 { UInt16(truncatingIfNeeded: littleEndian(offset, 2)) }
  func littleEndian32(_ offset: Int) -> UInt32 { UInt32(truncatingIfNeeded: littleEndian(offset, 4)) }
  func littleEndian64(_ offset: Int) -> UInt64 { littleEndian(offset, 8) }
  func bigEndian16(_ offset: Int) -> UInt16 { UInt16(truncatingIfNeeded: bigEndian(offset, 2)) }
  func bigEndian32(_ offset: Int) -> UInt32 { UInt32(truncatingIfNeeded: bigEndian(offset, 4)) }
  func bigEndian64(_ offset: Int) -> UInt64 { bigEndian(offset, 8) }

  private func littleEndian(_ offset: Int, _ width: Int) -> UInt64 {
    var value: UInt64 = 0
    for i in 0..<width { value |= UInt64(bytes[offset + i]) << (8 * i) }
    return value
  }

  private func bigEndian(_ offset: Int, _ width: Int) -> UInt64 {
    var value: UInt64 = 0
    for i in 0..<width { value = value << 8 | UInt64(bytes[offset + i]) }
    return value
  }
}
