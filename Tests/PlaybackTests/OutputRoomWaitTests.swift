import AudioBuffers
import AudioOutput
import Support
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A device paced by the clock, as `-o -` on a deep pipe is: once it has taken its first chunk it
/// says room is far away, and it takes whatever it is given.
final class ClockPacedSink: OutputDevice, Sendable {
  let name = "clock-paced"
  let chunkFrames = 1024
  private let state = Mutex((isOpen: false, writes: 0, frames: 0))
  /// What it says it still holds of what it took.
  let queuedFrames: Int
  /// Whether a halt leaves what it holds to its reader, as a pipe does.
  let handsOver: Bool

  init(queuedFrames: Int = 0, handsOver: Bool = false) {
    self.queuedFrames = queuedFrames
    self.handsOver = handsOver
  }

  var isOpen: Bool { state.withLock { $0.isOpen } }
  let sampleRate = 44100
  var writes: Int { state.withLock { $0.writes } }
  var frames: Int { state.withLock { $0.frames } }

  func open(sampleRate: Int) throws(OutputError) { state.withLock { $0.isOpen = true } }
  func close() { state.withLock { $0.isOpen = false } }
  func write(_ samples: UnsafeBufferPointer<Int32>, dither: Bool) throws(OutputError) -> Int {
    state.withLock {
      $0.writes += 1
      $0.frames += samples.count / 2
    }
    return samples.count / 2
  }
  func nanosecondsUntilRoom(forFrames frames: Int) -> UInt64 {
    writes == 0 ? 0 : 60_000_000_000
  }
  func delayFrames() -> Int { queuedFrames }
  func discardQueued() {}
  func playOutQueued() {}
  func handOverQueued() -> Bool { handsOver }
}

extension PlaybackTests {
  /// Nested in the serialized playback suite: its output thread must not run while the pipeline
  /// life-cycle tests count the process's threads.
  @Suite("Output room wait")
  struct OutputRoomWait {
    /// The output waits for room where a command can end the wait: a pause that comes while it
    /// waits is applied before anything more is written (a pipe is taken back at the pause; a
    /// chunk written after it would be heard, and the paused position would move).
    @Test func aPauseThatComesWhileTheOutputWaitsForRoomIsAppliedBeforeAnotherWrite() throws {
      let sink = ClockPacedSink()
      let (player, thread) = playing(into: sink)
      defer {
        player.shutDown()
        _ = thread.join(timeoutMilliseconds: 2000)
      }
      // Long enough for the output to be in its wait (it has nothing else to do); a wake-up left
      // over from the start may have let one more chunk through first.
      usleep(100_000)
      let writesBeforePause = sink.writes
      #expect(writesBeforePause <= 2)
      player.pause()
      #expect(eventually(within: 2) { !player.currentPosition().isRunning && player.currentPosition().trackID == 1 })
      #expect(sink.writes == writesBeforePause, "nothing written after the pause")
      #expect(sink.frames == writesBeforePause * sink.chunkFrames)
    }

    /// Halted (the first step of a shutdown), the output's position stops running with the clock.
    /// A sound card's is what it took, measured: a reader slower than the clock is not credited with
    /// frames it never took. A pipe's reader gets what the pipe holds after the halt (nothing takes
    /// it back): that counts as heard, so the position saved is what the reader will have had.
    @Test(arguments: [false, true])
    func aHaltedOutputsPositionIsWhatItsReaderGetsAndStaysThere(handsOver: Bool) throws {
      let sink = ClockPacedSink(queuedFrames: 441, handsOver: handsOver)
      let (player, thread) = playing(into: sink)
      defer {
        player.shutDown()
        _ = thread.join(timeoutMilliseconds: 2000)
      }
      #expect(player.halt())
      let position = player.currentPosition()
      #expect(!position.isRunning)
      #expect(position.trackID == 1)
      let heard = handsOver ? sink.frames : sink.frames - sink.queuedFrames
      let later = MonotonicClock.nanoseconds() + 5_000_000_000
      #expect(position.elapsedMilliseconds(at: later) == (heard * 1000 + 22050) / 44100)
    }

    /// An output player on its thread, playing 8192 frames of track 1 into `sink`, once the sink
    /// has taken its first chunk.
    private func playing(into sink: ClockPacedSink) -> (OutputPlayer, RealtimeThread) {
      let output = FrameOutput(capacityFrames: 1 << 15)
      output.beginTrack(id: 1)
      let format = AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16)
      let samples = output.writableSamples()
      for index in 0..<samples.count { samples[index] = Int32(index) << 8 }
      #expect(output.commit(frames: 8192, format: format))
      let player = OutputPlayer(output: output, device: sink, consumed: Wakeup()) { _ in }
      let thread = player.startThread()
      player.start(.now)
      #expect(eventually(within: 2) { sink.writes >= 1 })
      return (player, thread)
    }
  }
}
