import AudioBuffers
import Support

/// Timing on a clocked device (a sound card): a timed start lined up so that its first frame is
/// heard at the time (sync groups), the check of that schedule once the device has settled, and
/// the silence that keeps the device running while paused. Output thread only.
extension OutputPlayer {
  /// One period of the silence written while paused on a sound card (it does not count as use
  /// for `-C`); once what the device held has played, the position is everything written.
  func writePauseSilence() {
    guard let due = pauseSilenceDue, device.isOpen else {
      pauseSilenceDue = nil
      return
    }
    let lastUse = lastWriteNanoseconds
    let written = writeSilence(frames: device.chunkFrames)
    lastWriteNanoseconds = lastUse
    guard let written else {
      pauseSilenceDue = nil
      return
    }
    if due > 0 && due <= written {
      publish(running: false, heardAll: true)
      onEvent(.pauseHeard)
    }
    pauseSilenceDue = max(0, due - written)
  }

  /// A timed start on a sound card (sync groups): silence is queued until a frame written next
  /// would be heard at `deadline`, so the first frame plays then whatever the device holds or
  /// however long it took to open; a start that is late by the device's own delay skips the
  /// frames that would have played meanwhile, keeping the group's schedule.
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
    primeBeforeAudio = false  // the silence lining up the start comes first anyway
    let reading = datedDelay()
    let delay = reading.frames
    let untilDeadline = Int64(deadline) - Int64(reading.at)
    // squeezelite's sanity limit: a start more than 10 s away is taken as now.
    guard untilDeadline < 10_000_000_000 else {
      state = .running
      return
    }
    let lead = Int(untilDeadline * Int64(rate) / 1_000_000_000) - delay
    if lead > 0 {
      let period = device.chunkFrames
      if lead > period && delay >= 2 * period {
        // Two periods queued keep the device running; the rest is written once the time is
        // near, when a sound server's delay has settled (at first it counts what was written).
        wakeup.wait(timeoutMilliseconds: 2)
        return
      }
      _ = writeSilence(frames: min(lead, period))
      // A device waiting for its start threshold (a sound server's stream until its buffer is
      // full) would start late: its delay only counts once it plays.
      device.startQueued()
      return
    }
    if -lead < 10 * rate { skipFrames += -lead }
    state = .running
    schedule = StartSchedule(
      frame: output.ring.totalConsumed / OutputFrames.bytesPerFrame, deadline: deadline, sampleRate: rate)
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
    if correction > 0 { silenceFrames += correction } else { skipFrames += -correction }
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
