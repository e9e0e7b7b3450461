import AudioBuffers
import AudioOutput
import Decoders
import SlimConnection
import SlimProto

/// Local playback for offline operation: cached files fed through the same decoder and output,
/// so a handoff is a change of source, not of pipeline.
extension StreamingEngine {
  /// The track whose bytes are arriving now, if any.
  public var streamingTrackID: Int? { tracks.last(where: { $0.phase == .streaming })?.id }

  /// The track being heard and the milliseconds heard of it.
  public func heardPosition() -> (trackID: Int, milliseconds: Int, sampleRate: Int)? {
    let position = player.currentPosition()
    guard position.trackID >= 0 else { return nil }
    return (position.trackID, position.elapsedMilliseconds(now: MonotonicClock.nanoseconds()), position.sampleRate)
  }

  public var isPlaying: Bool { outputRunning }

  /// Any thread: a live stream is arriving and its buffer is below half, so a cache download
  /// should leave it the network.
  public var liveStreamNeedsNetwork: Bool {
    !input.hasEnded && input.ring.fill < input.ring.capacity / 2 && input.ring.totalWritten > 0
  }

  /// The track the decoder worked on last, the frames it delivered of it, and its rate.
  public func lastDecodedTrack() -> (id: Int, frames: Int, sampleRate: Int?)? {
    let id = output.currentTrackID
    guard let track = tracks.first(where: { $0.id == id }) else { return nil }
    return (id, output.framesCommittedInTrack, track.format?.sampleRate)
  }

  /// Replaces the source of track `id` — the last one the decoder began, still streaming or cut
  /// short — with `source`, a complete copy of the same file: decoding resumes at the exact frame
  /// after the last one delivered.
  @discardableResult
  public func continueTrack(_ id: Int, from source: LocalSource) -> Bool {
    guard output.currentTrackID == id, let index = tracks.firstIndex(where: { $0.id == id }) else { return false }
    fetcher.close()
    fileStreamer.close()
    worker.park()
    input.ring.discardAll()
    worker.resetWhileParked()
    input.reopen()
    worker.unpark()
    tracks[index].phase = .streaming
    tracks.removeAll { $0.id > id }
    worker.enqueue(DecodeJob(trackID: id, codec: source.codec, start: .continuing))
    return fileStreamer.open(path: source.path)
  }

  /// Queues a cached track behind what is buffered (gapless), or starts it now after a stop.
  /// `startFrame` > 0 begins mid-track (a local seek). Returns the new track's id, or nil when
  /// the file cannot be opened.
  public func playLocal(_ source: LocalSource, startFrame: Int = 0) -> Int? {
    if fetcher.isOpen || fileStreamer.isOpen {
      // Called only once the previous source is fully read; anything left is abandoned.
      fetcher.close()
      fileStreamer.close()
    }
    input.reopen()
    let id = nextTrackID
    nextTrackID += 1
    let command = StreamCommand(command: .start, autostart: .automatic, format: .flac)
    tracks.append(PlaybackTrack(id: id, command: command, isLocal: true, startFrame: startFrame))
    player.setTreatment(TrackTreatment(), forTrack: id)
    worker.enqueue(DecodeJob(trackID: id, codec: source.codec, start: startFrame > 0 ? .frame(startFrame) : .beginning))
    guard fileStreamer.open(path: source.path) else {
      tracks.removeAll { $0.id == id }
      return nil
    }
    if !outputRunning {
      player.start(.buffered(tenths: 0))
      outputRunning = true
    }
    heartbeatIfNeeded()
    return id
  }

  /// Stops and drops everything (a local skip or seek starts afresh after this).
  public func stopLocal() { stop() }

  public func pauseLocal() {
    player.pause()
    outputRunning = false
  }

  public func resumeLocal() {
    player.start(.now)
    outputRunning = true
  }

  public func setVolume(left: UInt32, right: UInt32) { player.setGain(left: left, right: right) }

  /// Prepares a server stream to take over from local playback: keeps about `keepMilliseconds`
  /// of what is buffered beyond the heard position (time for the server's stream to arrive),
  /// drops the rest and stops decoding. At a track boundary inside that window the splice moves
  /// to the boundary, so the server starts a track from its beginning.
  public func prepareSplice(keepMilliseconds: Int) -> SplicePoint? {
    guard let heard = heardPosition() else { return nil }
    fetcher.close()
    fileStreamer.close()
    worker.park()
    input.ring.discardAll()
    let written = output.writeFrame
    let consumed = output.ring.totalConsumed / OutputFrames.bytesPerFrame
    let position = player.currentPosition()
    var cut = min(written, consumed + keepMilliseconds * heard.sampleRate / 1000)
    var point: SplicePoint
    if let boundary = output.boundaries.first(where: { $0.isNewTrack && $0.frame > consumed }),
      boundary.frame <= cut
    {
      cut = boundary.frame
      point = SplicePoint(
        trackID: boundary.trackID, frame: 0, sampleRate: boundary.format.sampleRate, outputFrame: cut)
    } else {
      // The cut falls in the track being heard, counted from where it began in the ring.
      let startFrame = tracks.first(where: { $0.id == position.trackID })?.startFrame ?? 0
      point = SplicePoint(
        trackID: position.trackID, frame: cut - position.trackStartFrame + startFrame, sampleRate: heard.sampleRate,
        outputFrame: cut)
    }
    player.flush(from: cut)
    worker.resetWhileParked()
    input.reopen()
    worker.unpark()
    // Tracks from the splice on will come from the server; the one cut short is complete now.
    if point.frame == 0 {
      tracks.removeAll { $0.id >= point.trackID }
    } else {
      tracks.removeAll { $0.id > point.trackID }
      update(point.trackID) { $0.phase = .decoded }
    }
    return point
  }

  /// Undoes a splice whose server stream never came: drops whatever the server sent after it.
  public func abandonSplice(_ point: SplicePoint) {
    fetcher.close()
    fileStreamer.close()
    worker.park()
    input.ring.discardAll()
    player.flush(from: point.outputFrame)
    worker.resetWhileParked()
    input.reopen()
    worker.unpark()
    tracks.removeAll { $0.phase == .streaming }
  }
}
