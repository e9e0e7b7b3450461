import Testing

@testable import AudioOutput

@Suite struct PlayPositionTests {
  private let second: UInt64 = 1_000_000_000

  /// Between two writes the position runs on with the clock, from what the device had taken.
  @Test func betweenWritesThePositionRunsOnWithTheClock() {
    let position = PlayPosition(
      trackID: 1, framesPlayed: 44100, delayFrames: 22050, measuredAtNanoseconds: 10 * second, sampleRate: 44100,
      isRunning: true)
    #expect(position.elapsedMilliseconds(at: 10 * second) == 500)
    #expect(position.elapsedMilliseconds(at: 10 * second + second / 4) == 750)
  }

  /// Stopped or paused, the position is the measurement, whatever the time.
  @Test func aStoppedPositionDoesNotMove() {
    let position = PlayPosition(
      trackID: 1, framesPlayed: 44100, delayFrames: 4410, measuredAtNanoseconds: 10 * second, sampleRate: 44100,
      isRunning: false)
    #expect(position.elapsedMilliseconds(at: 20 * second) == 900)
  }

  /// A report dated before the measurement (the jiffies' millisecond began earlier) counts back
  /// from it, and the time is the nearest millisecond, not the one below: 30 frames are 0.68 ms.
  @Test func theTimeIsTheOneHeardAtTheInstantToTheNearestMillisecond() {
    let position = PlayPosition(
      trackID: 1, framesPlayed: 44100 + 30, delayFrames: 0, measuredAtNanoseconds: 10 * second,
      sampleRate: 44100, isRunning: true)
    #expect(position.elapsedMilliseconds(at: 10 * second) == 1001)
    #expect(position.elapsedMilliseconds(at: 10 * second - 600_000) == 1000)
    #expect(position.elapsedMilliseconds(at: 10 * second + 400_000) == 1001)
    #expect(position.elapsedMilliseconds(at: 10 * second - 10 * second) == 0)
  }

  /// Where a restart resumes: the frames heard, exactly. The time to the nearest millisecond is
  /// past them (1001 ms are 44144 frames at 44.1 kHz: 14 that were not heard would be skipped).
  @Test func theFramesHeardAreExactWhereTheTimeIsRounded() {
    var position = PlayPosition(
      trackID: 1, framesPlayed: 44100 + 30 + 2048, delayFrames: 2048, measuredAtNanoseconds: 10 * second,
      sampleRate: 44100, isRunning: false)
    #expect(position.heardFrames(at: 20 * second) == 44130)
    #expect(position.elapsedMilliseconds(at: 20 * second) == 1001)
    position.isRunning = true
    #expect(position.heardFrames(at: 10 * second + second / 2) == 44130 + 22050)
    #expect(position.heardFrames(at: 10 * second - second) == 30)
    #expect(position.heardFrames(at: 10 * second - 2 * second) == 0)
  }

  /// A track's first frame written while the device still holds 160 ms of the previous one: it
  /// is heard from 160 ms on, and until then nothing of it is (not the time since the write).
  @Test func aTrackStillBehindThePreviousOneInTheDeviceIsNotHeardYet() {
    let delay = 7056  // 160 ms
    let position = PlayPosition(
      trackID: 2, framesPlayed: 1024, delayFrames: delay, measuredAtNanoseconds: 10 * second, sampleRate: 44100,
      isRunning: true)
    let firstHeard = 10 * second + UInt64(delay - 1024) * second / 44100
    #expect(position.elapsedMilliseconds(at: 10 * second + second / 20) == 0)
    #expect(position.heardFrames(at: 10 * second + second / 20) == 0)
    #expect(position.elapsedMilliseconds(at: firstHeard + second / 10) == 100)
    #expect(abs(position.heardFrames(at: firstHeard + second / 10) - 4410) <= 1, "(the instant is whole nanoseconds)")
  }
}
