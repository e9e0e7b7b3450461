#if canImport(Glibc)
  import Glibc
#endif

/// `-f`: standard error goes to a file (appended to), so every log line, and anything a library
/// prints, lands there. `reopen()` after logrotate has moved it (SIGHUP).
final class LogFile: Sendable {
  let path: String

  init(path: String) throws {
    self.path = path
    guard redirect() else {
      SlimplayCommand.printError("slimplay: cannot open the log file \(path): \(String(cString: strerror(errno)))")
      throw ExitStatus.failure
    }
  }

  func reopen() {
    if !redirect() {
      // The old descriptor stays: lines keep going to the moved file rather than nowhere.
      let reason = String(cString: strerror(errno))
      SlimplayCommand.printError("slimplay: cannot reopen the log file \(path): \(reason)")
    }
  }

  private func redirect() -> Bool {
    let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    return dup2(descriptor, STDERR_FILENO) >= 0
  }
}
