import AudioOutput
import Logging
import SlimplayPlayer
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// The process around one player: its log file, the fork into the background, logging, the pid
/// file and the signals; the player itself is `Player`'s to build, run and tear down.
struct PlayerRuntime {
  let settings: PlayerSettings

  func run() throws {
    // Before any thread: the log file takes standard error, then the fork leaves the terminal.
    let logFile = try settings.logFile.map { path in try LogFile(path: path) }
    if settings.daemonize {
      // The working folder is kept: relative paths given with -f (reopened on SIGHUP), -P or
      // --state-dir keep meaning what they meant on the command line.
      guard daemon(1, 1) == 0 else {
        SlimplayCommand.printError("slimplay: cannot run in the background: \(String(cString: strerror(errno)))")
        throw ExitStatus.failure
      }
      // Nothing of the starting terminal is kept but what is used: the audio of `-o -`, the log file.
      detachStandardStreams(keepOutput: settings.output == .standardOutput, keepError: logFile != nil)
    }
    ShutdownSignals.block(hangUp: logFile != nil)
    let logging = settings.logging
    LoggingSystem.bootstrap { label in
      StderrLogHandler(label: label, level: logging.level(for: label))
    }
    ALSADevices.routeLibraryMessages { message in
      guard let message else { return }
      alsaLibraryLogger.debug("alsa-lib: \(String(cString: message))")
    }
    if settings.listDevices {
      listDevices()
      return
    }
    if let device = settings.listMixerDevice {
      listMixerControls(device: device)
      return
    }
    let logger = Logger(label: LogConfiguration.Category.slimproto.rawValue)
    for ignored in settings.ignoredOptions { logger.warning("\(ignored)") }
    let player: Player
    do {
      player = try Player(
        settings: settings, environment: Environment.current(["STATE_DIRECTORY", "XDG_STATE_HOME", "HOME"]))
    } catch {
      // A second process for the same player would overwrite the first one's state.
      logger.error("\(error)")
      throw ExitStatus.failure
    }
    // After the state folder is taken: a second process refused above leaves the running one's
    // pid file alone.
    if let pidFile = settings.pidFile {
      do {
        try FileIO.writeAtomically(pidFile, Array("\(getpid())\n".utf8))
      } catch {
        logger.error("cannot write pid file: \(error)")
        throw ExitStatus.failure
      }
    }
    defer { if let pidFile = settings.pidFile { unlink(pidFile) } }
    do {
      try player.start()
    } catch {
      logger.error("\(error)")
      throw ExitStatus.failure
    }
    var number = ShutdownSignals.next(hangUp: logFile != nil)
    while number == SIGHUP, let logFile {
      // logrotate moved the file away: the log goes on in a new one of the same name.
      logFile.reopen()
      logger.notice("SIGHUP: log file \(logFile.path) reopened")
      number = ShutdownSignals.next(hangUp: true)
    }
    logger.notice("signal \(number): shutting down")
    player.stop()
  }

  private func detachStandardStreams(keepOutput: Bool, keepError: Bool) {
    let null = open("/dev/null", O_RDWR | O_CLOEXEC)
    guard null >= 0 else { return }
    dup2(null, STDIN_FILENO)
    if !keepOutput { dup2(null, STDOUT_FILENO) }
    if !keepError { dup2(null, STDERR_FILENO) }
    close(null)
  }

  private func listMixerControls(device: String) {
    let controls = ALSAMixer.controls(device: device)
    var text = "Volume controls of \(device):\n"
    for control in controls { text += "  \(control)\n" }
    if controls.isEmpty { text += "  (none found)\n" }
    SlimplayCommand.printOutput(text)
  }

  private func listDevices() {
    let devices = ALSADevices.list()
    var text = "Output devices:\n"
    for device in devices {
      text += "  \(device.name)" + (device.description.isEmpty ? "" : " - \(device.description)") + "\n"
    }
    if devices.isEmpty { text += "  (none found)\n" }
    SlimplayCommand.printOutput(text)
  }
}

/// alsa-lib's messages: details of failures slimplay reports itself.
private let alsaLibraryLogger = Logger(label: LogConfiguration.Category.output.rawValue)
