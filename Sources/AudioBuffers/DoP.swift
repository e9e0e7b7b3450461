/// DSD over PCM (DoP): each 24-bit sample carries a marker byte above 16 DSD bits of its channel,
/// the marker 0x05 and 0xFA in turn from frame to frame (the same on both channels). A DAC that
/// sees the markers alternate plays the 16 bits as DSD; anything else hears quiet noise.
///
/// Samples here are left-justified in 32 bits, as the pipeline carries 24-bit audio: the marker in
/// the top byte, the two DSD bytes (first in time above) below it, the low byte 0.
public enum DoP {
  public static let firstMarker: UInt8 = 0x05
  public static let secondMarker: UInt8 = 0xFA
  /// DSD's idle pattern: the payload of DoP silence, and what completes an odd last byte.
  public static let idleByte: UInt8 = 0x69

  /// One channel's sample: `marker`, then the DSD byte `earlier` played before `later`.
  @inlinable
  public static func sample(secondMarker useSecond: Bool, _ earlier: UInt8, _ later: UInt8) -> Int32 {
    let marker = UInt32(useSecond ? secondMarker : firstMarker)
    return Int32(bitPattern: marker << 24 | UInt32(earlier) << 16 | UInt32(later) << 8)
  }

  /// Sets the markers of interleaved stereo `samples`, the first frame's the second marker when
  /// `secondFirst`, and keeps their payload; returns the phase after them. A track does not know
  /// the phase the audio before it ended on, so the output stamps every DoP frame again with one
  /// running phase across tracks and silence.
  public static func stamp(_ samples: UnsafeMutableBufferPointer<Int32>, secondFirst: Bool) -> Bool {
    var useSecond = secondFirst
    var index = 0
    while index + 1 < samples.count {
      let marker = UInt32(useSecond ? secondMarker : firstMarker) << 24
      samples[index] = Int32(bitPattern: UInt32(bitPattern: samples[index]) & 0x00FF_FFFF | marker)
      samples[index + 1] = Int32(bitPattern: UInt32(bitPattern: samples[index + 1]) & 0x00FF_FFFF | marker)
      useSecond.toggle()
      index += 2
    }
    return useSecond
  }

  /// Fills interleaved stereo `buffer` with DoP silence, markers alternating from the first.
  public static func fillSilence(_ buffer: UnsafeMutableBufferPointer<Int32>) {
    let idle = sample(secondMarker: false, idleByte, idleByte)
    for index in 0..<buffer.count { buffer[index] = idle }
    _ = stamp(buffer, secondFirst: false)
  }
}

/// Native DSD's silence: the idle pattern in every byte of every sample.
public enum DSDSilence {
  public static let sample = Int32(bitPattern: 0x6969_6969)

  public static func fill(_ buffer: UnsafeMutableBufferPointer<Int32>) {
    for index in 0..<buffer.count { buffer[index] = sample }
  }
}
