import Logging
import NIOCore

/// Reads the player's queue and now-playing state from LMS: right after the events that change
/// it (`pollSoon`, e.g. on STMs/STMd) and on a slow timer otherwise. It is the single source of
/// that state: observers get each new, complete status once, never a half-filled placeholder.
public final class StatusPoller: @unchecked Sendable {
  public struct Configuration: Sendable {
    /// Queue entries from the current one on.
    public var entries: Int
    /// Between polls while nothing prompts one, after a change. Short enough that an edit made in
    /// the web UI reaches the cache plan within about this long.
    public var interval: TimeAmount
    /// Each poll that finds nothing new but the time doubles the interval, up to this: a player
    /// playing through an album it already knows polls every few seconds, not every 1.5 s.
    public var longestInterval: TimeAmount
    /// After `pollSoon`, so several triggers in a burst cost one request.
    public var debounce: TimeAmount

    public init(
      entries: Int = 6, interval: TimeAmount = .milliseconds(1500), longestInterval: TimeAmount = .seconds(6),
      debounce: TimeAmount = .milliseconds(100)
    ) {
      self.entries = entries
      self.interval = interval
      self.longestInterval = max(interval, longestInterval)
      self.debounce = debounce
    }

    /// The wait before the next timed poll after `quietPolls` polls in a row found nothing new.
    public func interval(afterQuietPolls quietPolls: Int) -> TimeAmount {
      min(.nanoseconds(interval.nanoseconds << Int64(min(quietPolls, 16))), longestInterval)
    }
  }

  public let client: LMSClient
  private let configuration: Configuration
  private let logger: Logger
  private var observers: [(LMSStatus) -> Void] = []
  private var timer: Scheduled<Void>?
  private var inFlight = false
  private var pollAgain = false
  private var running = false
  private var failures = 0
  /// Polls in a row that found nothing new but the time.
  private var quietPolls = 0
  /// The last complete status.
  public private(set) var latest: LMSStatus?

  public init(client: LMSClient, configuration: Configuration = Configuration(), logger: Logger) {
    self.client = client
    self.configuration = configuration
    self.logger = logger
  }

  private var eventLoop: any EventLoop { client.eventLoop }

  /// Called with every status that differs from the previous one, on the event loop.
  public func observe(_ observer: @escaping (LMSStatus) -> Void) {
    observers.append(observer)
  }

  public func start() {
    eventLoop.preconditionInEventLoop()
    guard !running else { return }
    running = true
    schedule(after: .zero)
  }

  public func stop() {
    running = false
    timer?.cancel()
    timer = nil
  }

  /// Something changed on the server's side of the queue: poll shortly.
  public func pollSoon() {
    eventLoop.preconditionInEventLoop()
    guard running else { return }
    quietPolls = 0
    schedule(after: configuration.debounce)
  }

  /// One status request now, outside the timer: the queue from the current entry on, or from
  /// `index` on (resync reads the window around the track being heard, wherever LMS stands).
  public func fetch(from index: Int? = nil) -> EventLoopFuture<LMSStatus> {
    let start: JSONValue = index.map { .number(Double($0)) } ?? "-"
    return client.request(["status", start, .number(Double(configuration.entries)), .string(LMSStatus.tags)])
      .map { LMSStatus(result: $0) }
  }

  private func schedule(after delay: TimeAmount) {
    if inFlight {
      pollAgain = true
      return
    }
    timer?.cancel()
    timer = eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in poll() }
  }

  private func poll() {
    guard running else { return }
    inFlight = true
    fetch().hop(to: eventLoop).assumeIsolated().whenComplete { [self] result in
      inFlight = false
      switch result {
      case .success(let status):
        if failures > 0 { logger.info("status: server answers again") }
        failures = 0
        let previous = latest
        publish(status)
        let changed = previous.map { !status.equalsIgnoringTime($0) } ?? true
        quietPolls = changed ? 0 : quietPolls + 1
      case .failure(let error):
        failures += 1
        if failures == 1 { logger.warning("status: \(error)") }
      }
      guard running else { return }
      let again = pollAgain
      pollAgain = false
      // While the server does not answer, back off to 5 s.
      let idle = failures > 0 ? TimeAmount.seconds(5) : configuration.interval(afterQuietPolls: quietPolls)
      schedule(after: again ? configuration.debounce : idle)
    }
  }

  private func publish(_ status: LMSStatus) {
    // A track LMS has not scanned yet comes without a title: not worth showing or planning on.
    if status.mode != .stop, let current = status.currentTrack, current.title.isEmpty { return }
    guard status != latest else { return }
    latest = status
    for observer in observers { observer(status) }
  }
}
