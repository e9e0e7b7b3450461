/// A timed start's promise, which the player keeps itself: ring frame `frame` is heard at
/// `deadline` (CLOCK_MONOTONIC ns), and each later frame at the sample rate. While a sound
/// server's stream starts its delay counts what was written rather than what is still to be
/// heard, so the first frame can land tens of milliseconds off; once the delay has settled, the
/// heard frame is compared with the promised one and the difference is made good, sooner and
/// finer than the server's sync check (10 ms at best) would.
struct StartSchedule: Equatable, Sendable {
  /// When the position is checked, after the deadline.
  static let checkDelays: [UInt64] = [600_000_000, 1_600_000_000]

  let frame: Int
  let deadline: UInt64
  let sampleRate: Int
  private(set) var checksDone = 0

  init(frame: Int, deadline: UInt64, sampleRate: Int) {
    self.frame = frame
    self.deadline = deadline
    self.sampleRate = sampleRate
  }

  var nextCheck: UInt64 { deadline + Self.checkDelays[checksDone] }

  /// Frames to fill with silence (positive: the output is ahead) or to skip (negative) so that
  /// `heardFrame`, heard at `now`, is where the schedule puts it. 0 within a millisecond, and for a
  /// difference of 10 s or more, which is no longer this start's.
  func correction(heardFrame: Int, now: UInt64) -> Int {
    let elapsed = Int64(bitPattern: now &- deadline)
    let due = frame + Int(elapsed * Int64(sampleRate) / 1_000_000_000)
    let error = heardFrame - due
    guard abs(error) > sampleRate / 1000, abs(error) < 10 * sampleRate else { return 0 }
    return error
  }

  /// The schedule after a check, or nil when that was the last.
  func checked() -> StartSchedule? {
    guard checksDone + 1 < Self.checkDelays.count else { return nil }
    var next = self
    next.checksDone += 1
    return next
  }
}
