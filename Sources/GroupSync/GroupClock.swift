import SlimProto

/// One member's part in keeping an LMS sync group in time, free of I/O: what it hears from the
/// others and its own play point go in, datagrams to send and corrections for its output come out.
/// It keeps the group's time while LMS is away, and online too when every member keeps it
/// (`keepsTheGroupsTime`); LMS does then, online, with a member of another kind.
///
/// Every member publishes its play point four times a second (which also says it is there). The
/// members agree on a leader without negotiating (`LeaderChoice`); the others learn the leader's
/// clock by NTP-style exchanges (`ClockOffset`), compare the leader's play point with their own at
/// the same instant, and correct the difference as LMS does a synced player's: frames skipped
/// when behind, silence when ahead. What the leader's clock may be wrong by (a loaded machine
/// holds replies up, a slow network too) is not corrected: it widens the tolerance, so the members
/// stay that close rather than moved by its error. A correction moves the position at once but what is heard only
/// after the device's delay, so the next is judged only on play points taken after a pause.
public struct GroupClock: Sendable {
  public enum LogLevel: Equatable, Sendable { case info, notice, warning }

  public enum Action: Equatable, Sendable {
    /// A message to the group (the link adds sender, group, boot, sequence and tag).
    case send(GroupMessage.Body)
    /// Moves this member's output: positive, heard that many frames later (silence inserted);
    /// negative, earlier (frames skipped).
    case nudge(frames: Int)
    case log(LogLevel, String)
  }

  public struct Configuration: Equatable, Sendable {
    public var publishInterval: UInt64 = 250_000_000
    /// A member not heard for this long is gone (for the leader choice).
    public var memberTimeout: UInt64 = 3_000_000_000
    /// Time requests while the leader's clock is not yet known well, then once this often.
    public var quickRequestInterval: UInt64 = 250_000_000
    /// Twice a second: on a loaded machine most exchanges are held up, and the more there are,
    /// the sooner a quick one comes (`ClockOffset`).
    public var requestInterval: UInt64 = 500_000_000
    /// Exchanges made quickly before settling into `requestInterval`.
    public var quickRequests = 4
    /// Differences smaller than this (in milliseconds) are left alone: a correction is heard.
    /// The leader's clock is known only to within an uncertainty (`ClockOffset`), which is added:
    /// a difference that may be the clock's error is not corrected.
    public var toleranceMilliseconds = 0.3
    /// A leader's clock known no better than this (ms) is said in the log: the members are then
    /// kept only that close (a slow network's round trips), rather than moved by its error.
    public var looseClockMilliseconds = 1.5
    /// After a correction, play points taken before this long has passed are not compared: a
    /// correction moves the position at once, what is heard only once the device has played
    /// what it held (a pipe's 64 KiB, a sound card's buffer).
    public var settleNanoseconds: UInt64 = 1_000_000_000
    /// Readings whose median is corrected (one reading can be a late wake-up), provided their middle
    /// half lies within twice the tolerance; three times as many when it does not, within eight
    /// times. A device whose delay is known only to a period (a reader taking a pipe in large
    /// pieces) reads too coarsely to correct by, and is left alone.
    public var readings = 5
    /// A play point dated further from now than this (on our clock) is refused: stale or replayed.
    public var freshness: UInt64 = 2_000_000_000

    public init() {}
  }

  public let player: MACAddress
  /// The master LMS showed for the group: the leader while it is heard.
  public let master: MACAddress
  /// Every member LMS listed for the group, this one included.
  public let members: Set<MACAddress>
  public let configuration: Configuration
  public private(set) var leader: MACAddress?
  /// Each other member's last play point and when it came (on our clock).
  private var lastPoints: [MACAddress: (point: GroupMessage.PlayPoint, at: UInt64)] = [:]
  /// This member started at the leader's position and has not yet been found in step.
  public private(set) var isJoining = false
  /// Whether this member played at its last tick.
  private var playing = false
  private var clocks: [MACAddress: ClockOffset] = [:]
  /// The `sent` of time requests not answered yet: a reply must answer one of them.
  private var outstanding: [UInt64] = []
  private var requestsMade = 0
  private var nextPublish: UInt64 = 0
  private var nextRequest: UInt64 = 0
  /// No correction is judged on play points taken before this.
  private var settledAt: UInt64 = 0
  /// The server is there, streaming to the group and checking its sync.
  private var serverIsThere = false
  private var differences: [Int] = []
  /// Readings too scattered to correct by were logged once.
  private var reportedCoarse = false
  /// The leader's clock was logged as too uncertain to judge by (cleared once it is known again).
  private var reportedUncertainClock = false

