#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// CLOCK_MONOTONIC readings. SlimProto's "jiffies" are these milliseconds truncated to 32 bits.
/// A vDSO call: cheap, allocation-free, safe on the output thread.
public enum MonotonicClock {
  @inlinable
  public static func nanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
  }

  public static func milliseconds() -> UInt64 { nanoseconds() / 1_000_000 }

  public static func jiffies() -> UInt32 { UInt32(truncatingIfNeeded: milliseconds()) }

  /// The first whole multiple of `period` (ns) after `now`: periodic work that fires on this
  /// grid shares its wake-ups with every other such work.
  public static func nextTick(every period: UInt64, after now: UInt64) -> UInt64 {
    (now / period + 1) * period
  }

  /// Sleeps until the clock reads `deadline` (ns), whatever signals arrive meanwhile.
  public static func sleep(until deadline: UInt64) {
    var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
  }
}
