import AudioBuffers
import AudioOutput
import Support
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A sound card in memory: it plays what it holds at 44.1 kHz from its first write, holds at most
/// `bufferFrames` (a write waits for room, as ALSA's does), and its delay is what it holds and has
/// not played yet; or, for `unsettledNanoseconds` after its first write, everything written (a
/// sound server's stream as it starts).
final class ClockedSink: OutputDevice, Sendable {
  let name = "clocked"
  let chunkFrames = 512
  let bufferFrames = 4096
  let sampleRate = 44100
  let unsettledNanoseconds: UInt64

  init(unsettledNanoseconds: UInt64 = 0) {
    self.unsettledNanoseconds = unsettledNanoseconds
  }

  private struct State {
    var isOpen = false
    var firstWrite: UInt64?
    var audioFrames = 0
    var frames = 0
  }
  private let state = Mutex(State())

  var isOpen: Bool { state.withLock { $0.isOpen } }
  var isClocked: Bool { true }
  /// Frames written that carry sound (the rest is the silence written while paused).
  var audioFrames: Int { state.withLock { $0.audioFrames } }

  func open(sampleRate: Int) throws(OutputError) { state.withLock { $0.isOpen = true } }
  func close() { state.withLock { $0.isOpen = false } }

  func write(_ samples: UnsafeBufferPointer<Int32>, dither: Bool) throws(OutputError) -> Int {
    let frames = samples.count / 2
    let wait = nanosecondsUntilRoom(forFrames: frames)
    if wait > 0 { usleep(UInt32(wait / 1000) + 1) }
    let sounding = (0..<frames).filter { samples[2 * $0] != 0 || samples[2 * $0 + 1] != 0 }.count
    state.withLock {
      if $0.firstWrite == nil { $0.firstWrite = MonotonicClock.nanoseconds() }
      $0.frames += frames
      $0.audioFrames += sounding
    }
    return frames
  }

  /// Frames heard by now.
  func playedFrames(at now: UInt64 = MonotonicClock.nanoseconds()) -> Int {
    state.withLock { state in
      guard let first = state.firstWrite else { return 0 }
      return min(state.frames, Int((now - first) * UInt64(sampleRate) / 1_000_000_000))
    }
  }

  func delayFrames() -> Int {
    let (written, first) = state.withLock { ($0.frames, $0.firstWrite) }
    if let first, MonotonicClock.nanoseconds() - first < unsettledNanoseconds { return written }
    return written - playedFrames()
  }

  func nanosecondsUntilRoom(forFrames frames: Int) -> UInt64 {
    let excess = state.withLock { $0.frames } - playedFrames() + frames - bufferFrames
    return excess <= 0 ? 0 : UInt64(excess) * 1_000_000_000 / UInt64(sampleRate)
  }

  func discardQueued() {}
  func playOutQueued() {}
}

/// A pipe in memory: it holds at most `capacityFrames` until its reader (the test) takes them; no
/// clock of its own.
final class ReaderPacedSink: OutputDevice, Sendable {
  let name = "pipe"
  let chunkFrames = 512
  let sampleRate = 44100
  let capacityFrames = 4096
  private struct State {
    var isOpen = false
    var held = 0
    var written = 0
  }
  private let state = Mutex(State())

  var isOpen: Bool { state.withLock { $0.isOpen } }
  /// Frames written in all.
  var writtenFrames: Int { state.withLock { $0.written } }
  var heldFrames: Int { state.withLock { $0.held } }

  func open(sampleRate: Int) throws(OutputError) { state.withLock { $0.isOpen = true } }
  func close() { state.withLock { $0.isOpen = false } }

  func write(_ samples: UnsafeBufferPointer<Int32>, dither: Bool) throws(OutputError) -> Int {
    state.withLock {
      let taken = min(samples.count / 2, capacityFrames - $0.held)
      $0.held += taken
      $0.written += taken
      return taken
    }
  }

  /// The reader takes up to `frames`.
  func read(_ frames: Int) { state.withLock { $0.held -= min(frames, $0.held) } }

  func nanosecondsUntilRoom(forFrames frames: Int) -> UInt64 {
    heldFrames + min(frames, chunkFrames) > capacityFrames ? 1_000_000 : 0
  }
  func delayFrames() -> Int { heldFrames }
  func pauseQueued() {}
  func discardQueued() { state.withLock { $0.held = 0 } }
  func playOutQueued() {}
}

