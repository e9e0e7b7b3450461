import CSupport
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Lets a realtime thread sleep until there is work, without polling. Built on an eventfd:
/// `signal()` is one `write`, and only when the sleeper said it is waiting, so a busy producer
/// makes no system calls at all.
///
/// The handshake is a store then a load on each side: the producer publishes its work (its ring's
/// releasing store) and then reads `sleeping`; the sleeper stores `sleeping` and then reads the
/// ring (`stillIdle`). Acquire/release alone lets either load pass the store before it (x86's
/// store buffer does it, ARM more freely), and then each side misses the other's store: a lost
/// wake-up, ended only by the wait's timeout. A sequentially consistent fence between the store
/// and the load on both sides forbids that: at least one side sees the other.
public final class Wakeup: @unchecked Sendable {
  private let fd: Int32
  private let sleeping = Atomic<Bool>(false)

  public init() {
    fd = slimplay_eventfd()
    precondition(fd >= 0, "eventfd failed")
  }

  deinit {
    close(fd)
  }

  public func signal() {
    signal(when: { true })
  }

  /// `signal()` only when `worthWaking`, which reads what the sleeper waits for (a fill level, a
  /// state). It is read after the fence: the sleeper stored it before announcing its sleep, so a
  /// value read then is at least as new as the one the sleep goes with; read before the fence, a
  /// stale "not worth it" could skip the very wake-up the sleep needs.
  public func signal(when worthWaking: () -> Bool) {
    atomicMemoryFence(ordering: .sequentiallyConsistent)
    guard sleeping.load(ordering: .relaxed), worthWaking() else { return }
    var one: UInt64 = 1
    _ = write(fd, &one, 8)
  }

  /// Unconditional wake-up, for commands (rare, must never be missed).
  public func signalAlways() {
    var one: UInt64 = 1
    _ = write(fd, &one, 8)
  }

  /// Sleeps until signalled or `timeoutMilliseconds` pass (-1 = no limit). `stillIdle` is checked
  /// after announcing the sleep, so a signal sent between the caller's last check and the sleep
  /// is never lost.
  public func wait(timeoutMilliseconds: Int32, stillIdle: () -> Bool = { true }) {
    sleeping.store(true, ordering: .relaxed)
    defer { sleeping.store(false, ordering: .releasing) }
    atomicMemoryFence(ordering: .sequentiallyConsistent)
    guard stillIdle() else { return }
    var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let ready = poll(&descriptor, 1, timeoutMilliseconds)
    if ready > 0 {
      var value: UInt64 = 0
      _ = read(fd, &value, 8)
    }
  }
}
