/// A bounds-checked big-endian cursor over bytes of an MP4 file (the `moov` box, a descriptor).
/// Every read past the end throws `.corrupt` naming what was being read, so a truncated or
/// damaged index fails with a clear reason instead of a crash.
struct MP4Reader {
  let bytes: UnsafeRawBufferPointer
  private(set) var position = 0

  init(_ bytes: UnsafeRawBufferPointer) {
    self.bytes = bytes
  }

  var remaining: Int { bytes.count - position }
  var isAtEnd: Bool { position >= bytes.count }

  private func need(_ count: Int, _ what: String) throws(DecodeError) {
    guard count >= 0, count <= remaining else {
      throw .corrupt("MP4: \(what) runs past its box (\(count) bytes wanted, \(remaining) left)")
    }
  }

  mutating func u8(_ what: String) throws(DecodeError) -> UInt8 {
    try need(1, what)
    defer { position += 1 }
    return bytes[position]
  }

  mutating func u16(_ what: String) throws(DecodeError) -> UInt16 {
    try need(2, what)
    defer { position += 2 }
    return UInt16(bytes[position]) << 8 | UInt16(bytes[position + 1])
  }

  mutating func u32(_ what: String) throws(DecodeError) -> UInt32 {
    try need(4, what)
    defer { position += 4 }
    return MP4Reader.u32(bytes, at: position)
  }

  mutating func u64(_ what: String) throws(DecodeError) -> UInt64 {
    let high = try u32(what)
    let low = try u32(what)
    return UInt64(high) << 32 | UInt64(low)
  }

  mutating func skip(_ count: Int, _ what: String) throws(DecodeError) {
    try need(count, what)
    position += count
  }

  /// The next `count` bytes as a slice (no copy).
  mutating func slice(_ count: Int, _ what: String) throws(DecodeError) -> UnsafeRawBufferPointer {
    try need(count, what)
    defer { position += count }
    return UnsafeRawBufferPointer(rebasing: bytes[position..<position + count])
  }

  static func u32(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
    UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
      | UInt32(bytes[offset + 3])
  }
}

/// The MP4 boxes the demuxer reads.
extension FourCC {
  static let ftyp = FourCC("ftyp"), moov = FourCC("moov"), mdat = FourCC("mdat"), trak = FourCC("trak")
  static let mvhd = FourCC("mvhd"), mdia = FourCC("mdia"), mdhd = FourCC("mdhd"), hdlr = FourCC("hdlr")
  static let minf = FourCC("minf"), stbl = FourCC("stbl"), stsd = FourCC("stsd"), stsz = FourCC("stsz")
  static let stz2 = FourCC("stz2"), stsc = FourCC("stsc"), stco = FourCC("stco"), co64 = FourCC("co64")
  static let edts = FourCC("edts"), elst = FourCC("elst"), udta = FourCC("udta"), meta = FourCC("meta")
  static let ilst = FourCC("ilst"), freeform = FourCC("----"), name = FourCC("name"), data = FourCC("data")
  static let mp4a = FourCC("mp4a"), alac = FourCC("alac"), esds = FourCC("esds"), wave = FourCC("wave")
  static let soun = FourCC("soun"), uuid = FourCC("uuid")
}

/// One box inside a parent's payload: its type and its payload (header excluded).
struct MP4Box {
  let type: FourCC
  let payload: UnsafeRawBufferPointer

  /// The boxes that make up `bytes`, in order. A size that overruns the parent throws.
  static func children(of bytes: UnsafeRawBufferPointer, in parent: String) throws(DecodeError) -> [MP4Box] {
    var reader = MP4Reader(bytes)
    var boxes: [MP4Box] = []
    while reader.remaining >= 8 {
      let size32 = try reader.u32("box size in \(parent)")
      let type = FourCC(value: try reader.u32("box type in \(parent)"))
      var headerSize = 8
      var size: UInt64 = UInt64(size32)
      if size32 == 1 {
        size = try reader.u64("large box size in \(parent)")
        headerSize = 16
      } else if size32 == 0 {
        size = UInt64(reader.remaining + 8)  // to the end of the parent
      }
      guard size >= UInt64(headerSize), size - UInt64(headerSize) <= UInt64(reader.remaining) else {
        throw .corrupt("MP4: box '\(type)' in \(parent) claims \(size) bytes, \(reader.remaining + headerSize) left")
      }
      boxes.append(MP4Box(type: type, payload: try reader.slice(Int(size) - headerSize, "'\(type)' in \(parent)")))
    }
    return boxes
  }

  static func first(_ type: FourCC, in boxes: [MP4Box]) -> MP4Box? {
    boxes.first { $0.type == type }
  }
}
