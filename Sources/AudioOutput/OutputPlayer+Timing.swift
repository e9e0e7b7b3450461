import AudioBuffers
import Support

/// Timing on a clocked device (a sound card): a timed start lined up so that its first frame is
/// heard at the time (sync groups), the check of that schedule once the device has settled, and
/// the silence that keeps the device running while paused. Output thread only.
extension OutputPlayer {
  /// One period of the silence written while paused on a sound card (it does not count as use
  /// for `-C`); once what the device held has played, the position is everything written.
  func writePauseSilence() {
    guard device.isOpen else { return machine.pauseSilenceAbandoned() }
    let lastUse = lastWriteNanoseconds
    let written = writeSilence(frames: device.chunkFrames)
    lastWriteNanoseconds = lastUse
    guard let written else { return machine.pauseSilenceAbandoned() }
    if machine.pauseSilenceWritten(written) {
      publish(running: false, heardAll: true)
      onEvent(.pauseHeard)
    }
  }

  /// A timed start on a sound card (sync groups), lined up as `OutputStateMachine.lineUp` decides
  /// from the device's dated delay.
  func lineUpStart(at deadline: UInt64) {
    let readFrame = output.ring.totalConsumed / OutputFrames.bytesPerFrame
    let rate: Int
    let nativeDSD: NativeDSDFormat?
    if let boundary = output.boundaries.peek(), boundary.frame <= readFrame {
      (rate, nativeDSD) = (boundary.format.sampleRate, boundary.format.encoding.nativeDSD)
    } else if device.isOpen {
      (rate, nativeDSD) = (device.sampleRate, device.nativeDSD)
    } else if let format = output.boundaries.peek()?.format {
      (rate, nativeDSD) = (format.sampleRate, format.encoding.nativeDSD)
    } else {
      (rate, nativeDSD) = (44100, nil)
    }
    guard ensureOpen(rate: rate, nativeDSD: nativeDSD) else { return }
    let reading = datedDelay()
    let step = machine.lineUp(
      nanosecondsToDeadline: Int64(deadline) - Int64(reading.at), delayFrames: reading.frames, rate: rate,
      chunkFrames: device.chunkFrames)
    switch step {
    case .settle:
      wakeup.wait(timeoutMilliseconds: 2)
    case .silence(let frames):
      _ = writeSilence(frames: frames)
      // A device waiting for its start threshold (a sound server's stream until its buffer is
      // full) would start late: its delay only counts once it plays.
      device.startQueued()
    case .started(let scheduled):
      guard scheduled else { return }
      schedule = StartSchedule(
        frame: output.ring.totalConsumed / OutputFrames.bytesPerFrame, deadline: deadline, sampleRate: rate)
    }
  }

  /// Once the device's delay has settled, the frame heard is compared with the one the timed start
  /// put there (the median of a few readings) and the difference is skipped or filled with silence.
  func keepSchedule() {
    guard var due = schedule, MonotonicClock.nanoseconds() >= due.nextReading else { return }
    let consumed = output.ring.totalConsumed / OutputFrames.bytesPerFrame
    let reading = datedDelay()
    // A reading that took long (the thread preempted, the sound server's lock held) is dated too
    // loosely for a correction finer than a millisecond: the next pass reads again.
    guard reading.spread < 500_000 else { return }
    // Only once the device holds nothing but frames of the schedule (the silence before them has
    // played) does its delay say which of them is heard.
    guard consumed - due.frame >= reading.frames else { return }
    guard let offset = due.record(heardFrame: consumed - reading.frames, now: reading.at) else {
      schedule = due
      return
    }
    let correction = due.correction(forOffset: offset)
    machine.correct(silenceFrames: max(0, correction), skipFrames: max(0, -correction), framesBuffered: true)
    schedule = due.checked()
    onEvent(.startChecked(offsetFrames: offset, correctedFrames: correction, sampleRate: due.sampleRate))
  }

  /// The device's delay and when it held: the middle of the clock readings around the call, which
  /// can take a while through a sound server (its lock) or on a loaded machine; `spread` says how
  /// long. A frame written next is heard `frames` after `at`, whenever it is written.
  private func datedDelay() -> (frames: Int, at: UInt64, spread: UInt64) {
    let before = MonotonicClock.nanoseconds()
    let frames = device.delayFrames()
    let after = MonotonicClock.nanoseconds()
    return (frames, before + (after - before) / 2, after - before)
  }
}
