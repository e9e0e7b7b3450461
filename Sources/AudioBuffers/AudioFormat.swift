/// The PCM format of a decoded track, as its decoder found it.
public struct AudioFormat: Equatable, Sendable, CustomStringConvertible {
  public var sampleRate: Int
  public var channels: Int
  /// Significant bits of the source samples (16, 24…), before the move to 32-bit frames.
  public var bitsPerSample: Int
  /// The track's own rate when its frames were resampled to `sampleRate` (`-R`).
  public var resampledFrom: Int?
  /// What the frames carry: PCM, or DSD bits (see `SampleEncoding`).
  public var encoding: SampleEncoding

  public init(
    sampleRate: Int, channels: Int, bitsPerSample: Int, resampledFrom: Int? = nil, encoding: SampleEncoding = .pcm
  ) {
    self.sampleRate = sampleRate
    self.channels = channels
    self.bitsPerSample = bitsPerSample
    self.resampledFrom = resampledFrom
    self.encoding = encoding
  }

  public var description: String {
    let carried =
      switch encoding {
      case .pcm: ""
      case .dop: " DoP"
      case .dsd(let format): " native \(format.alsaName)"
      }
    return "\(bitsPerSample)-bit \(sampleRate) Hz \(channels == 1 ? "mono" : "\(channels) ch")"
      + (resampledFrom.map { " (resampled from \($0) Hz)" } ?? "") + carried
  }
}

/// What a track's 32-bit samples carry.
public enum SampleEncoding: Equatable, Sendable {
  case pcm
  /// DSD over PCM (see `DoP`).
  case dop
  /// Native DSD for a DAC that takes it as such (see `NativeDSDFormat`).
  case dsd(NativeDSDFormat)

  /// The samples are bits for a DAC: nothing on the way may touch them (no gain, no fade, no
  /// dither, no resampling), and silence is DSD's idle pattern, not zeros.
  public var isBitstream: Bool { self != .pcm }

  /// The native DSD format, for `.dsd`.
  public var nativeDSD: NativeDSDFormat? {
    if case .dsd(let format) = self { format } else { nil }
  }
}

/// ALSA's native DSD formats (squeezelite's `-D :u8|u16le|u16be|u32le|u32be`). A sample carries
/// `bytesPerSample` DSD bytes of its channel, the one first in time in its most significant byte;
/// the frame rate is the DSD rate / (8 × bytesPerSample). In the output ring a sample is
/// left-justified in 32 bits, as PCM is: those bytes on top, the rest 0.
public enum NativeDSDFormat: String, Equatable, Sendable, CaseIterable {
  case u8, u16le, u16be, u32le, u32be

  public var bytesPerSample: Int {
    switch self {
    case .u8: 1
    case .u16le, .u16be: 2
    case .u32le, .u32be: 4
    }
  }

  /// The format's ALSA name (`DSD_U32_BE`…).
  public var alsaName: String {
    switch self {
    case .u8: "DSD_U8"
    case .u16le: "DSD_U16_LE"
    case .u16be: "DSD_U16_BE"
    case .u32le: "DSD_U32_LE"
    case .u32be: "DSD_U32_BE"
    }
  }

  /// The frame rate that carries DSD at `dsdRate` bits per second per channel.
  public func frameRate(dsdRate: Int) -> Int { dsdRate / (8 * bytesPerSample) }
}

/// Frames in the output ring: interleaved stereo 32-bit signed samples, left-justified (a 16-bit
/// sample s is stored as s << 16), 8 bytes per frame, whatever the source.
public enum OutputFrames {
  public static let bytesPerFrame = 8
  public static let samplesPerFrame = 2
}
