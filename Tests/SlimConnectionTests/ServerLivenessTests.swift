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

@Suite struct StarvingStreamTests {
  private let liveness = ServerLiveness(silenceSeconds: 7, stallSeconds: 2, starvingSeconds: 3)

  private func health(stall: Double?, left: Double?, cached: Bool) -> StreamHealth {
    var health = StreamHealth(stalledSeconds: stall)
    health.secondsBuffered = left
    health.cacheCanContinue = cached
    return health
  }

  @Test func aStalledStreamAboutToRunDryWithACachedCopyIsGivenUpOnBeforeTheSilenceCounts() {
    // A high-bitrate stream buffers less than the silence threshold: waiting would be a gap.
    let starving = health(stall: 2.5, left: 2.9, cached: true)
    #expect(liveness.serverIsGone(silence: 1, health: starving))
    #expect(liveness.isStarving(starving))
  }

  @Test func plentyLeftAShortStallOrNoCachedCopyWaitsForTheSilence() {
    #expect(!liveness.serverIsGone(silence: 1, health: health(stall: 2.5, left: 3.1, cached: true)))
    #expect(!liveness.serverIsGone(silence: 1, health: health(stall: 1.9, left: 0.5, cached: true)))
    // Without a copy, giving up on the stream would only lose what still comes of it.
    let uncached = health(stall: 5, left: 0.5, cached: false)
    #expect(!liveness.serverIsGone(silence: 1, health: uncached))
    #expect(!liveness.isStarving(uncached))
    #expect(liveness.serverIsGone(silence: 7, health: uncached))
  }

  @Test func aNextTrackOverdueNearTheEndOfTheLastBufferedOneIsGivenUpOnWhenCached() {
    // The network went just before the decoder finished: the server never heard it was ready.
    var waiting = StreamHealth(playingWithoutStream: true)
    waiting.waitingForNextTrackSeconds = 2.2
    waiting.secondsBuffered = 2.5
    waiting.cacheCanContinue = true
    #expect(liveness.serverIsGone(silence: 3, health: waiting))
    waiting.waitingForNextTrackSeconds = 1.1
    #expect(liveness.serverIsGone(silence: 3, health: waiting))
    // LMS answers "ready" within milliseconds: a moment's wait is normal, at any rate.
    waiting.waitingForNextTrackSeconds = 0.3
    #expect(!liveness.serverIsGone(silence: 3, health: waiting))
    // The end of the queue, or a next track not cached: only the silence decides.
    waiting.waitingForNextTrackSeconds = 5
    waiting.cacheCanContinue = false
    #expect(!liveness.serverIsGone(silence: 3, health: waiting))
    #expect(liveness.serverIsGone(silence: 7, health: waiting))
  }

  @Test func whileDisconnectedNothingIsJudged() {
    #expect(!liveness.serverIsGone(silence: nil, health: health(stall: 5, left: 0.5, cached: true)))
  }
}
