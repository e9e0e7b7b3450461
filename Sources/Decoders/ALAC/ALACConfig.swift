/// Apple Lossless's decoder configuration (the 24-byte ALACSpecificConfig, "magic cookie").
struct ALACConfig: Equatable {
  var frameLength: Int
  var bitDepth: Int
  /// Rice coding: history multiplier, initial history, parameter limit.
  var pb: UInt32
  var mb: UInt32
  var kb: UInt32
  var channels: Int
  var sampleRate: Int

  /// The largest packet length accepted (frames a channel).
  static let maxFrameLength = 1 << 16

  /// From the cookie: bare, or behind an `alac` (and a QuickTime `frma`) atom header.
  init(cookie: [UInt8]) throws(DecodeError) {
    var start = 0
    func tag(_ at: Int) -> UInt32 {
      guard cookie.count >= at + 8 else { return 0 }
      return UInt32(cookie[at + 4]) << 24 | UInt32(cookie[at + 5]) << 16 | UInt32(cookie[at + 6]) << 8
        | UInt32(cookie[at + 7])
    }
    if tag(start) == FourCC("frma").value { start += 12 }
    if tag(start) == FourCC.alac.value { start += 12 }
    guard cookie.count >= start + 24 else {
      throw .corrupt("ALAC: configuration of \(cookie.count - start) bytes, 24 needed")
    }
    let c = Array(cookie[start..<start + 24])
    frameLength = Int(c[0]) << 24 | Int(c[1]) << 16 | Int(c[2]) << 8 | Int(c[3])
    guard c[4] == 0 else { throw .unsupportedStream("ALAC compatible version \(c[4])") }
    bitDepth = Int(c[5])
    pb = UInt32(c[6])
    mb = UInt32(c[7])
    kb = UInt32(c[8])
    channels = Int(c[9])
    sampleRate = Int(c[20]) << 24 | Int(c[21]) << 16 | Int(c[22]) << 8 | Int(c[23])
    guard [16, 20, 24, 32].contains(bitDepth) else { throw .unsupportedStream("ALAC bit depth \(bitDepth)") }
    guard (1...1_536_000).contains(sampleRate) else { throw .unsupportedStream("ALAC at \(sampleRate) Hz") }
    guard (1...8).contains(channels) else { throw .unsupportedStream("ALAC with \(channels) channels") }
    guard (1...Self.maxFrameLength).contains(frameLength) else {
      throw .unsupportedStream("ALAC frame length \(frameLength)")
    }
    guard (1...24).contains(kb) else { throw .unsupportedStream("ALAC Rice limit \(kb)") }
  }
}

/// Reads bits most significant first from a packet followed by at least 8 readable bytes
/// (`MP4Demuxer.slack`), so a load never needs a bounds check; running past the packet's end is
/// caught by the caller through `overran`.
struct ALACBitReader {
  private let bytes: UnsafePointer<UInt8>
  let bitCount: Int
  private(set) var position = 0

  init(_ packet: UnsafeRawBufferPointer) {
    bytes = packet.baseAddress!.assumingMemoryBound(to: UInt8.self)
    bitCount = packet.count * 8
  }

  var overran: Bool { position > bitCount }

  /// The next 32 bits, without consuming them (zeros past the packet once well beyond it).
  @inline(__always)
  func peek32() -> UInt32 {
    guard position < bitCount else { return 0 }
    let word = UInt64(bigEndian: UnsafeRawPointer(bytes + (position >> 3)).loadUnaligned(as: UInt64.self))
    return UInt32(truncatingIfNeeded: (word << UInt64(position & 7)) >> 32)
  }

  /// `count` bits (0…32) as an unsigned number.
  @inline(__always)
  mutating func read(_ count: Int) -> UInt32 {
    guard count > 0 else { return 0 }
    let value = peek32() >> UInt32(32 - count)
    position += count
    return value
  }

  @inline(__always)
  mutating func skip(_ count: Int) { position += count }

  mutating func seek(to bit: Int) { position = bit }

  mutating func alignToByte() { position = (position + 7) & ~7 }
}
