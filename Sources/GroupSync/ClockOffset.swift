/// Another member's clock, from time requests and their replies (the NTP exchange): for request
/// sent at `t1` (our clock), received at `t2` and answered at `t3` (theirs), the reply received at
/// `t4` (ours), their clock runs `((t2 − t1) + (t3 − t4)) / 2` ahead of ours, to within half the
/// round trip `(t4 − t1) − (t3 − t2)`. A reply held up on the way (a busy Wi-Fi, a thread of
/// either member not scheduled on a loaded machine) reads the offset off by up to half its delay,
/// so the exchange with the least uncertainty of the last few is believed. Two clocks also drift
/// apart, so an exchange's uncertainty grows with its age, as NTP's dispersion does (its 15 µs a
/// second: clocks disciplined by a time server, as a LAN's players are).
public struct ClockOffset: Equatable, Sendable {
  public struct Sample: Equatable, Sendable {
    /// Their clock minus ours, ns.
    public var offset: Int64
    public var roundTrip: UInt64
    /// When the reply came (our clock).
    public var at: UInt64

    /// How far from the truth `offset` may be at `now`, ns.
    public func uncertainty(at now: UInt64) -> UInt64 {
      roundTrip / 2 + (now &- at) / 1_000_000_000 * ClockOffset.driftNanosecondsPerSecond
        + (now &- at) % 1_000_000_000 * ClockOffset.driftNanosecondsPerSecond / 1_000_000_000
    }
  }

  /// Exchanges kept: at two a second, the last 16 s.
  static let kept = 32
  static let driftNanosecondsPerSecond: UInt64 = 15_000
  private var samples: [Sample] = []

  public init() {}

  /// One exchange: false (and nothing kept) when its times are impossible (a reply before its
  /// request, an answer before its question).
  @discardableResult
  public mutating func record(requestSent t1: UInt64, received t2: UInt64, replied t3: UInt64, replyReceived t4: UInt64)
    -> Bool
  {
    guard t4 >= t1, t3 >= t2, t4 - t1 >= t3 - t2 else { return false }
    let there = Int64(bitPattern: t2 &- t1) / 2 + Int64(bitPattern: t3 &- t4) / 2
    samples.append(Sample(offset: there, roundTrip: (t4 - t1) - (t3 - t2), at: t4))
    if samples.count > Self.kept { samples.removeFirst() }
    return true
  }

  /// The best estimate at `now` (our clock), nil before the first exchange.
  public func best(at now: UInt64) -> Sample? {
    samples.min { $0.uncertainty(at: now) < $1.uncertainty(at: now) }
  }

  /// `time` on their clock, as a time on ours, by the best estimate at `now`.
  public func local(_ time: UInt64, at now: UInt64) -> UInt64? {
    best(at: now).map { UInt64(bitPattern: Int64(bitPattern: time) &- $0.offset) }
  }
}
