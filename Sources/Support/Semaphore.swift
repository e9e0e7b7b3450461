import CSupport

#if canImport(Glibc)
  import Glibc
#endif

/// A POSIX semaphore whose every wait has a limit: a thread that does not answer (an output
/// blocked in a device write) costs the waiter a bounded time, never a hang.
public final class Semaphore: @unchecked Sendable {
  // sem_t is shared memory by design: sem_post and the timed wait are the synchronisation.
  private let semaphore: UnsafeMutablePointer<sem_t>

  public init() {
    semaphore = .allocate(capacity: 1)
    sem_init(semaphore, 0, 0)
  }

  deinit {
    sem_destroy(semaphore)
    semaphore.deallocate()
  }

  /// Async-signal-safe and lock-free: usable from the realtime threads.
  public func signal() { sem_post(semaphore) }

  /// Waits for a signal at most `milliseconds` (on the monotonic clock: setting the wall clock
  /// does not change the limit); false when the time ran out.
  public func wait(milliseconds: Int) -> Bool {
    slimplay_semaphore_wait(semaphore, Int32(clamping: milliseconds)) == 0
  }

  /// Waits until `condition` holds, woken by signals, at most `milliseconds` in all; false when
  /// it still does not hold then. A signal left over from an earlier wait that timed out only
  /// costs one more look at the condition.
  public func wait(milliseconds: Int, until condition: () -> Bool) -> Bool {
    let deadline = MonotonicClock.nanoseconds() + UInt64(max(0, milliseconds)) * 1_000_000
    while !condition() {
      let now = MonotonicClock.nanoseconds()
      guard now < deadline else { return false }
      _ = wait(milliseconds: max(1, Int((deadline - now) / 1_000_000)))
    }
    return true
  }

  /// Takes a pending signal without waiting; false when there is none.
  public func tryWait() -> Bool { sem_trywait(semaphore) == 0 }
}
