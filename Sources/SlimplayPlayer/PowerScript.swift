import Dispatch
import Logging
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// `-S script`, as squeezelite runs it: `script 2` once at start, then `script 1` / `script 0`
/// whenever the server powers the player on or off — typically to switch an amplifier. The
/// script runs detached; a failing script is logged, never waited for on the control loop.
final class PowerScript {
  private let path: String
  private let logger: Logger
  private var lastState: Bool?

  init(path: String, logger: Logger) {
    self.path = path
    self.logger = logger
  }

  func started() { run("2") }

  /// Control loop: the server's `aude`; only a change runs the script.
  func powerChanged(isOn: Bool) {
    guard lastState != isOn else { return }
    lastState = isOn
    run(isOn ? "1" : "0")
  }

  private func run(_ argument: String) {
    var pid: pid_t = 0
    let arguments = [path, argument]
    var argv = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    // The player blocks SIGINT and SIGTERM in every thread; the script gets the defaults.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    ShutdownSignals.resetForChild(&attributes)
    let result = posix_spawn(&pid, path, nil, &attributes, &argv, environ)
    guard result == 0 else {
      logger.error("power script \(path) \(argument): cannot start it: \(errorText(result))")
      return
    }
    logger.info("power script: \(path) \(argument)")
    let path = self.path
    let logger = self.logger
    let child = pid
    DispatchQueue.global().async {
      var status: Int32 = 0
      while waitpid(child, &status, 0) < 0 && errno == EINTR {}
      // WIFEXITED/WEXITSTATUS by hand: the macros are not imported.
      let exited = status & 0x7f == 0
      let code = (status >> 8) & 0xff
      if !exited || code != 0 {
        logger.warning("power script \(path) \(argument) ended with status \(exited ? code : -1)")
      }
    }
  }
}
