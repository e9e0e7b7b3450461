import NIOCore
import Support

/// Runs a body on the event loop every `period`, at whole multiples of the period on the
/// monotonic clock (NIO's deadlines read CLOCK_MONOTONIC too). The player's periodic work — the
/// heartbeat, the liveness and stall checks, the state save — then shares one wake-up of the loop
/// a second instead of taking one each; on a loop with nothing else to do, the wake-up is most of
/// what such work costs. Created, run and cancelled on its event loop only.
public final class AlignedTick {
  private let eventLoop: any EventLoop
  private let period: UInt64
  private let body: () -> Void
  private var scheduled: Scheduled<Void>?
  private var lastDeadline: UInt64 = 0
  private var cancelled = false

  public init(on eventLoop: any EventLoop, every period: TimeAmount, _ body: @escaping () -> Void) {
    eventLoop.preconditionInEventLoop()
    self.eventLoop = eventLoop
    self.period = UInt64(max(1, period.nanoseconds))
    self.body = body
    scheduleNext()
  }

  /// No more runs; a run under way finishes.
  public func cancel() {
    cancelled = true
    scheduled?.cancel()
    scheduled = nil
  }

  private func scheduleNext() {
    // The loop's clock (a test loop's is virtual), and never the same tick twice.
    let deadline = MonotonicClock.nextTick(every: period, after: max(eventLoop.now.uptimeNanoseconds, lastDeadline))
    lastDeadline = deadline
    scheduled = eventLoop.assumeIsolated().scheduleTask(deadline: .uptimeNanoseconds(deadline)) { [weak self] in
      guard let self, !self.cancelled else { return }
      self.body()
      if !self.cancelled { self.scheduleNext() }
    }
  }
}
