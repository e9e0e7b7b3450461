import AudioBuffers

/// Crossfades and track starts, as `OutputStateMachine` decides them: the mixing and the
/// announcements are done here, on the output thread.
extension OutputPlayer {
  /// Plays one chunk of a crossfade: old frames mixed with the incoming track's first frames,
  /// read `aheadFrames` past the read position.
  func crossfadeChunk(frames limit: Int, ramp: OutputStateMachine.RampSpan, aheadFrames: Int) {
    let old = output.ring.readableRegion()
    let incoming = output.ring.readableRegion(afterSkipping: aheadFrames * OutputFrames.bytesPerFrame)
    let frames = min(
      old.count / OutputFrames.bytesPerFrame, incoming.count / OutputFrames.bytesPerFrame, limit, mix.count / 2)
    guard frames > 0 else { return }
    let samples = UnsafeMutableBufferPointer(rebasing: mix[0..<frames * 2])
    _ = samples.initialize(
      from: UnsafeBufferPointer(start: old.baseAddress!.assumingMemoryBound(to: Int32.self), count: frames * 2))
    Ramp.crossfade(
      samples,
      with: UnsafeBufferPointer(start: incoming.baseAddress!.assumingMemoryBound(to: Int32.self), count: frames * 2),
      from: ramp.position, of: ramp.length)
    exportToVisualiser(samples, frames: frames)
    GainStage.apply(gains, to: samples)
    guard let written = write(UnsafeBufferPointer(samples), dither: true) else { return }
    output.ring.commitRead(written * OutputFrames.bytesPerFrame)
    machine.played(written)
    publish(running: true)
    wakeDecoderIfRoom()
  }

  /// A boundary reached: the new track's treatment and gains, its DSD silence, and its start
  /// announced (once: a crossfaded track was announced when its first frames were mixed in).
  func beginTrack(_ boundary: TrackBoundary) {
    guard boundary.isNewTrack else { return }
    treatment = treatments.withLock { $0.removeValue(forKey: boundary.trackID) } ?? TrackTreatment()
    let beginning = machine.begin(
      boundary, transition: treatment.transition, dopSwitchMilliseconds: configuration.dopSwitchMilliseconds)
    if carried.isBitstream && dsdSilenceEncoding != carried { fillDSDSilence() }
    gains = trackGains()
    switch beginning {
    case .formatChanged:
      break
    case .crossfadeHeard(let consumedFrames):
      // The frames after the boundary that were mixed in are consumed without being counted again.
      output.ring.commitRead(consumedFrames * OutputFrames.bytesPerFrame)
      wakeDecoderIfRoom()
    case .started:
      publish(running: true)
      onEvent(.trackStarted(trackID: boundary.trackID))
    }
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
