#if canImport(Glibc)
  import Glibc
#endif

/// SIGINT and SIGTERM (and SIGHUP with a log file), taken by the main thread itself: blocked
/// before any other thread starts (threads inherit the mask), then awaited with `sigwait`. A
/// dispatch signal source would start libdispatch's manager and worker threads for a few signals
/// in the player's whole life.
public enum ShutdownSignals {
  public static let numbers: [Int32] = [SIGINT, SIGTERM]

  /// Before any thread is created: from then on these signals (and SIGHUP when `hangUp`) wait
  /// for `next(hangUp:)`.
  public static func block(hangUp: Bool) {
    var set = signalSet(hangUp: hangUp)
    pthread_sigmask(SIG_BLOCK, &set, nil)
  }

  /// Blocks the calling thread until SIGINT or SIGTERM arrives (or SIGHUP, when `hangUp`);
  /// returns its number. After SIGINT or SIGTERM a second one ends the process at once, as it
  /// would without a handler.
  public static func next(hangUp: Bool) -> Int32 {
    var set = signalSet(hangUp: hangUp)
    var number: Int32 = 0
    while sigwait(&set, &number) != 0 {}
    if number != SIGHUP {
      var shutdown = signalSet(hangUp: false)
      pthread_sigmask(SIG_UNBLOCK, &shutdown, nil)
    }
    return number
  }

  /// For a child process: the mask and the dispositions it should start with.
  public static func resetForChild(_ attributes: inout posix_spawnattr_t) {
    var empty = sigset_t()
    sigemptyset(&empty)
    var handled = signalSet(hangUp: true)
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setsigdefault(&attributes, &handled)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
  }

  private static func signalSet(hangUp: Bool) -> sigset_t {
    var set = sigset_t()
    sigemptyset(&set)
    for number in numbers { sigaddset(&set, number) }
    if hangUp { sigaddset(&set, SIGHUP) }
    return set
  }
}
