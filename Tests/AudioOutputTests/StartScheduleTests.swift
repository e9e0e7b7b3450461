import Testing

@testable import AudioOutput

@Suite struct StartScheduleTests {
  let deadline: UInt64 = 50_000_000_000
  let second: UInt64 = 1_000_000_000

  @Test func onScheduleNothingIsCorrected() {
    let schedule = StartSchedule(frame: 10_000, deadline: deadline, sampleRate: 44100)
    // 0.6 s after the deadline frame 10000 + 26460 is due.
    #expect(schedule.correction(heardFrame: 36_460, now: deadline + 600_000_000) == 0)
  }

  @Test func aheadIsFilledWithSilenceAndBehindIsSkipped() {
    let schedule = StartSchedule(frame: 0, deadline: deadline, sampleRate: 48000)
    // 3 ms ahead: 144 frames of silence; 20 ms behind: 960 frames skipped.
    #expect(schedule.correction(heardFrame: 48_000 + 144, now: deadline + second) == 144)
    #expect(schedule.correction(heardFrame: 48_000 - 960, now: deadline + second) == -960)
  }

  @Test func withinAMillisecondOrTenSecondsOffItIsLeftAlone() {
    let schedule = StartSchedule(frame: 0, deadline: deadline, sampleRate: 44100)
    #expect(schedule.correction(heardFrame: 44_100 + 44, now: deadline + second) == 0)
    #expect(schedule.correction(heardFrame: 44_100 - 44, now: deadline + second) == 0)
    #expect(schedule.correction(heardFrame: 44_100 + 45, now: deadline + second) == 45)
    #expect(schedule.correction(heardFrame: 44_100 + 441_000, now: deadline + second) == 0)
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