  public init(
    player: MACAddress, master: MACAddress, members: Set<MACAddress>, configuration: Configuration = Configuration()
  ) {
    self.player = player
    self.master = master
    self.members = members.union([player])
    self.configuration = configuration
  }

  /// The members that can lead: those heard playing lately, and this one while it plays in step.
  /// One that is joining (just restarted, started at the leader's position, not yet corrected)
  /// leads nobody, even LMS's master.
  public func candidates(at now: UInt64) -> Set<MACAddress> {
    var members: Set<MACAddress> = playing && !isJoining ? [player] : []
    for (member, last) in lastPoints where now &- last.at <= configuration.memberTimeout && last.point.state == .playing
    {
      members.insert(member)
    }
    return members
  }

  /// Where the leader is heard at `now`, from its last play point and its clock: where a member
  /// that joins the group starts.
  public func leaderPlayPoint(at now: UInt64) -> GroupMessage.PlayPoint? {
    guard let leader, leader != player, let last = lastPoints[leader], last.point.state == .playing,
      let heardAt = clocks[leader]?.local(last.point.heardAt, at: now), now &- heardAt <= configuration.freshness
    else { return nil }
    var point = last.point
    let elapsed = now - heardAt
    let rate = UInt64(point.sampleRate)
    point.frame += elapsed / 1_000_000_000 * rate + elapsed % 1_000_000_000 * rate / 1_000_000_000
    point.heardAt = now
    return point
  }

  /// Whether the server is there, streaming to the group and checking its sync itself.
  public mutating func serverIsThere(_ there: Bool) { serverIsThere = there }

  /// Whether this clock keeps the group's time, online as well as offline: every member LMS listed
  /// is heard playing (all of them keep this clock), and this member leads or knows its leader's
  /// clock. LMS's own sync adjustments are then its view of a member, not a need: it measures each
  /// member by its reports' timestamps, to a few milliseconds on a busy network, where the members
  /// measure each other to a fraction of one. With a member that is not heard (another kind of
  /// player) LMS keeps the group's time while it is there, and this clock only while it is away.
  public func keepsTheGroupsTime(at now: UInt64) -> Bool {
    guard playing, let leader, leader == player || clocks[leader]?.best(at: now) != nil else { return false }
    return members.allSatisfy { member in
      guard member != player else { return true }
      guard let last = lastPoints[member], now &- last.at <= configuration.memberTimeout else { return false }
      return last.point.state == .playing || last.point.state == .joining
    }
  }

  /// This member started playing at the leader's position: it follows until found in step.
  public mutating func beginJoining() {
    isJoining = true
    differences = []
  }

  /// Called a few times a second with this member's play point (nil: nothing plays).
  public mutating func tick(now: UInt64, own: GroupMessage.PlayPoint?) -> [Action] {
    playing = own?.state == .playing
    var actions = chooseLeader(now: now)
    if var own, now >= nextPublish {
      if isJoining, own.state == .playing { own.state = .joining }
      actions.append(.send(.playPoint(own)))
      nextPublish = now + configuration.publishInterval
    }
    if let leader, leader != player, now >= nextRequest {
      actions.append(.send(.timeRequest(sent: now)))
      outstanding.append(now)
      if outstanding.count > 8 { outstanding.removeFirst() }
      requestsMade += 1
      let quick = requestsMade < configuration.quickRequests
      nextRequest = now + (quick ? configuration.quickRequestInterval : configuration.requestInterval)
    }
    return actions
  }

  /// A message from another member, already filtered and authenticated; `own` is this member's
  /// play point now. `arrivedAt`: when the network delivered it (the kernel's time; by default
  /// now), which dates a time exchange without the wait for this member's thread.
  public mutating func received(
    _ message: GroupMessage, now: UInt64, arrivedAt: UInt64? = nil, own: GroupMessage.PlayPoint?
  ) -> [Action] {
    guard message.sender != player else { return [] }
    let arrivedAt = arrivedAt ?? now
    switch message.body {
    case .timeRequest(let sent):
      return [.send(.timeReply(requestSent: sent, received: arrivedAt, sent: now))]
    case .timeReply(let requestSent, let received, let sent):
      // Only the answer to a request of ours counts once: a copy or a replay answers nothing.
      guard let asked = outstanding.firstIndex(of: requestSent) else { return [] }
      outstanding.remove(at: asked)
      clocks[message.sender, default: ClockOffset()].record(
        requestSent: requestSent, received: received, replied: sent, replyReceived: arrivedAt)
      return []
    case .playPoint(let point):
      lastPoints[message.sender] = (point, now)
      return follow(point, of: message.sender, now: now, own: own)
    }
  }

