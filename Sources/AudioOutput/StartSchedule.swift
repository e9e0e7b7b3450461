/// A timed start's promise, which the player keeps itself: ring frame `frame` is heard at
/// `deadline` (CLOCK_MONOTONIC ns), and each later frame at the sample rate. While a sound
/// server's stream starts its delay counts what was written rather than what is still to be
/// heard, so the first frame can land tens of milliseconds off; once the delay has settled, the
/// heard frame is compared with the promised one and the difference is made good, sooner and
/// finer than the server's sync check (10 ms at best) would.
///
/// A sound server's delay is its estimate of where its own thread has got to, off by a few
/// milliseconds now and then on a busy machine, so each check takes several readings a little
/// apart and goes by their median: one bad reading moves nothing. PulseAudio's estimate also
/// wanders by up to 10 ms over the seconds after a stream starts when its sink rewinds, while the
/// sound does not; the checks come early, before it has gone far (checks that waited until two or
/// three checks a second apart agreed followed it further, measured at the outputs).
struct StartSchedule: Equatable, Sendable {
  /// When the position is checked, after the deadline.
  static let checkDelays: [UInt64] = [600_000_000, 1_600_000_000]
  /// Readings per check, and the time between them.
  static let readingsPerCheck = 5
  static let readingSpacing: UInt64 = 20_000_000

  let frame: Int
  let deadline: UInt64
  let sampleRate: Int
  private(set) var checksDone = 0
  /// This check's offsets so far (`offset(heardFrame:now:)`), and when the next is due.
  private var readings = InlineArray<5, Int>(repeating: 0)  // readingsPerCheck
  private var readingsTaken = 0
  private(set) var nextReading: UInt64

  init(frame: Int, deadline: UInt64, sampleRate: Int) {
    self.frame = frame
    self.deadline = deadline
    self.sampleRate = sampleRate
    nextReading = deadline + Self.checkDelays[0]
  }

  var nextCheck: UInt64 { deadline + Self.checkDelays[checksDone] }

  static func == (lhs: StartSchedule, rhs: StartSchedule) -> Bool {
    lhs.frame == rhs.frame && lhs.deadline == rhs.deadline && lhs.sampleRate == rhs.sampleRate
      && lhs.checksDone == rhs.checksDone && lhs.readingsTaken == rhs.readingsTaken
      && lhs.nextReading == rhs.nextReading
  }

  /// The ring frame the schedule puts at `now` (at or after the deadline).
  func scheduledFrame(at now: UInt64) -> Int {
    let elapsed = Int64(bitPattern: now &- deadline)
    return frame + Int(elapsed * Int64(sampleRate) / 1_000_000_000)
  }

  /// Frames by which `heardFrame`, heard at `now`, is ahead of the schedule (negative: behind).
  func offset(heardFrame: Int, now: UInt64) -> Int {
    heardFrame - scheduledFrame(at: now)
  }

  /// Frames to fill with silence (positive: the output is ahead) or to skip (negative) for an
  /// output `offset` frames off the schedule. 0 within a millisecond, and for a difference of
  /// 10 s or more, which is no longer this start's.
  func correction(forOffset offset: Int) -> Int {
    guard abs(offset) > sampleRate / 1000, abs(offset) < 10 * sampleRate else { return 0 }
    return offset
  }

  /// One reading of the check under way: `heardFrame` heard at `now`. Once the check has all its
  /// readings, their median offset; nil until then.
  mutating func record(heardFrame: Int, now: UInt64) -> Int? {
    readings[readingsTaken] = offset(heardFrame: heardFrame, now: now)
    readingsTaken += 1
    nextReading = now + Self.readingSpacing
    guard readingsTaken == Self.readingsPerCheck else { return nil }
    // Insertion sort of five, in place: the output thread allocates nothing.
    for index in 1..<Self.readingsPerCheck {
      var place = index
      while place > 0, readings[place - 1] > readings[place] {
        readings.swapAt(place - 1, place)
        place -= 1
      }
    }
    return readings[Self.readingsPerCheck / 2]
  }

  /// The schedule after a check, or nil when that was the last.
  func checked() -> StartSchedule? {
    guard checksDone + 1 < Self.checkDelays.count else { return nil }
    var next = self
    next.checksDone += 1
    next.readingsTaken = 0
    next.nextReading = next.nextCheck
    return next
  }
}
