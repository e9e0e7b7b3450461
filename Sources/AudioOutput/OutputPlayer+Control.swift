import Support

#if canImport(Glibc)
  import Glibc
#endif

/// Commands from the control side (any thread): each is posted to the output thread, which
/// applies it between chunks; those that must be done before the caller goes on wait for it.
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
  public func pause() { post { $0.pause = true } }
  public func setGain(left: UInt32, right: UInt32) { post { $0.gain = (left, right) } }

  /// Replay gain, channel mode and polarity for a track, applied from its first frame.
  public func setTreatment(_ treatment: TrackTreatment, forTrack trackID: Int) {
    treatments.withLock { $0[trackID] = treatment }
  }
  public func insertSilence(milliseconds: Int) { post { $0.silenceMilliseconds += milliseconds } }
  public func skip(milliseconds: Int) { post { $0.skipMilliseconds += milliseconds } }

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

  /// Stops writing and keeps what is buffered: the position published then is measured (what was
  /// written less what the device still holds), not extrapolated from an earlier write. Before
  /// the heard position is saved at shutdown: a reader slower than the clock must not be
  /// credited with frames it never took.
  public func halt(timeoutMilliseconds: Int = 2000) -> Bool {
    postAndWait(timeoutMilliseconds: timeoutMilliseconds) { $0.stop = true }
  }

  /// Drops frames from `frame` on, keeping what plays before it; as `stopAndFlush` otherwise.
  public func flush(from frame: Int, releasingHold: Bool, timeoutMilliseconds: Int = 2000) -> Bool {
    postAndWait(timeoutMilliseconds: timeoutMilliseconds) {
      $0.flushFrom = min($0.flushFrom ?? frame, frame)
      if releasingHold { $0.releaseHolds += 1 }
    }
  }

  public func currentPosition() -> PlayPosition { position.withLock { $0 } }
}
