import AudioBuffers
import AudioOutput
import Support
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

extension PlaybackTests {
  /// A sync group's member moves what it plays by whole frames to keep its leader's time
  /// (`OutputPlayer.nudge`): later by inserting silence, earlier by skipping.
  @Suite("Output nudge")
  struct OutputNudge {
    static let trackFrames = 1 << 15

    func withPlayer(on sink: ReaderPacedSink, _ body: (OutputPlayer) throws -> Void) throws {
      try PlaybackTests.withRunningPlayer(of: try PlaybackTests.soundingTrack(frames: Self.trackFrames), on: sink) {
        player in
        player.start(.now)
        try body(player)
      }
    }

    /// The reader takes everything the player writes until `done` holds or 2 s pass.
    func read(_ sink: ReaderPacedSink, until done: () -> Bool) -> Bool {
      eventually(within: 2) {
        sink.read(sink.capacityFrames)
        return done()
      }
    }

    @Test func aLaterNudgeInsertsItsSilenceBeforeWhatIsStillToPlay() throws {
      let sink = ReaderPacedSink()
      try withPlayer(on: sink) { player in
        #expect(eventually(within: 2) { sink.heldFrames == sink.capacityFrames })
        player.nudge(frames: 19)
        #expect(read(sink) { sink.writtenFrames >= Self.trackFrames + 19 })
        usleep(100_000)
        sink.read(sink.capacityFrames)
        #expect(sink.writtenFrames == Self.trackFrames + 19)
      }
    }

    /// A correction that comes once the whole queue is in the device has nothing left to delay:
    /// written after the last frame it would only lengthen the stream (a pipe's reader would get
    /// silence after the album).
    @Test func aLaterNudgeAfterTheLastFrameWasWrittenAddsNothing() throws {
      let sink = ReaderPacedSink()
      try withPlayer(on: sink) { player in
        #expect(read(sink) { sink.writtenFrames == Self.trackFrames })
        player.nudge(frames: 19)
        usleep(200_000)
        sink.read(sink.capacityFrames)
        usleep(100_000)
        #expect(sink.writtenFrames == Self.trackFrames, "\(sink.writtenFrames - Self.trackFrames) frames after the end")
      }
    }

    /// A skip asked once the last frame was written has nothing to skip: the output runs dry and
    /// the next track, queued later, starts from its first frame.
    @Test func anEarlierNudgeAfterTheLastFrameDoesNotCutTheNextTrack() throws {
      let sink = ReaderPacedSink()
      let output = try PlaybackTests.soundingTrack(frames: Self.trackFrames)
      let player = OutputPlayer(output: output, device: sink, consumed: Wakeup()) { _ in }
      let thread = player.startThread()
      defer {
        player.shutDown()
        _ = thread.join(timeoutMilliseconds: 2000)
      }
      player.start(.now)
      #expect(read(sink) { sink.writtenFrames == Self.trackFrames })
      player.nudge(frames: -19)
      usleep(300_000)  // the output runs dry meanwhile
      sink.read(sink.capacityFrames)
      output.beginTrack(id: 2)
      let format = AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16)
      let samples = output.writableSamples()
      for index in 0..<2048 { samples[index] = Int32(index + 1) << 8 }
      try #require(output.commit(frames: 1024, format: format))
      player.framesAvailable()
      #expect(read(sink) { sink.writtenFrames >= Self.trackFrames + 1024 })
      #expect(
        sink.writtenFrames == Self.trackFrames + 1024, "\(Self.trackFrames + 1024 - sink.writtenFrames) frames skipped")
    }
  }
}
