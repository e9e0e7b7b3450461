/// The chunks a DSDIFF file may keep after its audio (`DIIN`, `COMT`, `MANF`, `DSTI`, and the
/// unofficial but common `ID3 `), found where they begin.
///
/// After a seek LMS resends the file's header, whose `DSD ` chunk counts the whole file's audio,
/// then the file from the seek point to its end: the chunks after the audio come sooner than the
/// header says, and would play as noise. The audio ends on a frame boundary (the seek moves by
/// whole frames), so a chunk begins there: a known name, then a 64-bit size below 4 GiB (its
/// first four bytes zero), eight bytes that DSD audio at a frame boundary practically never
/// holds.
enum DSDIFFTrailingChunk {
  static let names: [FourCC] = [FourCC("DIIN"), FourCC("COMT"), FourCC("MANF"), FourCC("DSTI"), FourCC("ID3 ")]
  static let headerPrefix = 8

  enum Search: Equatable {
    /// No chunk begins in these bytes.
    case none
    /// A chunk begins at this offset.
    case found(Int)
    /// A frame near the end begins like a chunk's header: the bytes after these tell.
    case needsMore
  }

  /// Looks at each frame boundary of `bytes` (frames of `channels` bytes), reading on into
  /// `following` (what the stream holds after them; `atEnd` when nothing more will come).
  static func search(
    _ bytes: UnsafeBufferPointer<UInt8>, channels: Int, following: UnsafeBufferPointer<UInt8>, atEnd: Bool
  ) -> Search {
    func byte(_ index: Int) -> UInt8? {
      index < bytes.count
        ? bytes[index] : (index - bytes.count < following.count ? following[index - bytes.count] : nil)
    }
    var offset = 0
    while offset < bytes.count {
      defer { offset += channels }
      // Most frames fail on their first byte: every name starts with "C" to "M".
      guard bytes[offset] >= 0x43 && bytes[offset] <= 0x4D else { continue }
      for name in names {
        var known = 0
        var matches = true
        while matches, known < headerPrefix, let value = byte(offset + known) {
          let expected = known < 4 ? UInt8(truncatingIfNeeded: name.value >> (24 - 8 * UInt32(known))) : 0
          matches = value == expected
          known += 1
        }
        guard matches else { continue }
        if known == headerPrefix { return .found(offset) }
        if !atEnd { return .needsMore }
      }
    }
    return .none
  }
}
