/// The PCM format of a decoded track, as its decoder found it.
public struct AudioFormat: Equatable, Sendable, CustomStringConvertible {
  public var sampleRate: Int
  public var channels: Int
  /// Significant bits of the source samples (16, 24…), before the move to 32-bit frames.
  public var bitsPerSample: Int
  /// The track's own rate when its frames were resampled to `sampleRate` (`-R`).
  public var resampledFrom: Int?
  /// The frames are DSD over PCM (DoP): a DAC reads the bits back, so nothing on the way may touch
  /// them (no gain, no fade, no dither, no resampling).
  public var dop: Bool

  public init(sampleRate: Int, channels: Int, bitsPerSample: Int, resampledFrom: Int? = nil, dop: Bool = false) {
    self.sampleRate = sampleRate
    self.channels = channels
    self.bitsPerSample = bitsPerSample
    self.resampledFrom = resampledFrom
    self.dop = dop
  }

  public var description: String {
    "\(bitsPerSample)-bit \(sampleRate) Hz \(channels == 1 ? "mono" : "\(channels) ch")"
      + (resampledFrom.map { " (resampled from \($0) Hz)" } ?? "") + (dop ? " DoP" : "")
  }
}

/// Frames in the output ring: interleaved stereo 32-bit signed samples, left-justified (a 16-bit
/// sample s is stored as s << 16), 8 bytes per frame, whatever the source.
public enum OutputFrames {
  public static let bytesPerFrame = 8
  public static let samplesPerFrame = 2
}
