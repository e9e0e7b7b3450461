#if canImport(Glibc)
  import Glibc
#endif

/// Commands from the control side (any thread): each is posted to the output thread, which
/// applies it between chunks; those that must be done before the caller goes on wait for it.
extension OutputPlayer {
  public func start(_ condition: StartCondition) { post { $0.start = condition } }
  public func pause() { post { $0.pause = true } }
  public func setGain(left: UInt32, right: UInt32) { post { $0.gain = (left, right) } }

  /// Replay gain, channel mode and polarity for a track, applied from its first frame.
  public func setTreatment(_ treatment: TrackTreatment, forTrack trackID: Int) {
    treatments.withLock { $0[trackID] = treatment }
  }
  public func insertSilence(milliseconds: Int) { post { $0.silenceMilliseconds += milliseconds } }
  public func skip(milliseconds: Int) { post { $0.skipMilliseconds += milliseconds } }

  /// Stops and drops everything buffered; returns once the output thread has done it. The decoder
  /// must be parked (it produces into the ring being emptied).
  public func stopAndFlush() {
    post {
      $0.stop = true
      $0.flushAll = true
      $0.acknowledge = true
    }
    sem_wait(acknowledged)
  }

  /// Drops frames from `frame` on, keeping what plays before it; returns once done. The decoder
  /// must be parked.
  public func flush(from frame: Int) {
    post {
      $0.flushFrom = frame
      $0.acknowledge = true
    }
    sem_wait(acknowledged)
  }

  public func currentPosition() -> PlayPosition { position.withLock { $0 } }
}
