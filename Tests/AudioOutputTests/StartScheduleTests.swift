import Testing

@testable import AudioOutput

@Suite struct StartScheduleTests {
  let deadline: UInt64 = 50_000_000_000
  let second: UInt64 = 1_000_000_000

  @Test func onScheduleTheOffsetIsZero() {
    let schedule = StartSchedule(frame: 10_000, deadline: deadline, sampleRate: 44100)
    // 0.6 s after the deadline frame 10000 + 26460 is due.
    #expect(schedule.offset(heardFrame: 36_460, now: deadline + 600_000_000) == 0)
    #expect(schedule.offset(heardFrame: 36_460 + 44, now: deadline + 600_000_000) == 44)
    #expect(schedule.offset(heardFrame: 36_460 - 441, now: deadline + 600_000_000) == -441)
  }

  @Test func aheadIsFilledWithSilenceAndBehindIsSkipped() {
    let schedule = StartSchedule(frame: 0, deadline: deadline, sampleRate: 48000)
    // 3 ms ahead: 144 frames of silence; 20 ms behind: 960 frames skipped.
    #expect(schedule.correction(forOffset: 144) == 144)
    #expect(schedule.correction(forOffset: -960) == -960)
  }

  @Test func withinAMillisecondOrTenSecondsOffItIsLeftAlone() {
    let schedule = StartSchedule(frame: 0, deadline: deadline, sampleRate: 44100)
    #expect(schedule.correction(forOffset: 44) == 0)
    #expect(schedule.correction(forOffset: -44) == 0)
    #expect(schedule.correction(forOffset: 45) == 45)
    #expect(schedule.correction(forOffset: 441_000) == 0)
  }

  /// A check goes by the median of its readings: one reading 20 ms off (a sound server's estimate
  /// on a busy machine) among four that say 3 ms behind corrects 3 ms, not 7.
  @Test func aCheckGoesByTheMedianOfItsReadings() throws {
    var schedule = StartSchedule(frame: 0, deadline: deadline, sampleRate: 44100)
    let offsets = [-132, 882, -130, -135, -133]  // frames off, in the order read
    var results: [Int?] = []
    var now = schedule.nextCheck
    for offset in offsets {
      #expect(now >= schedule.nextReading)
      let due = Int((now - deadline) * 44100 / second)
      results.append(schedule.record(heardFrame: due + offset, now: now))
      now += StartSchedule.readingSpacing
    }
    #expect(results.dropLast().allSatisfy { $0 == nil })
    #expect(results.last == -132)
    // The next check starts afresh, later.
    let next = try #require(schedule.checked())
    #expect(next.nextReading == next.nextCheck)
    #expect(next.nextCheck > schedule.nextCheck)
  }

  /// Readings are taken a little apart, not on every pass of the output loop.
  @Test func readingsAreSpacedOut() {
    var schedule = StartSchedule(frame: 0, deadline: deadline, sampleRate: 44100)
    let now = schedule.nextCheck
    _ = schedule.record(heardFrame: 26_460, now: now)
    #expect(schedule.nextReading == now + StartSchedule.readingSpacing)
  }

  @Test func itIsCheckedAFewTimesOnceTheDelayHasSettledThenDropped() {
    var schedule: StartSchedule? = StartSchedule(frame: 0, deadline: deadline, sampleRate: 44100)
    var checks: [UInt64] = []
    while let current = schedule {
      checks.append(current.nextCheck - deadline)
      schedule = current.checked()
    }
    #expect((1...3).contains(checks.count))
    #expect(checks.allSatisfy { $0 >= 500_000_000 })
    #expect(checks == checks.sorted())
  }
}
