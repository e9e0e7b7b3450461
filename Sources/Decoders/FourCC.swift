/// A four-character code (a chunk's or box's name in WAV, AIFF, DSF, DSDIFF and MP4) as a
/// big-endian number, for cheap comparison.
struct FourCC: Hashable, CustomStringConvertible {
  let value: UInt32

  init(_ text: StaticString) {
    precondition(text.utf8CodeUnitCount == 4)
    let p = text.utf8Start
    value = UInt32(p[0]) << 24 | UInt32(p[1]) << 16 | UInt32(p[2]) << 8 | UInt32(p[3])
  }

  init(value: UInt32) {
    self.value = value
  }

  /// The four characters, or the number in hex when one is not printable (foreign input in a log).
  var description: String {
    let scalars = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) }
    if scalars.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return String(decoding: scalars, as: UTF8.self) }
    return "0x" + String(value, radix: 16)
  }
}
