import LMSControl
import Playback

/// What the engine is doing, as the offline decisions take it (`OfflineStateMachine.EngineFacts`).
extension OfflineCoordinator {
  func facts() -> OfflineStateMachine.EngineFacts { facts(from: engine.state()) }

  func facts(from state: AudioEngineState) -> OfflineStateMachine.EngineFacts {
    var facts = OfflineStateMachine.EngineFacts(output: state.output)
    if let source = state.decoding {
      facts.decoding = source.fromCache ? .localFile(track: source.trackID) : .liveStream(track: source.trackID)
    } else if let last = state.lastDecoded {
      facts.lastDecodedTrack = last.trackID
      facts.lastDecodedCutShort =
        last.sampleRate.map { isCutShort(last.trackID, frames: last.frames, sampleRate: $0) } ?? false
    }
    if let heard = state.heard {
      facts.heard = .init(engineTrack: heard.trackID, seconds: Double(heard.milliseconds) / 1000)
    }
    return facts
  }

  /// LMS streams without a length, so a dying server looks like the end of the track: a track
  /// that ended well short of its duration was cut.
  func isCutShort(_ id: Int, frames: Int, sampleRate rate: Int) -> Bool {
    guard let placement = machine.ledger.placement(of: id),
      let duration = machine.ledger.track(at: placement.queueIndex)?.duration
    else { return false }
    return frames + rate / 10 < Int((duration - placement.startSeconds) * Double(rate))
  }

  /// LMS moves its current entry when the player's STMs reaches it; after a partition a new HTTP
  /// connection can beat the STMs's retransmission. A status that still shows the end of the
  /// entry before the one just started is that lag, not a misplaced track: it places nothing.
  func describesTheTrackBefore(_ status: LMSStatus, heard: OfflineStateMachine.EngineFacts.Heard) -> Bool {
    guard heard.seconds < 5, let current = status.currentIndex,
      let placement = machine.ledger.placement(of: heard.engineTrack), current == placement.queueIndex - 1,
      let previous = machine.ledger.track(at: current), let duration = previous.duration
    else { return false }
    return status.time >= duration - 2
  }

  /// The facts as the server goes. A dying server's stream ends cleanly and the player asks for
  /// the next track, so the server may have sent one or more after a track it cut: the earliest
  /// cut track is where the cache takes over, whatever came after it.
  func handoffFacts() -> OfflineStateMachine.EngineFacts {
    var facts = facts()
    if let cut = engine.trackProgress().first(where: isCut) {
      facts.decoding = .idle
      facts.lastDecodedTrack = cut.id
      facts.lastDecodedCutShort = true
    }
    return facts
  }

  /// A server stream that ended, or failed, well short of its track's duration.
  private func isCut(_ track: TrackProgress) -> Bool {
    guard !track.fromCache, let frames = track.decodedFrames,
      let placement = machine.ledger.placement(of: track.id),
      let duration = machine.ledger.track(at: placement.queueIndex)?.duration, duration > 0.1
    else { return false }
    // Not one frame (a stream that ended inside its header) is cut whatever the rate.
    guard let rate = track.sampleRate else { return frames == 0 }
    return isCutShort(track.id, frames: frames, sampleRate: rate)
  }

  func hasUsableCopy(_ track: QueueTrack) -> Bool { cachedSource(for: track) != nil }
}
