import CSupport

#if canImport(Glibc)
  import Glibc
#endif

/// A POSIX thread of the realtime path, with a small stack (Swift's default 8 MB per thread would
/// show in RSS once pages are locked), that its owner ends and joins.
public final class RealtimeThread: Sendable {
  private let thread: pthread_t

  /// Starts `body` on a new thread named `name` (15 characters are kept).
  public init(name: String, stackBytes: Int = 256 * 1024, _ body: @escaping @Sendable () -> Void) {
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    pthread_attr_setstacksize(&attributes, stackBytes)
    defer { pthread_attr_destroy(&attributes) }
    let box = Unmanaged.passRetained(ThreadBody(body, name: name)).toOpaque()
    var thread = pthread_t()
    let result = pthread_create(
      &thread, &attributes,
      { context in
        let work = Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue()
        slimplay_set_thread_name(String(work.name.prefix(15)))
        work.body()
        return nil
      }, box)
    precondition(result == 0, "pthread_create failed: \(result)")
    self.thread = thread
  }

  /// Waits at most `timeoutMilliseconds` for the body to return (its owner asked it to first).
  /// False when it did not: the thread is then detached and ends on its own.
  public func join(timeoutMilliseconds: Int) -> Bool {
    slimplay_join_thread(thread, Int32(timeoutMilliseconds)) == 0
  }

  /// Asks for SCHED_FIFO at `priority` for the calling thread; false (and nothing changed)
  /// without the privilege.
  @discardableResult
  public static func makeCurrentRealtime(priority: Int32) -> Bool {
    var parameters = sched_param(sched_priority: priority)
    return pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters) == 0
  }
}

private final class ThreadBody: Sendable {
  let body: @Sendable () -> Void
  let name: String

  init(_ body: @escaping @Sendable () -> Void, name: String) {
    self.body = body
    self.name = name
  }
}
