import AudioBuffers
import AudioOutput
import Support
import Testing

extension PlaybackTests {
  /// An output holding one 16-bit stereo track of `frames` frames (44.1 kHz), none of them silent:
  /// a frame skipped or a silence inserted shows in what a device is given.
  static func soundingTrack(frames: Int = 1 << 15) throws -> FrameOutput {
    let output = FrameOutput(capacityFrames: 1 << 16)
    output.beginTrack(id: 1)
    let format = AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16)
    let samples = output.writableSamples()
    for index in 0..<samples.count { samples[index] = Int32(index % 1000 + 1) << 8 }
    try #require(output.commit(frames: frames, format: format))
    return output
  }

  /// `body` with a player of `output` on `device` whose output thread runs; shut down after it.
  static func withRunningPlayer(
    of output: FrameOutput, on device: any OutputDevice,
    onEvent: @escaping @Sendable (OutputEvent) -> Void = { _ in }, _ body: (OutputPlayer) throws -> Void
  ) rethrows {
    let player = OutputPlayer(output: output, device: device, consumed: Wakeup(), onEvent: onEvent)
    let thread = player.startThread()
    defer {
      player.shutDown()
      _ = thread.join(timeoutMilliseconds: 2000)
    }
    try body(player)
  }
}
