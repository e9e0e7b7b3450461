import AudioBuffers

/// Device sample formats, in the order the output probes them.
public enum SampleFormat: String, Sendable, CaseIterable {
  case s32 = "S32_LE"
  case s24 = "S24_LE"  // 24 bits in the low three bytes of a 32-bit word
  case s24_3 = "S24_3LE"  // 24 bits packed in three bytes
  case s16 = "S16_LE"

  public var bytesPerSample: Int {
    switch self {
    case .s32, .s24: 4
    case .s24_3: 3
    case .s16: 2
    }
  }

  public var bytesPerFrame: Int { 2 * bytesPerSample }
}

/// Converts 32-bit left-justified frames to a device format. At unity gain the conversion only
/// drops bits that a 16- or 24-bit source never had, so the output is bit-exact. With gain the low
/// bits carry information: going to 16 bits then uses TPDF dither instead of truncation.
///
/// With `nativeDSD` set the frames are native DSD (see `NativeDSDFormat`) and are packed in that
/// format's byte order instead: the top byte of each sample, the top two or all four.
public struct SamplePacker: Sendable {
  public let format: SampleFormat
  public let nativeDSD: NativeDSDFormat?
  private var random: UInt32 = 0x1234_5678

  public init(format: SampleFormat, nativeDSD: NativeDSDFormat? = nil) {
    self.format = format
    self.nativeDSD = nativeDSD
  }

  public var bytesPerSample: Int { nativeDSD?.bytesPerSample ?? format.bytesPerSample }
  public var bytesPerFrame: Int { 2 * bytesPerSample }

  /// Packs `samples` (interleaved stereo) into `destination`; returns bytes written.
  public mutating func pack(
    _ samples: UnsafeBufferPointer<Int32>, into destination: UnsafeMutableRawBufferPointer, dither: Bool
  ) -> Int {
    let count = samples.count
    precondition(destination.count >= count * bytesPerSample)
    let out = destination.baseAddress!
    if let nativeDSD {
      Self.packDSD(samples, as: nativeDSD, into: out)
      return count * nativeDSD.bytesPerSample
    }
    switch format {
    case .s32:
      for i in 0..<count { out.storeBytes(of: samples[i].littleEndian, toByteOffset: i * 4, as: Int32.self) }
    case .s24:
      for i in 0..<count { out.storeBytes(of: (samples[i] >> 8).littleEndian, toByteOffset: i * 4, as: Int32.self) }
    case .s24_3:
      let bytes = out.assumingMemoryBound(to: UInt8.self)
      for i in 0..<count {
        let value = UInt32(bitPattern: samples[i]) >> 8
        bytes[i * 3] = UInt8(truncatingIfNeeded: value)
        bytes[i * 3 + 1] = UInt8(truncatingIfNeeded: value >> 8)
        bytes[i * 3 + 2] = UInt8(truncatingIfNeeded: value >> 16)
      }
    case .s16:
      if dither {
        for i in 0..<count {
          out.storeBytes(of: ditheredTo16(samples[i]).littleEndian, toByteOffset: i * 2, as: Int16.self)
        }
      } else {
        for i in 0..<count {
          out.storeBytes(
            of: Int16(truncatingIfNeeded: samples[i] >> 16).littleEndian, toByteOffset: i * 2, as: Int16.self)
        }
      }
    }
    return count * format.bytesPerSample
  }

  /// ALSA's DSD formats hold the first DSD byte in time in the most significant byte of the
  /// sample, stored in the format's byte order.
  private static func packDSD(
    _ samples: UnsafeBufferPointer<Int32>, as native: NativeDSDFormat, into out: UnsafeMutableRawPointer
  ) {
    switch native {
    case .u32le:
      for i in 0..<samples.count { out.storeBytes(of: samples[i].littleEndian, toByteOffset: i * 4, as: Int32.self) }
    case .u32be:
      for i in 0..<samples.count { out.storeBytes(of: samples[i].bigEndian, toByteOffset: i * 4, as: Int32.self) }
    case .u16le:
      for i in 0..<samples.count {
        out.storeBytes(
          of: UInt16(truncatingIfNeeded: samples[i] >> 16).littleEndian, toByteOffset: i * 2, as: UInt16.self)
      }
    case .u16be:
      for i in 0..<samples.count {
        out.storeBytes(of: UInt16(truncatingIfNeeded: samples[i] >> 16).bigEndian, toByteOffset: i * 2, as: UInt16.self)
      }
    case .u8:
      let bytes = out.assumingMemoryBound(to: UInt8.self)
      for i in 0..<samples.count { bytes[i] = UInt8(truncatingIfNeeded: samples[i] >> 24) }
    }
  }

  /// Triangular dither of ±1 LSB at 16 bits (the sum of two uniform values), then rounding.
  private mutating func ditheredTo16(_ sample: Int32) -> Int16 {
    let noise = Int64(nextRandom() >> 16) + Int64(nextRandom() >> 16) - 65535
    let value = (Int64(sample) + noise + 0x8000) >> 16
    return Int16(clamping: value)
  }

  /// xorshift32: cheap, allocation-free, good enough for dither.
  private mutating func nextRandom() -> UInt32 {
    random ^= random << 13
    random ^= random >> 17
    random ^= random << 5
    return random
  }
}
