import AudioOutput

/// The output device as the engine sees it: what the output thread reports about opening,
/// failing and closing it (logged without repeating a failure every second), the mixer kept in
/// step, and the shutdown.
extension StreamingEngine {
  /// The process is exiting: streams closed, both threads ended, the device closed (not left to
  /// the kernel), the mixer's last setting applied.
  public func shutDown() {
    if !pipeline.stop() {
      logger.warning("output: \(deviceName) still blocked in a write after 2 s; exiting without closing it")
    }
    hardwareVolume?.settle()
    tracks.removeAll()
    outputRunning = false
  }

  /// The first step of a shutdown: the output stops writing, so the heard position is what the
  /// device took, measured, and can be saved as such. A write that has not returned in half a
  /// second is stuck (a reader that stopped): the shutdown's own wait for it follows.
  public func haltOutput() {
    guard outputRunning, !player.halt(timeoutMilliseconds: 500) else { return }
    logger.warning("output: \(deviceName) blocked in a write; the saved position is an estimate")
  }

  /// On the control loop.
  func handleDeviceEvent(_ event: OutputEvent) {
    switch event {
    case .deviceOpened(let rate):
      if let failure = deviceFailure {
        logger.notice("output: \(deviceName) available after \(failure.count) failed attempts")
        deviceFailure = nil
      }
      logger.info("output: \(deviceName) opened at \(rate) Hz")
      hardwareVolume?.deviceOpened()
    case .deviceFailed(let message):
      // Retried every second: an absent or busy device is logged once, then every minute.
      if let failure = deviceFailure, failure.message == message {
        deviceFailure?.count += 1
        if failure.count % 60 == 0 {
          logger.warning("output: still failing (\(failure.count + 1) attempts): \(message)")
        }
      } else {
        deviceFailure = (message, 1)
        logger.error("output: \(message); retrying every second")
      }
    case .deviceClosed(let reason):
      switch reason {
      case .idle(let seconds): logger.info("output: \(deviceName) closed after \(seconds) s idle")
      case .poweredOff: logger.info("output: \(deviceName) closed (powered off)")
      case .shutdown: logger.info("output: \(deviceName) closed")
      }
    case .realtimePriority(let priority, let granted):
      if granted {
        logger.info("output thread: real-time priority \(priority) (SCHED_FIFO)")
      } else {
        logger.notice("output thread: no right to real-time priority \(priority); running at normal priority")
      }
    case .startChecked(let offset, let corrected, let rate):
      let milliseconds = (Double(offset) * 1000 / Double(max(1, rate)) * 100).rounded() / 100
      let side = offset >= 0 ? "ahead of" : "behind"
      if corrected != 0 {
        let remedy = corrected > 0 ? "of silence" : "skipped"
        logger.info(
          "sync: timed start heard \(abs(milliseconds)) ms \(side) its time; \(abs(corrected)) frames \(remedy)")
      } else {
        logger.debug("sync: timed start heard \(abs(milliseconds)) ms \(side) its time")
      }
    case .trackStarted, .ranDry, .pauseHeard:
      break
    }
  }
}
