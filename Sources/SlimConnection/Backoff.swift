/// Reconnect delays: capped exponential growth with jitter, so a fleet of players does not retry
/// in lockstep when a server comes back, and a player never gives up.
public struct Backoff: Sendable, Equatable {
  /// Delay before the first retry after a connection that was working ends.
  public var quickRetry: Duration
  public var initial: Duration
  public var maximum: Duration
  /// Each delay is scaled by a random factor in 1 ± jitter.
  public var jitter: Double

  public init(
    quickRetry: Duration = .milliseconds(100), initial: Duration = .milliseconds(500),
    maximum: Duration = .seconds(10), jitter: Double = 0.2
  ) {
    self.quickRetry = quickRetry
    self.initial = initial
    self.maximum = maximum
    self.jitter = jitter
  }

  /// The delay before retry number `failures` (0 = right after a working connection ended).
  public func delay<R: RandomNumberGenerator>(afterFailures failures: Int, using random: inout R)
    -> Duration
  {
    let base: Double
    if failures == 0 {
      base = quickRetry.seconds
    } else {
      let grown = initial.seconds * pow2(min(failures - 1, 30))
      base = min(grown, maximum.seconds)
    }
    let factor = 1 + Double.random(in: -jitter...jitter, using: &random)
    return .milliseconds(Int64((base * factor * 1000).rounded()))
  }
}

private func pow2(_ exponent: Int) -> Double {
  Double(1 << exponent)
}
