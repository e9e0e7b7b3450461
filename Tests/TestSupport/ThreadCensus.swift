#if canImport(Glibc)
  import Glibc
#endif

/// Tests that count the process's threads by name (a pipeline leaves none behind) and tests that
/// run whole players, whose threads carry the same names, take turns: `swift test` runs suites
/// side by side in one process.
public func takingThreadCensusTurn<T>(_ body: () throws -> T) rethrows -> T {
  pthread_mutex_lock(&censusLock.mutex)
  defer { pthread_mutex_unlock(&censusLock.mutex) }
  return try body()
}

private final class CensusLock: @unchecked Sendable {
  var mutex = pthread_mutex_t()
  init() { pthread_mutex_init(&mutex, nil) }
}

private let censusLock = CensusLock()
