/// Another member's clock, from time requests and their replies (the NTP exchange): for request
/// sent at `t1` (our clock), received at `t2` and answered at `t3` (theirs), the reply received at
/// `t4` (ours), their clock runs `((t2 − t1) + (t3 − t4)) / 2` ahead of ours, to within half the
/// round trip `(t4 − t1) − (t3 − t2)`. The exchange with the shortest round trip of the last few is
/// the one believed: a reply held up on the way (a busy Wi-Fi, a preempted thread) says least.
public struct ClockOffset: Equatable, Sendable {
  public struct Sample: Equatable, Sendable {
    /// Their clock minus ours, ns.
    public var offset: Int64
    public var roundTrip: UInt64
  }

  static let kept = 8
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
    samples.append(Sample(offset: there, roundTrip: (t4 - t1) - (t3 - t2)))
    if samples.count > Self.kept { samples.removeFirst() }
    return true
  }

  /// The best estimate so far, nil before the first exchange.
  public var best: Sample? { samples.min { $0.roundTrip < $1.roundTrip } }

  /// `time` on their clock, as a time on ours.
  public func local(_ time: UInt64) -> UInt64? {
    best.map { UInt64(bitPattern: Int64(bitPattern: time) &- $0.offset) }
  }
}
