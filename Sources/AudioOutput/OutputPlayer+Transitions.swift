import AudioBuffers

/// Crossfades and fades: the window before a track boundary, planned once per boundary.
extension OutputPlayer {
  struct TransitionPlan {
    var trackID: Int
    var kind: Transition.Kind
    /// Length of the window before the boundary (crossfade or fade out), in frames.
    var frames: Int
    /// False once a crossfade turned out impossible (the new track was not decoded in time).
    var crossfadePossible = true
  }

  /// The window before `boundary` in which the current track crossfades or fades out.
  func transitionPlan(into boundary: TrackBoundary, readFrame: Int) -> TransitionPlan? {
    if let plan, plan.trackID == boundary.trackID { return plan.frames > 0 ? plan : nil }
    // DSD frames are bits for the DAC: no fade may touch them, nor mix them.
    guard boundary.isNewTrack, trackID >= 0, !carried.isBitstream, !boundary.format.encoding.isBitstream else {
      return nil
    }
    let transition = treatments.withLock { $0[boundary.trackID]?.transition } ?? Transition()
    let rate = device.isOpen ? device.sampleRate : boundary.format.sampleRate
    // The old track's frames: those played plus those still before the boundary.
    let oldTrackFrames = framesPlayed + (boundary.frame - readFrame)
    let ringFrames = output.ring.capacity / OutputFrames.bytesPerFrame
    var frames = 0
    switch transition.kind {
    case .crossfade where boundary.format.sampleRate == rate:
      // Both ends must fit in the ring together.
      frames = min(transition.seconds * rate, oldTrackFrames, ringFrames * 9 / 20)
    case .fadeOut:
      frames = min(transition.seconds * rate, oldTrackFrames)
    case .fadeOutIn:
      frames = min(transition.seconds * rate / 2, oldTrackFrames)
    default:
      frames = 0
    }
    let plan = TransitionPlan(trackID: boundary.trackID, kind: transition.kind, frames: frames)
    self.plan = plan
    return frames > 0 ? plan : nil
  }

  /// Plays one chunk of the crossfade window: old frames mixed with the new track's first
  /// frames, read ahead past the boundary. False if the new frames are not there (no crossfade).
  func crossfadeChunk(into boundary: TrackBoundary, plan: TransitionPlan, readFrame: Int) -> Bool {
    let windowStart = boundary.frame - plan.frames
    let position = readFrame - windowStart
    if position == 0 || crossfading?.trackID != boundary.trackID {
      // Begin only with the whole of the new track's part decoded: it cannot be waited for later.
      guard output.ring.totalWritten / OutputFrames.bytesPerFrame >= boundary.frame + plan.frames,
        position == 0
      else { return false }
      crossfading = (boundary.trackID, plan.frames)
      framesPlayed = 0  // the new track is heard from here: its elapsed time starts now
      onEvent(.trackStarted(trackID: boundary.trackID))
    }
    let old = output.ring.readableRegion()
    let aheadBytes = (boundary.frame + position - readFrame) * OutputFrames.bytesPerFrame
    let incoming = output.ring.readableRegion(afterSkipping: aheadBytes)
    let frames = min(
      old.count / OutputFrames.bytesPerFrame, incoming.count / OutputFrames.bytesPerFrame,
      boundary.frame - readFrame, device.chunkFrames, mix.count / 2)
    guard frames > 0 else { return true }
    let samples = UnsafeMutableBufferPointer(rebasing: mix[0..<frames * 2])
    _ = samples.initialize(
      from: UnsafeBufferPointer(start: old.baseAddress!.assumingMemoryBound(to: Int32.self), count: frames * 2))
    Ramp.crossfade(
      samples,
      with: UnsafeBufferPointer(start: incoming.baseAddress!.assumingMemoryBound(to: Int32.self), count: frames * 2),
      from: position, of: plan.frames)
    exportToVisualiser(samples, frames: frames)
    GainStage.apply(gains, to: samples)
    guard let written = write(UnsafeBufferPointer(samples), dither: true) else { return true }
    output.ring.commitRead(written * OutputFrames.bytesPerFrame)
    framesPlayed += written
    publish(running: true)
    wakeDecoderIfRoom()
    return true
  }

  /// A boundary reached: the new track's treatment, its fade-in, and its start announced (once;
  /// a crossfaded track was announced when its first frames were mixed in).
  func beginTrack(_ boundary: TrackBoundary) {
    guard boundary.isNewTrack else { return }
    let wasPlaying = trackID >= 0
    treatment = treatments.withLock { $0.removeValue(forKey: boundary.trackID) } ?? TrackTreatment()
    // Against the last track's mode, which a stop or flush does not forget: LMS stops before every
    // new play, and the DAC is still in that mode. The player starts in PCM's.
    let switchesMode = carried.isBitstream != boundary.format.encoding.isBitstream
    carried = boundary.format.encoding
    if carried.isBitstream && dsdSilenceEncoding != carried { fillDSDSilence() }
    if switchesMode {
      // In the new mode's silence (DoP's markers tell the DAC to switch while it is muted).
      silenceFrames += configuration.dopSwitchMilliseconds * boundary.format.sampleRate / 1000
    }
    gains = trackGains()
    trackID = boundary.trackID
    trackStartFrame = boundary.frame
    plan = nil
    fadeIn = nil
    if let crossfade = crossfading, crossfade.trackID == boundary.trackID {
      // Its first frames were already heard, mixed into the end of the previous track.
      // The frames after the boundary that were mixed in are consumed without being counted again.
      crossfading = nil
      output.ring.commitRead(crossfade.frames * OutputFrames.bytesPerFrame)
      wakeDecoderIfRoom()
      return
    }
    let transition = treatment.transition
    let rate = boundary.format.sampleRate
    switch transition.kind {
    case .fadeIn: fadeIn = (boundary.frame, transition.seconds * rate)
    case .fadeOutIn: fadeIn = (boundary.frame, transition.seconds * rate / 2)
    // A crossfade with nothing before it, or one that could not happen, fades in instead.
    case .crossfade: fadeIn = (boundary.frame, wasPlaying ? 0 : transition.seconds * rate)
    case .none, .fadeOut: break
    }
    if fadeIn?.frames == 0 || carried.isBitstream { fadeIn = nil }
    framesPlayed = 0
    publish(running: true)
    onEvent(.trackStarted(trackID: boundary.trackID))
  }

  /// The server's volume and the track's treatment; for DSD, none (squeezelite does the same):
  /// volume then belongs to the DAC or a hardware control (`-V`).
  func trackGains() -> ChannelGains {
    carried.isBitstream
      ? .unity : ChannelGains(volumeLeft: volume.left, volumeRight: volume.right, treatment: treatment)
  }

  func fillDSDSilence() {
    if carried == .dop { DoP.fillSilence(dsdSilence) } else { DSDSilence.fill(dsdSilence) }
    dsdSilenceEncoding = carried
  }
}
