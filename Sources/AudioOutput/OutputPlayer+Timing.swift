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
    let untilDeadline = Int64(deadline) - Int64(MonotonicClock.nanoseconds())
    // squeezelite's sanity limit: a start more than 10 s away is taken as now.
    guard untilDeadline < 10_000_000_000 else {
      state = .running
      return
    }
    let delay = device.delayFrames()
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
  /// put there and the difference is skipped or filled with silence.
  func keepSchedule() {
    let now = MonotonicClock.nanoseconds()
    guard let due = schedule, now >= due.nextCheck else { return }
    let consumed = output.ring.totalConsumed / OutputFrames.bytesPerFrame
    let queued = device.delayFrames()
    // Only once the device holds nothing but frames of the schedule (the silence before them has
    // played) does its delay say which of them is heard.
    guard consumed - due.frame >= queued else { return }
    let heard = consumed - queued
    let correction = due.correction(heardFrame: heard, now: now)
    if correction > 0 { silenceFrames += correction } else { skipFrames += -correction }
    schedule = due.checked()
  }
}
