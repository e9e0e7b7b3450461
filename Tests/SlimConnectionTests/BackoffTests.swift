import SlimConnection
import Testing

@Suite("Backoff")
struct BackoffTests {
  static func milliseconds(_ duration: Duration) -> Double { duration.seconds * 1000 }

  @Test func withoutJitterDelaysDoubleFromInitialUpToTheMaximum() {
    let backoff = Backoff(jitter: 0)
    var rng = SplitMix64(seed: 1)
    let delays = (0...8).map { backoff.delay(afterFailures: $0, using: &rng) }
    #expect(
      delays == [
        .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(10),
        .seconds(10), .seconds(10),
      ])
  }

  @Test func hugeFailureCountsStayAtTheMaximum() {
    let backoff = Backoff(jitter: 0)
    var rng = SplitMix64(seed: 2)
    for failures in [31, 62, 63, 64, 1000, Int.max] {
      #expect(backoff.delay(afterFailures: failures, using: &rng) == .seconds(10))
    }
  }

  @Test func customParameters() {
    let backoff = Backoff(
      quickRetry: .milliseconds(50), initial: .seconds(1), maximum: .seconds(30), jitter: 0)
    var rng = SplitMix64(seed: 3)
    #expect(backoff.delay(afterFailures: 0, using: &rng) == .milliseconds(50))
    #expect(backoff.delay(afterFailures: 1, using: &rng) == .seconds(1))
    #expect(backoff.delay(afterFailures: 5, using: &rng) == .seconds(16))
    #expect(backoff.delay(afterFailures: 6, using: &rng) == .seconds(30))
  }

  @Test func jitteredDelaysStayWithinTheBand() {
    let backoff = Backoff()  // 100 ms quick, 500 ms initial, 10 s maximum, ±20 %
    var rng = SplitMix64(seed: 0xb0ff)
    let ceiling = Self.milliseconds(backoff.maximum) * (1 + backoff.jitter)
    for failures in 0...40 {
      let base: Double =
        failures == 0 ? 100 : min(500 * Double(1 << UInt64(min(failures - 1, 40))), 10_000)
      var seen = Set<Duration>()
      for _ in 0..<500 {
        let delay = backoff.delay(afterFailures: failures, using: &rng)
        let ms = Self.milliseconds(delay)
        seen.insert(delay)
        // Rounded to whole milliseconds: allow half a millisecond either side.
        #expect(ms >= base * (1 - backoff.jitter) - 0.5, "failures \(failures)")
        #expect(ms <= base * (1 + backoff.jitter) + 0.5, "failures \(failures)")
        #expect(ms <= ceiling + 0.5)
      }
      // Jitter really varies the delay (players must not retry in lockstep).
      #expect(seen.count > 10, "failures \(failures)")
    }
  }

  @Test func quickRetryIsAboutAHundredMilliseconds() {
    let backoff = Backoff()
    var rng = SplitMix64(seed: 7)
    var total = 0.0
    for _ in 0..<1000 {
      let delay = backoff.delay(afterFailures: 0, using: &rng)
      #expect(delay >= .milliseconds(80) && delay <= .milliseconds(120))
      total += Self.milliseconds(delay)
    }
    #expect(abs(total / 1000 - 100) < 3)
  }

  @Test func meanOfJitteredDelaysGrowsExponentially() {
    let backoff = Backoff()
    var rng = SplitMix64(seed: 8)
    func mean(_ failures: Int) -> Double {
      var total = 0.0
      for _ in 0..<2000 { total += Self.milliseconds(backoff.delay(afterFailures: failures, using: &rng)) }
      return total / 2000
    }
    let means = (1...5).map(mean)
    for (index, value) in means.enumerated() {
      let expected = 500 * Double(1 << index)
      #expect(abs(value - expected) < expected * 0.02, "failures \(index + 1)")
    }
  }

  @Test func sameSeedSameDelays() {
    let backoff = Backoff()
    var first = SplitMix64(seed: 42)
    var second = SplitMix64(seed: 42)
    let a = (0..<20).map { backoff.delay(afterFailures: $0 % 7, using: &first) }
    let b = (0..<20).map { backoff.delay(afterFailures: $0 % 7, using: &second) }
    #expect(a == b)
  }

  @Test func durationSeconds() {
    #expect(Duration.milliseconds(1500).seconds == 1.5)
    #expect(Duration.seconds(10).seconds == 10)
    #expect(abs(Duration.microseconds(1).seconds - 1e-6) < 1e-15)
  }
}
