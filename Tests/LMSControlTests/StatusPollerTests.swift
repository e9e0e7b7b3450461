import LMSControl
import NIOCore
import Testing

@Suite struct StatusPollerTests {
  @Test func quietPollsStretchTheIntervalUpToItsLongest() {
    let configuration = StatusPoller.Configuration(interval: .milliseconds(1500), longestInterval: .seconds(6))
    let waits = (0..<5).map { configuration.interval(afterQuietPolls: $0) }
    #expect(waits == [.milliseconds(1500), .seconds(3), .seconds(6), .seconds(6), .seconds(6)])
    #expect(configuration.interval(afterQuietPolls: 1000) == .seconds(6))
  }

  @Test func aLongestIntervalBelowTheIntervalIsTheInterval() {
    let configuration = StatusPoller.Configuration(interval: .seconds(2), longestInterval: .seconds(1))
    #expect(configuration.interval(afterQuietPolls: 3) == .seconds(2))
  }

  @Test func onlyTheTimeMovingIsNothingNew() {
    let playing = LMSStatus(mode: .play, time: 12.5, currentIndex: 1, playlistTimestamp: 100, trackCount: 3)
    var later = playing
    later.time = 14.0
    #expect(later.equalsIgnoringTime(playing))
    #expect(later != playing)
    var edited = later
    edited.playlistTimestamp = 101
    #expect(!edited.equalsIgnoringTime(playing))
    var paused = later
    paused.mode = .pause
    #expect(!paused.equalsIgnoringTime(playing))
  }
}
