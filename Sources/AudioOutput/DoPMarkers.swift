/// DoP's marker byte (the top byte of each 24-bit sample) alternates 0x05, 0xFA frame by frame,
/// the same on both channels; a DAC that sees it alternate plays the other 16 bits as DSD. The
/// decoder writes markers, but a track does not know the parity the track or the silence before it
/// ended on: the output stamps them again with one running phase across DoP tracks and their
/// silence, so that the alternation never breaks (as squeezelite does at its output).
enum DoPMarkers {
  static let first: UInt32 = 0x05
  static let second: UInt32 = 0xFA
  /// DSD's idle pattern, the payload of DoP silence.
  static let idlePayload: UInt32 = 0x69_6900

  /// Sets the markers of interleaved stereo `samples`, the first frame's `second` when
  /// `secondFirst`; returns the phase after them.
  static func stamp(_ samples: UnsafeMutableBufferPointer<Int32>, secondFirst: Bool) -> Bool {
    var useSecond = secondFirst
    var index = 0
    while index + 1 < samples.count {
      let marker = (useSecond ? second : first) << 24
      samples[index] = Int32(bitPattern: UInt32(bitPattern: samples[index]) & 0x00FF_FFFF | marker)
      samples[index + 1] = Int32(bitPattern: UInt32(bitPattern: samples[index + 1]) & 0x00FF_FFFF | marker)
      useSecond.toggle()
      index += 2
    }
    return useSecond
  }

  /// Fills `buffer` with DoP silence, markers alternating from `first`.
  static func fillSilence(_ buffer: UnsafeMutableBufferPointer<Int32>) {
    for index in 0..<buffer.count { buffer[index] = Int32(bitPattern: idlePayload) }
    _ = stamp(buffer, secondFirst: false)
  }
}