  private mutating func chooseLeader(now: UInt64) -> [Action] {
    let chosen = LeaderChoice.leader(master: master, heard: candidates(at: now))
    guard chosen != leader else { return [] }
    leader = chosen
    differences = []
    requestsMade = 0
    nextRequest = now
    guard let chosen else { return [] }
    return [.log(.notice, chosen == player ? "this player leads the group" : "following \(chosen)")]
  }

  private mutating func follow(
    _ point: GroupMessage.PlayPoint, of sender: MACAddress, now: UInt64, own: GroupMessage.PlayPoint?
  ) -> [Action] {
    guard sender == leader, let own, own.state == .playing, point.state == .playing,
      let clock = clocks[sender]?.best(at: now)
    else { return [] }
    let heardAt = UInt64(bitPattern: Int64(bitPattern: point.heardAt) &- clock.offset)
    let age = heardAt > now ? heardAt - now : now - heardAt
    guard age <= configuration.freshness else {
      return [.log(.warning, "a play point from \(sender) dated \(age / 1_000_000) ms from now: ignored")]
    }
    // Only within one track: the members play the same files, so a difference is a time one.
    guard point.queueIndex == own.queueIndex, point.trackID == own.trackID, point.sampleRate == own.sampleRate,
      point.trackStart == own.trackStart, heardAt >= settledAt
    else { return [] }
    // Online with a member this clock does not hear, LMS keeps the group's time: one owner.
    guard !serverIsThere || keepsTheGroupsTime(at: now) else {
      differences = []
      return []
    }
    let uncertainty = clock.uncertainty(at: now)
    var actions: [Action] = []
    let loose = Double(uncertainty) > configuration.looseClockMilliseconds * 1_000_000
    if loose != reportedUncertainClock {
      reportedUncertainClock = loose
      actions.append(
        loose
          ? .log(
            .notice,
            "\(sender)'s clock is known only to ±\(uncertainty / 1000) µs (its replies are held up); "
              + "differences within that are left alone")
          : .log(.info, "\(sender)'s clock is known to ±\(uncertainty / 1000) µs again"))
    }
    let rate = Int64(own.sampleRate)
    let sinceOwn = Int64(bitPattern: heardAt &- own.heardAt)
    let ownThen = Int64(own.frame) + sinceOwn / 1_000_000_000 * rate + sinceOwn % 1_000_000_000 * rate / 1_000_000_000
    differences.append(Int(ownThen - Int64(point.frame)))
    guard differences.count >= configuration.readings else { return actions }
    let sorted = differences.sorted()
    let difference = sorted[sorted.count / 2]
    let tolerance = Int((configuration.toleranceMilliseconds * Double(rate) / 1000).rounded(.up))
    let spread = sorted[sorted.count * 3 / 4] - sorted[sorted.count / 4]
    // A sound server's delay estimate moves by a few periods: three times the readings, whose
    // median is then as good, as long as their middle half stays within a couple of milliseconds.
    let enough = spread <= 2 * tolerance || differences.count >= 3 * configuration.readings
    guard enough else { return actions }
    differences = []
    guard spread <= 8 * tolerance else {
      guard !reportedCoarse else { return actions }
      reportedCoarse = true
      return actions + [
        .log(.notice, "this player's position reads too coarsely to correct by (\(spread) frames apart); left alone")
      ]
    }
    let clockError = Int(uncertainty) * Int(rate) / 1_000_000_000
    guard abs(difference) >= tolerance + clockError else {
      guard isJoining else { return actions }
      isJoining = false
      return actions + [.log(.notice, "in step with \(sender)")]
    }
    let microseconds = abs(difference) * 1_000_000 / Int(rate)
    let way = difference > 0 ? "ahead of" : "behind"
    settledAt = now + configuration.settleNanoseconds
    return actions + [
      .nudge(frames: difference),
      .log(
        .info,
        "\(abs(difference)) frames (\(microseconds) µs) \(way) \(sender) (its clock known to ±\(uncertainty / 1000) µs): "
          + "corrected"),
    ]
  }
}
