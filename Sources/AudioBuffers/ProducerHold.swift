import Support
import Synchronization

/// Holds the decoder thread (the stream ring's consumer and the output ring's producer) at a safe
/// point while another thread resets what it works on: the control side drains the stream ring,
/// the output thread truncates or empties the output ring.
///
/// Holds are counted, and any thread may end one: the control side takes a hold, resets the stream
/// side, and hands the hold to the output thread with its flush request, which ends it once the
/// output ring is reset. The decoder goes on only when no hold is left, so a flush that waits for
/// a blocked device write keeps the decoder away from the ring until it is done, without the
/// control side waiting for it. Lock-free; `release` is one atomic and one eventfd write.
///
/// Every operation on `state` is an acquire/release read-modify-write of one word, so no store is
/// followed by a load of another location (no fence needed). The pairs: the decoder's `bitwiseOr`
/// as it parks with the holder's `add` or load that sees it parked (the holder then sees the
/// decoder's last ring and queue writes); the holder's `subtract` with the decoder's exchange as it
/// leaves (the decoder then sees what was reset under the hold, e.g. `RingBuffer.truncate`).
public final class ProducerHold: Sendable {
  /// Bit 0: the decoder is parked. The rest: holds × 2.
  private let state = Atomic<Int>(0)
  private let parked = Semaphore()
  /// The decoder's own wake-up: it sleeps there while parked.
  private let wakeup: Wakeup

  public init(wakeup: Wakeup) {
    self.wakeup = wakeup
  }

  // MARK: Any thread but the decoder's

  /// Takes a hold and waits, at most `timeoutMilliseconds`, until the decoder is parked. False
  /// when it did not park in time: the hold is then given back and nothing may be reset.
  public func hold(timeoutMilliseconds: Int) -> Bool {
    let before = state.add(2, ordering: .acquiringAndReleasing).oldValue
    if before & 1 == 1 { return true }
    wakeup.signalAlways()
    guard parked.wait(milliseconds: timeoutMilliseconds, until: { state.load(ordering: .acquiring) & 1 == 1 }) else {
      release()
      return false
    }
    return true
  }

  /// Ends one hold; the decoder goes on once none is left.
  public func release() {
    state.subtract(2, ordering: .acquiringAndReleasing)
    wakeup.signalAlways()
  }

  // MARK: Decoder thread

  /// Whether someone waits for the decoder to park.
  public var isRequested: Bool { state.load(ordering: .acquiring) >= 2 }

  /// Parks until every hold is released, or `stopping` says the thread is ending.
  public func park(while stillRunning: () -> Bool) {
    state.bitwiseOr(1, ordering: .acquiringAndReleasing)
    parked.signal()
    while stillRunning() {
      // Leaves only when no hold is left, atomically with clearing the parked bit, so a hold
      // taken at the same moment finds the decoder still parked or sees it must wait again.
      if state.compareExchange(expected: 1, desired: 0, ordering: .acquiringAndReleasing).exchanged { return }
      wakeup.wait(timeoutMilliseconds: 100) { self.state.load(ordering: .acquiring) != 1 }
    }
  }
}
