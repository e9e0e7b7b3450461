import Testing

@testable import SlimConnection

@Suite struct ServerLivenessTests {
  private let liveness = ServerLiveness(silenceSeconds: 7, stallSeconds: 2)

  @Test func silenceAloneOrAStallAloneIsNotEnough() {
    // A paused player's stream waits for room, not for the network; LMS may be busy a moment.
    #expect(!liveness.serverIsGone(silence: 30, stall: nil))
    #expect(!liveness.serverIsGone(silence: 1, stall: 30))
    #expect(!liveness.serverIsGone(silence: nil, stall: 30))
  }

  @Test func silencePastAHeartbeatWithAStalledStreamIsAGoneServer() {
    #expect(!liveness.serverIsGone(silence: 6.9, stall: 5))
    #expect(!liveness.serverIsGone(silence: 8, stall: 1.9))
    #expect(liveness.serverIsGone(silence: 7, stall: 2))
  }

  @Test func silenceWhilePlayingTheLastBufferedTrackIsAGoneServer() {
    // LMS sends the next track once the current one starts; gone, it never will.
    #expect(liveness.serverIsGone(silence: 7.5, stall: nil, playingWithoutStream: true))
    #expect(!liveness.serverIsGone(silence: 4, stall: nil, playingWithoutStream: true))
  }
}
