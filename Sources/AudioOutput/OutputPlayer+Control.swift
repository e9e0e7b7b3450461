import AudioBuffers
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// Commands from the control side (any thread): each is posted to the output thread, which
/// applies it between chunks (`applyRequests`); those that must be done before the caller goes on
/// wait for it.
extension OutputPlayer {
  func post(_ change: (inout Requests) -> Void) {
    requests.withLock { change(&$0) }
    requestsPosted.add(1, ordering: .releasing)
    wakeup.signalAlways()
  }

  /// Posts a request and waits, at most `timeoutMilliseconds`, until the output thread applied
  /// it. False when it did not get to it in time (blocked in a device write): it is applied when
  /// the write returns. Called from one thread (the control loop) only.
  func postAndWait(timeoutMilliseconds: Int, _ change: (inout Requests) -> Void) -> Bool {
    nextSequence += 1
    let sequence = nextSequence
    post {
      change(&$0)
      $0.acknowledge = sequence
    }
    return applied.wait(milliseconds: timeoutMilliseconds) {
      appliedSequence.load(ordering: .acquiring) >= sequence
    }
  }

  public func start(_ condition: StartCondition) { post { $0.start = condition } }
  /// Everything of the track to start is buffered: a start waiting for the buffer to fill goes now;
  /// a timed start keeps its time.
  public func allBuffered() { post { $0.allBuffered = true } }
  public func pause() { post { $0.pause = true } }
  public func setGain(left: UInt32, right: UInt32) { post { $0.gain = (left, right) } }

  /// Replay gain, channel mode and polarity for a track, applied from its first frame.
  public func setTreatment(_ treatment: TrackTreatment, forTrack trackID: Int) {
    treatments.withLock { $0[trackID] = treatment }
  }
  public func insertSilence(milliseconds: Int) { post { $0.silenceMilliseconds += milliseconds } }
  public func skip(milliseconds: Int) { post { $0.skipMilliseconds += milliseconds } }
  /// Moves what is heard by whole frames (a sync group's member keeping its leader's time while the
  /// server is away): positive, heard that much later (silence inserted); negative, earlier (skipped).
  public func nudge(frames: Int) { post { $0.nudgeFrames += frames } }

  /// Stops and drops everything buffered. The decoder must be parked by a hold (it produces into
  /// the ring being emptied), which the output thread ends once it is done. Waits for that at
  /// most `timeoutMilliseconds`; false when the output thread is blocked in a device write.
  public func stopAndFlush(releasingHold: Bool, timeoutMilliseconds: Int = 2000) -> Bool {
    postAndWait(timeoutMilliseconds: timeoutMilliseconds) {
      $0.stop = true
      $0.flushAll = true
      if releasingHold { $0.releaseHolds += 1 }
    }
  }

  /// Stops writing, before the heard position is saved at shutdown. A sound card's position is
  /// measured (what was written less what it still holds, dropped unheard at its close). What a
  /// pipe holds is handed over to its reader, never taken back, and counted heard: the saved
  /// position is then exactly what its reader gets, however fast it reads in the meantime.
  public func halt(timeoutMilliseconds: Int = 2000) -> Bool {
    postAndWait(timeoutMilliseconds: timeoutMilliseconds) { $0.halt = true }
  }

  /// Drops frames from `frame` on, keeping what plays before it; as `stopAndFlush` otherwise.
  public func flush(from frame: Int, releasingHold: Bool, timeoutMilliseconds: Int = 2000) -> Bool {
    postAndWait(timeoutMilliseconds: timeoutMilliseconds) {
      $0.flushFrom = min($0.flushFrom ?? frame, frame)
      if releasingHold { $0.releaseHolds += 1 }
    }
  }

  public func currentPosition() -> PlayPosition { position.withLock { $0 } }

  /// Output thread, between chunks: applies everything posted since the last call. False once
  /// the thread is to end.
  func applyRequests() -> Bool {
    requestsTaken = requestsPosted.load(ordering: .acquiring)
    let pending = requests.withLock { current -> Requests in
      let copy = current
      current = Requests()
      return copy
    }
    if let gain = pending.gain {
      volume = gain
      gains = trackGains()
    }
    if pending.stop {
      machine.stop()
      publish(running: false)
    }
    if pending.halt {
      machine.stop()
      publish(running: false, heardAll: device.isOpen && device.handOverQueued())
    }
    if pending.flushAll {
      output.ring.discardAll()
      output.boundaries.removeAll()
      device.discardQueued()
      machine.flushedAll(deviceClocked: device.isClocked)  // the stream starts again from empty
      publish(running: false)
    }
    if let frame = pending.flushFrom {
      output.boundaries.removeAll(atOrAfter: frame)
      output.ring.truncate(toPosition: max(frame * OutputFrames.bytesPerFrame, output.ring.totalConsumed))
      machine.flushedPrefetched()
    }
    if let reason = pending.closeDevice, device.isOpen { closeDevice(reason) }
    if let powered = pending.powered, powered == poweredOff {
      poweredOff = !powered
      if poweredOff {
        if device.isClocked {
          // What the card holds is heard (nothing skipped), then it closes for others to use.
          if device.isOpen {
            playOutQueued()  // DSD silence after DSD, so the DAC does not hear zeros as PCM
            closeDevice(.poweredOff, playingOut: true)
          }
        } else {
          device.pauseQueued()  // a pipe stays open: what it holds is its reader's
        }
        // The elapsed time stops where the output did.
        publish(running: false, heardAll: true)
      }
    }
    if pending.pause, machine.run != .stopped {
      switch machine.pause(device: deviceFacts, queuedFrames: { device.delayFrames() }) {
      case .none, .playOut: break
      case .pauseQueued: device.pauseQueued()
      case .discardLineUp: device.discardQueued()
      }
      // What a device without a clock still holds is its reader's (a pipe's): the pause lands after
      // it, as on squeezelite's stdout, and the position is final at once.
      publish(running: false, heardAll: !device.isClocked)
    }
    if let start = pending.start {
      poweredOff = false  // a start or a resume switches the output on, as on squeezelite
      machine.start(start)
    }
    if pending.allBuffered { machine.allBuffered() }
    if pending.stop || pending.halt || pending.pause || pending.flushAll || pending.silenceMilliseconds > 0
      || pending.skipMilliseconds > 0 || pending.nudgeFrames != 0 || pending.closeDevice != nil
    {
      schedule = nil  // the position was moved on purpose
    }
    if pending.silenceMilliseconds > 0 || pending.skipMilliseconds > 0 || pending.nudgeFrames != 0 {
      let rate = device.isOpen ? device.sampleRate : (output.boundaries.peek()?.format.sampleRate ?? 44100)
      machine.correct(
        silenceFrames: pending.silenceMilliseconds * rate / 1000 + max(0, pending.nudgeFrames),
        skipFrames: pending.skipMilliseconds * rate / 1000 + max(0, -pending.nudgeFrames),
        framesBuffered: output.ring.fill > 0 || output.boundaries.peek() != nil)
    }
    for _ in 0..<pending.releaseHolds { producerHold?.release() }
    if pending.acknowledge > 0 {
      appliedSequence.store(pending.acknowledge, ordering: .releasing)
      applied.signal()
    }
    return !pending.exit
  }
}
