#if canImport(Glibc)
  import Glibc
#endif

/// SIGINT and SIGTERM, taken by the main thread itself: blocked before any other thread starts
/// (threads inherit the mask), then awaited with `sigwait`. A dispatch signal source would start
/// libdispatch's manager and worker threads for two signals in the player's whole life.
enum ShutdownSignals {
  static let numbers: [Int32] = [SIGINT, SIGTERM]

  /// Before any thread is created: from then on these signals wait for `next()`.
  static func block() {
    var set = signalSet()
    pthread_sigmask(SIG_BLOCK, &set, nil)
  }

  /// Blocks the calling thread until SIGINT or SIGTERM arrives; returns its number. A second one
  /// after this ends the process at once, as it would without a handler.
  static func next() -> Int32 {
    var set = signalSet()
    var number: Int32 = 0
    while sigwait(&set, &number) != 0 {}
    pthread_sigmask(SIG_UNBLOCK, &set, nil)
    return number
  }

  /// For a child process: the mask and the dispositions it should start with.
  static func resetForChild(_ attributes: inout posix_spawnattr_t) {
    var empty = sigset_t()
    sigemptyset(&empty)
    var handled = signalSet()
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setsigdefault(&attributes, &handled)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
  }

  private static func signalSet() -> sigset_t {
    var set = sigset_t()
    sigemptyset(&set)
    for number in numbers { sigaddset(&set, number) }
    return set
  }
}
