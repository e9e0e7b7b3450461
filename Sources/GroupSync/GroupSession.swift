import Logging
import NIOCore
import SlimProto
import Support

/// Keeps this player in time with the rest of its LMS sync group: the link's datagrams go through
/// the filter into the `GroupClock`, whose corrections go to the output. Lives as long as the
/// player is in the group. Confined to the control event loop.
public final class GroupSession: @unchecked Sendable {
  /// This player's play point at a monotonic instant (nil: nothing plays).
  public typealias PlayPointSource = (UInt64) -> GroupMessage.PlayPoint?

  public let group: MACAddress
  private var clock: GroupClock
  private var filter: MessageFilter
  private let link: GroupLink
  private let ownPlayPoint: PlayPointSource
  private let nudge: (Int) -> Void
  private let eventLoop: any EventLoop
  private let logger: Logger
  private var ticker: RepeatedTask?
  private var refusals = 0
  private var lastRefusalLogged: UInt64 = 0

  /// `members`: every member LMS listed, this player included, with the address LMS had for it.
  public init(
    link: GroupLink, master: MACAddress, members: [MACAddress: String?], ownPlayPoint: @escaping PlayPointSource,
    nudge: @escaping (Int) -> Void, eventLoop: any EventLoop, logger: Logger
  ) {
    group = master
    clock = GroupClock(player: link.player, master: master, members: Set(members.keys))
    filter = MessageFilter(group: master, members: members)
    self.link = link
    self.ownPlayPoint = ownPlayPoint
    self.nudge = nudge
    self.eventLoop = eventLoop
    self.logger = logger
  }

  public func start() {
    link.open { [self] message, source, authentication, arrivedAt in
      received(message, from: source, authentication: authentication, arrivedAt: arrivedAt)
    }.whenComplete { [self] result in
      switch result {
      case .failure(let error):
        logger.warning("cannot join the group's network (\(error)); playing on without it")
      case .success:
        ticker = eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: .milliseconds(100)) { [self] _ in
          let now = MonotonicClock.nanoseconds()
          perform(clock.tick(now: now, own: ownPlayPoint(now)))
        }
      }
    }
  }

  /// Where the group's leader is heard now (nil: no leader heard playing, or its clock not yet known).
  public func leaderPlayPoint(at now: UInt64) -> GroupMessage.PlayPoint? { clock.leaderPlayPoint(at: now) }

  /// Whether the server is there, streaming to the group and checking its sync itself.
  public func serverIsThere(_ there: Bool) { clock.serverIsThere(there) }

  /// Whether the group's clock keeps its time now, online too (`GroupClock.keepsTheGroupsTime`).
  public func keepsTheGroupsTime() -> Bool { clock.keepsTheGroupsTime(at: MonotonicClock.nanoseconds()) }

  /// This player starts at the leader's position: it leads nobody until found in step.
  public func beginJoining() { clock.beginJoining() }

  public func stop() {
    ticker?.cancel()
    ticker = nil
    link.close()
  }

  private func received(
    _ message: GroupMessage, from source: String, authentication: MessageFilter.Authentication, arrivedAt: UInt64?
  ) {
    // Its own datagrams come back on the loop.
    guard message.sender != link.player else { return }
    switch filter.check(message, from: source, authentication: authentication) {
    case .accepted:
      let now = MonotonicClock.nanoseconds()
      perform(
        clock.received(message, now: now, arrivedAt: arrivedAt.map { min($0, now) }, own: ownPlayPoint(now)))
    case .otherGroup:
      break
    case .refused(let why):
      refusals += 1
      let now = MonotonicClock.nanoseconds()
      // A flood of forged datagrams must not flood the log: one line every 10 s at most.
      guard now - lastRefusalLogged >= 10_000_000_000 || lastRefusalLogged == 0 else { return }
      lastRefusalLogged = now
      logger.warning("refused a datagram from \(source) (\(why)); \(refusals) refused so far")
    }
  }

  private func perform(_ actions: [GroupClock.Action]) {
    for action in actions {
      switch action {
      case .send(let body): link.send(body, group: group)
      case .nudge(let frames): nudge(frames)
      case .log(.info, let line): logger.info("\(line)")
      case .log(.notice, let line): logger.notice("\(line)")
      case .log(.warning, let line): logger.warning("\(line)")
      }
    }
  }
}
