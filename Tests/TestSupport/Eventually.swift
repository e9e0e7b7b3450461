import Support

#if canImport(Glibc)
  import Glibc
#endif

/// Polls `condition` every millisecond for at most `seconds`; the test fails on its own
/// `#expect` when the condition never held.
@discardableResult
public func eventually(within seconds: Double = 10, _ condition: () -> Bool) -> Bool {
  let deadline = MonotonicClock.nanoseconds() + UInt64(seconds * 1e9)
  while MonotonicClock.nanoseconds() < deadline {
    if condition() { return true }
    usleep(1000)
  }
  return condition()
}
