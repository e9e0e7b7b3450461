import Testing

@testable import AudioOutput

@Suite struct PlayPositionTests {
  private let second: UInt64 = 1_000_000_000

  /// Between two writes the position runs on with the clock, from what the device had taken.
  @Test func betweenWritesThePositionRunsOnWithTheClock() {
    let position = PlayPosition(
      trackID: 1, framesPlayed: 44100, delayFrames: 22050, measuredAtNanoseconds: 10 * second, sampleRate: 44100,
      isRunning: true)
    #expect(position.elapsedMilliseconds(now: 10 * second) == 500)
    #expect(position.elapsedMilliseconds(now: 10 * second + second / 4) == 750)
  }

  /// Stopped or paused, the position is the measurement, whatever the time.
  @Test func aStoppedPositionDoesNotMove() {
    let position = PlayPosition(
      trackID: 1, framesPlayed: 44100, delayFrames: 4410, measuredAtNanoseconds: 10 * second, sampleRate: 44100,
      isRunning: false)
    #expect(position.elapsedMilliseconds(now: 20 * second) == 900)
  }
}
