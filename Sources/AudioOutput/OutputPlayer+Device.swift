import AudioBuffers
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// The device's life on the output thread: opened lazily at a track's rate and retried once a
/// second, written with a note of when (for `-C`), closed when idle, powered off or exiting.
extension OutputPlayer {
  /// Powered off (`aude 0`): stop using the device, so it is free and the DAC can sleep. It is
  /// opened again when there is something to play.
  /// The server switched the output off or on (`aude`). Off, nothing more is written at once and
  /// what is buffered waits for the output to come on again (the server pauses or stops it
  /// meanwhile): what a pipe holds is its reader's, what a sound card holds plays out, and the card
  /// closes so that others may use it.
  public func setPowered(_ on: Bool) { post { $0.powered = on } }

  /// The pipeline is ending: stops, drops what is buffered, closes the device and ends the output
  /// thread. The decoder must have stopped. False when the output thread did not get to it in
  /// time: a device write that blocks (a stalled reader on `-o -`) must not keep the process
  /// from exiting.
  @discardableResult
  public func shutDown(timeoutMilliseconds: Int = 2000) -> Bool {
    postAndWait(timeoutMilliseconds: timeoutMilliseconds) {
      $0.stop = true
      $0.flushAll = true
      $0.closeDevice = .shutdown
      $0.exit = true
    }
  }

  /// `-C`: with nothing to play for the configured time, the device is closed.
  func closeDeviceIfIdle() {
    guard let seconds = configuration.idleCloseSeconds, device.isOpen,
      MonotonicClock.nanoseconds() - lastWriteNanoseconds >= UInt64(seconds) * 1_000_000_000
    else { return }
    closeDevice(.idle(seconds: seconds))
  }

  /// `playingOut`: what the device (and a sound server behind it) holds is heard first (a close
  /// drains); else it is dropped.
  func closeDevice(_ reason: CloseReason, playingOut: Bool = false) {
    if !playingOut { device.discardQueued() }
    device.close()
    publish(running: false)
    onEvent(.deviceClosed(reason))
  }

  /// Opens the device for frames of `format` (PCM or native DSD).
  func ensureOpen(for format: AudioFormat) -> Bool {
    ensureOpen(rate: format.sampleRate, nativeDSD: format.encoding.nativeDSD)
  }

  func ensureOpen(rate: Int, nativeDSD: NativeDSDFormat?) -> Bool {
    if device.isOpen && device.sampleRate == rate && device.nativeDSD == nativeDSD { return true }
    // Once a second at most, however often frames arrive meanwhile.
    let now = MonotonicClock.nanoseconds()
    if now < nextOpenAttempt {
      wakeup.wait(timeoutMilliseconds: Int32(max(1, (nextOpenAttempt - now) / 1_000_000)))
      return false
    }
    do {
      try device.open(sampleRate: rate, nativeDSD: nativeDSD)
      schedule = nil  // a device opened anew has a delay of its own
      machine.deviceOpened(clocked: device.isClocked)
      lastWriteNanoseconds = MonotonicClock.nanoseconds()
      nextOpenAttempt = 0
      onEvent(.deviceOpened(sampleRate: rate))
      return true
    } catch {
      onEvent(.deviceFailed(error.description))
      nextOpenAttempt = MonotonicClock.nanoseconds() + 1_000_000_000
      wakeup.wait(timeoutMilliseconds: 1000)
      return false
    }
  }

  /// The ring ran dry: what the device holds is pushed through to be heard. After DSD the push
  /// is DSD silence (for DoP, markers running on), so a DAC stays in DSD mode through an underrun
  /// rather than hearing zeros it would take for PCM (squeezelite writes DSD silence there too).
  func playOutQueued() {
    guard carried.isBitstream else { return device.playOutQueued() }
    var remaining = device.bufferFrames
    while remaining > 0, let written = writeSilence(frames: min(remaining, device.chunkFrames)), written > 0 {
      remaining -= written
    }
  }

  /// Writes up to `frames` (at most a buffer of them) of silence in the current track's form;
  /// frames written, nil on failure.
  func writeSilence(frames: Int) -> Int? {
    switch carried {
    case .pcm:
      write(UnsafeBufferPointer(rebasing: silence[0..<min(frames, silence.count / 2) * 2]), dither: false)
    case .dsd:
      write(UnsafeBufferPointer(rebasing: dsdSilence[0..<min(frames, dsdSilence.count / 2) * 2]), dither: false)
    case .dop:
      writeDoPSilence(frames: frames)
    }
  }

  /// DoP silence with the markers running on from the last frame written.
  private func writeDoPSilence(frames: Int) -> Int? {
    // The silence buffer alternates from the first marker: one frame in, from the second.
    let first = dopSecondMarkerNext ? 1 : 0
    let count = min(frames, dsdSilence.count / 2 - first)
    let written = write(UnsafeBufferPointer(rebasing: dsdSilence[2 * first..<2 * (first + count)]), dither: false)
    if let written, written % 2 == 1 { dopSecondMarkerNext.toggle() }
    return written
  }

  func write(_ samples: UnsafeBufferPointer<Int32>, dither: Bool) -> Int? {
    do {
      let written = try device.write(samples, dither: dither)
      lastWriteNanoseconds = MonotonicClock.nanoseconds()
      return written
    } catch {
      device.close()
      onEvent(.deviceFailed(error.description))
      wakeup.wait(timeoutMilliseconds: 1000)
      return nil
    }
  }
}
