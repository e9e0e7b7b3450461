import Testing

@testable import Offline

@Suite struct NextTrackWaitTests {
  private let second: UInt64 = 1_000_000_000

  @Test func theWaitRunsFromTheDecodeOnceTheTrackIsHeard() throws {
    var wait = NextTrackWait()
    wait.trackStarted(4, at: 10 * second)
    wait.trackDecoded(4, at: 12 * second)
    let overdue = try #require(wait.overdue(now: 15 * second))
    #expect(overdue.after == 4)
    #expect(overdue.seconds == 3)
  }

  @Test func aShortTrackDecodedBeforeItIsHeardWaitsFromItsStart() throws {
    // Track 5 is decoded while track 4 still plays: LMS sends track 6 only once 5 is heard.
    var wait = NextTrackWait()
    wait.trackStarted(4, at: 10 * second)
    wait.trackDecoded(5, at: 12 * second)
    #expect(wait.overdue(now: 20 * second) == nil)
    wait.trackStarted(5, at: 21 * second)
    let overdue = try #require(wait.overdue(now: 21 * second + second / 2))
    #expect(overdue.after == 5)
    #expect(overdue.seconds == 0.5)
  }

  @Test func nothingIsAwaitedBeforeATrackIsDecodedAndHeard() {
    var wait = NextTrackWait()
    #expect(wait.overdue(now: second) == nil)
    wait.trackDecoded(1, at: second)
    #expect(wait.overdue(now: 2 * second) == nil)
  }
}