extension PlaybackTests {
  @Suite("Pause heard")
  struct PauseHeard {
    func soundingTrack() throws -> FrameOutput { try PlaybackTests.soundingTrack() }

    func withPlayer(
      of output: FrameOutput, on sink: any OutputDevice, onEvent: @escaping @Sendable (OutputEvent) -> Void = { _ in },
      _ body: (OutputPlayer) throws -> Void
    ) rethrows {
      try PlaybackTests.withRunningPlayer(of: output, on: sink, onEvent: onEvent, body)
    }

    /// Paused on a sound card, what the device holds plays out (nothing is lost or repeated) and
    /// the output says when it has: the position is final then, every frame written heard, and the
    /// engine reports it to LMS, which times a synced resume by each player's last report.
    @Test func aPauseOnASoundCardSaysWhenWhatTheDeviceHeldHasPlayed() throws {
      let sink = ClockedSink()
      let output = try soundingTrack()
      let heard = Mutex<(played: Int, audio: Int)?>(nil)
      let onEvent: @Sendable (OutputEvent) -> Void = { event in
        if event == .pauseHeard { heard.withLock { $0 = (sink.playedFrames(), sink.audioFrames) } }
      }
      try withPlayer(of: output, on: sink, onEvent: onEvent) { player in
        player.start(.now)
        #expect(eventually(within: 2) { sink.playedFrames() >= 2048 })
        player.pause()
        #expect(eventually(within: 2) { heard.withLock { $0 != nil } })
        let atEvent = try #require(heard.withLock { $0 })
        #expect(atEvent.played >= atEvent.audio, "every frame with sound was heard by then")
        #expect(sink.audioFrames == atEvent.audio, "no sound written after the pause")
        let position = player.currentPosition()
        #expect(!position.isRunning)
        #expect(position.framesPlayed == atEvent.audio)
        let later = MonotonicClock.nanoseconds() + 5_000_000_000
        #expect(position.elapsedMilliseconds(at: later) == (atEvent.audio * 1000 + 22050) / 44100)
      }
    }

    /// A timed start (a sync group's) through a sound server whose delay at first counts what was
    /// written: until the start has been checked against its schedule, the position reported is the
    /// schedule's (LMS checks a group from the first report on, and would correct the players
    /// against the sound server's count).
    @Test func aTimedStartReportsItsScheduleUntilItIsChecked() throws {
      let sink = ClockedSink(unsettledNanoseconds: 500_000_000)
      let output = try soundingTrack()
      withPlayer(of: output, on: sink) { player in
        let deadline = MonotonicClock.nanoseconds() + 100_000_000
        player.start(.at(nanoseconds: deadline))
        usleep(400_000)  // 0.3 s past the deadline, before the first check (0.6 s)
        let now = MonotonicClock.nanoseconds()
        let heard = player.currentPosition().heardFrames(at: now)
        let due = Int((now - deadline) * 44100 / 1_000_000_000)
        #expect(abs(heard - due) < 441, "heard \(heard) frames where the schedule has \(due)")
      }
    }

    /// Paused on a pipe, nothing more is written and what the pipe holds is its reader's (LMS's
    /// fade-out before the pause is heard before it, as on squeezelite's stdout): the position is
    /// everything written from the pause on, and stays so while the reader takes the rest.
    @Test func aPauseOnAPipeLeavesWhatItHeldToItsReaderAndCountsItHeard() throws {
      let sink = ReaderPacedSink()
      let output = try soundingTrack()
      withPlayer(of: output, on: sink) { player in
        player.start(.now)
        #expect(eventually(within: 2) { sink.heldFrames == sink.capacityFrames })
        sink.read(1024)
        #expect(eventually(within: 2) { sink.heldFrames == sink.capacityFrames })
        player.pause()
        #expect(eventually(within: 2) { !player.currentPosition().isRunning })
        let written = sink.writtenFrames
        usleep(100_000)
        #expect(sink.writtenFrames == written, "nothing written after the pause")
        #expect(sink.heldFrames == sink.capacityFrames, "what the pipe held is kept for its reader")
        let position = player.currentPosition()
        #expect(!position.isRunning)
        #expect(position.framesPlayed == written)
        #expect(position.delayFrames == 0)
      }
    }
  }
}
