import AudioBuffers

/// What the output thread tells the engine (delivered through `onEvent`, off the audio thread's
/// critical path).
public enum OutputEvent: Equatable, Sendable {
  /// The first frame of a track is being written to the device (STMs).
  case trackStarted(trackID: Int)
  /// The output buffer ran empty while playing (STMo or STMu, the engine decides).
  case ranDry
  /// Paused, the device has played what it held when the pause came: the position is final.
  case pauseHeard
  /// A timed start checked against its schedule once the device had settled: heard
  /// `offsetFrames` ahead of it (negative: behind), `correctedFrames` of that made good.
  case startChecked(offsetFrames: Int, correctedFrames: Int, sampleRate: Int)
  /// The device was (re)opened at a track's rate.
  case deviceOpened(sampleRate: Int)
  /// The device failed; the player retries it.
  case deviceFailed(String)
  /// The device was closed: idle for the `-C` time, or the player was powered off.
  case deviceClosed(OutputPlayer.CloseReason)
  /// Whether the output thread got the real-time priority it asked for.
  case realtimePriority(Int32, granted: Bool)
}

/// Where playback is, for STAT: frames of the current track written, the device delay then, and
/// when that was measured.
public struct PlayPosition: Equatable, Sendable {
  public var trackID = -1
  public var framesPlayed = 0
  public var delayFrames = 0
  public var measuredAtNanoseconds: UInt64 = 0
  public var sampleRate = 44100
  public var isRunning = false
  /// The output ring frame at which this track began.
  public var trackStartFrame = 0

  /// Milliseconds of the current track heard at `instant` (CLOCK_MONOTONIC ns, before or after
  /// the measurement), to the nearest millisecond. LMS dates a STAT by its jiffies and lines the
  /// group up by the difference: a time truncated twice (frames, then the clock) would put the
  /// player up to two milliseconds (half of one on average) behind where it is heard.
  ///
  /// A track whose first frame is still in the device (written less than the delay ago, behind
  /// the last of the previous track) has been heard for no time at all, not for the time since the
  /// measurement: LMS lines a group up by every STAT's elapsed time, and one taken then put this
  /// player up to the device's delay ahead of the others (LMS skipped them all by 161 ms).
  public func elapsedMilliseconds(at instant: UInt64) -> Int {
    let rate = max(1, sampleRate)
    let heard = framesPlayed - delayFrames
    var nanoseconds = heard / rate * 1_000_000_000 + heard % rate * 1_000_000_000 / rate
    if isRunning { nanoseconds += Int(Int64(bitPattern: instant &- measuredAtNanoseconds)) }
    return max(0, (nanoseconds + 500_000) / 1_000_000)
  }

  /// Frames of the current track heard at `instant`, exactly: where playback resumes after a
  /// restart, which a time rounded to the millisecond would put up to 22 frames (at 44.1 kHz)
  /// past what was heard, skipping them.
  public func heardFrames(at instant: UInt64) -> Int {
    let heard = framesPlayed - delayFrames
    guard isRunning else { return max(0, heard) }
    let rate = max(1, sampleRate)
    let elapsed = Int(Int64(bitPattern: instant &- measuredAtNanoseconds))
    return max(0, heard + elapsed / 1_000_000_000 * rate + elapsed % 1_000_000_000 * rate / 1_000_000_000)
  }
}
