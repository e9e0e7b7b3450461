import AudioBuffers
import AudioOutput
import Decoders
import SlimConnection
import SlimProto
import Support

/// Local playback for offline operation: cached files fed through the same decoder and output,
/// so a handoff is a change of source, not of pipeline.
extension StreamingEngine: AudioEngine {
  /// The track whose bytes are arriving now, if any.
  public var streamingTrackID: Int? { tracks.last(where: { $0.phase == .streaming })?.id }

  public func heardPosition(at now: UInt64) -> HeardPosition? {
    let position = player.currentPosition()
    guard position.trackID >= 0 else { return nil }
    return HeardPosition(
      trackID: position.trackID, milliseconds: position.elapsedMilliseconds(at: now),
      frames: position.heardFrames(at: now), sampleRate: position.sampleRate)
  }

  public func state(at now: UInt64) -> AudioEngineState {
    var state = AudioEngineState(
      output: isPlaying ? .playing : isPaused ? .paused : .idle, heard: heardPosition(at: now))
    if let source = decodingSource {
      state.decoding = .init(trackID: source.trackID, fromCache: source.fromCache)
    }
    if let last = lastDecodedTrack() {
      state.lastDecoded = .init(trackID: last.id, frames: last.frames, sampleRate: last.sampleRate)
    }
    return state
  }

  public var isPlaying: Bool { outputRunning }

  /// Moves what is heard by whole frames: positive later (silence), negative earlier (skipped).
  public func nudgeOutput(frames: Int) { player.nudge(frames: frames) }

  /// Paused with tracks buffered (`strm p` or a local pause).
  var isPaused: Bool { !outputRunning && !tracks.isEmpty }

  /// The track whose source is being read, and whether that source is a cached file.
  var decodingSource: (trackID: Int, fromCache: Bool)? {
    guard let track = tracks.last(where: { $0.phase == .streaming }) else { return nil }
    return (track.id, track.isLocal || track.continuedFromCache)
  }

  /// Seconds the live stream has waited for bytes with room in its ring; nil while no stream
  /// waits for the network.
  public var streamStalledSeconds: Double? {
    fetcher.stalledFor.map { Double($0.nanoseconds) / 1e9 }
  }

  public var streamHealth: StreamHealth {
    let stalled = streamStalledSeconds
    var health = StreamHealth(stalledSeconds: stalled, playingWithoutStream: isPlaying && decodingSource == nil)
    guard isPlaying, stalled != nil || health.playingWithoutStream else { return health }
    // What the output holds; the stream ring may hold more, so this errs early.
    let rate = player.currentPosition().sampleRate
    if rate > 0 { health.secondsBuffered = Double(output.bufferedFrames) / Double(rate) }
    return health
  }

  /// Ends a live stream whose server is gone; it is reported as failed (`streamFailed`).
  public func abandonLiveStream() { fetcher.abandon(reason: .timeout) }

  /// Any thread: a cache download should hold back, because a live stream is arriving and its
  /// buffer is below half (it needs the network), or because the output holds less than a quarter
  /// of its ring with input left to decode (a track is starting: it needs the CPU, which a
  /// download at network speed would take in one burst on a device with little of it).
  public var playbackIsFilling: Bool {
    let streamFilling = !input.hasEnded && input.ring.fill < input.ring.capacity / 2 && input.ring.totalWritten > 0
    let outputFilling = input.ring.fill > 0 && output.ring.fill < output.ring.capacity / 4
    return streamFilling || outputFilling
  }

  /// The track the decoder worked on last, the frames it delivered of it, and its rate.
  func lastDecodedTrack() -> (id: Int, frames: Int, sampleRate: Int?)? {
    let id = output.currentTrackID
    guard let track = tracks.first(where: { $0.id == id }) else { return nil }
    return (id, output.framesCommittedInTrack, track.format?.sampleRate)
  }

  public func trackProgress() -> [TrackProgress] {
    tracks.map {
      TrackProgress(
        id: $0.id, fromCache: $0.isLocal || $0.continuedFromCache, decodedFrames: $0.decodedFrames,
        sampleRate: $0.format?.sampleRate)
    }
  }

  /// Replaces the source of track `id` with `source`, a complete copy of the same file, and
  /// drops every track after it: decoding resumes at the exact frame after the last one
  /// delivered. The track may be the one being decoded, one cut short with later tracks already
  /// begun (a dying server's stream ends cleanly and the server sends the next), or one not begun.
  @discardableResult
  public func continueTrack(_ id: Int, from source: LocalSource) -> Bool {
    guard let index = tracks.firstIndex(where: { $0.id == id }) else { return false }
    let track = tracks[index]
    guard pipeline.reset(output: .tracks(after: id), reopenInput: true) else { return false }
    // The decoder is idle now: its last track stands still.
    let start: DecodeJob.Start
    if output.currentTrackID == id {
      start = .continuing
    } else if output.currentTrackID < id || track.decodedFrames == 0 {
      start = .beginning  // nothing of it reached the output
    } else if let frames = track.decodedFrames, let format = track.format {
      start = .resuming(frames: frames, format: format)
    } else {
      return false
    }
    tracks[index].phase = .streaming
    tracks[index].continuedFromCache = true
    tracks[index].decodedFrames = nil
    tracks.removeAll { $0.id > id }
    decode(id, codec: source.codec, start: start)
    streamOrigin = .network
    return pipeline.openFile(path: source.path)
  }

  /// Queues a cached track behind what is buffered (gapless), or starts it now after a stop.
  /// `startFrame` > 0 begins mid-track (a local seek). Returns the new track's id, or nil when
  /// the file cannot be opened.
  public func playLocal(_ source: LocalSource, startFrame: Int) -> Int? {
    // Called only once the previous source is fully read; anything left is abandoned.
    streamOrigin = .network
    pipeline.closeSource()
    input.reopen()
    // Queued behind a paused track it waits for the resume, like the rest of the queue.
    let paused = isPaused
    let id = nextTrackID
    nextTrackID += 1
    let command = StreamCommand(command: .start, autostart: .automatic, format: .flac)
    tracks.append(PlaybackTrack(id: id, command: command, isLocal: true, startFrame: startFrame))
    player.setTreatment(TrackTreatment(), forTrack: id)
    decode(id, codec: source.codec, start: startFrame > 0 ? .frame(startFrame) : .beginning)
    guard pipeline.openFile(path: source.path) else {
      tracks.removeAll { $0.id == id }
      return nil
    }
    if !outputRunning, !paused {
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

  /// Drops every track queued after track `id` (decoded frames and the source being read), so
  /// the server's stream can follow `id` instead of the cache.
  public func dropTracks(after id: Int) {
    guard tracks.contains(where: { $0.id > id }) else { return }
    pipeline.reset(output: .tracks(after: id), reopenInput: true)
    tracks.removeAll { $0.id > id }
  }
}
