import SlimConnection
import Support

/// The audio engine as its owners drive it beyond the session: the offline side (local playback
/// from the cache, the handoff and the resync) and the control API. `StreamingEngine` is the one
/// the player runs; tests drive the offline side with a fake. All on the control event loop,
/// except `playbackIsFilling`.
public protocol AudioEngine: PlaybackEngine {
  /// What the engine is doing, in one reading (`AudioEngineState`); allocates nothing.
  func state(at now: UInt64) -> AudioEngineState
  /// What the decoder made of each track still buffered or playing, oldest first (at a handoff).
  func trackProgress() -> [TrackProgress]
  /// The track being heard and how much of it (nil before the first track starts).
  func heardPosition(at now: UInt64) -> HeardPosition?
  /// Playing, or about to: not paused, stopped or played out.
  var isPlaying: Bool { get }
  /// Seconds the live stream has waited for bytes with room in its ring; nil while no stream
  /// waits for the network.
  var streamStalledSeconds: Double? { get }

  /// Replaces the source of track `id` with a complete cached copy of the same file, from the
  /// exact frame after the last one delivered, dropping every track after it.
  @discardableResult
  func continueTrack(_ id: Int, from source: LocalSource) -> Bool
  /// Queues a cached track behind what is buffered (gapless), or starts it after a stop;
  /// `startFrame` > 0 begins mid-track. The new track's id, or nil when the file cannot be opened.
  func playLocal(_ source: LocalSource, startFrame: Int) -> Int?
  /// Stops and drops everything.
  func stopLocal()
  func pauseLocal()
  func resumeLocal()
  func setVolume(left: UInt32, right: UInt32)
  /// Drops every track queued after track `id`.
  func dropTracks(after id: Int)
  /// Ends a live stream whose server is gone; it is reported as failed (`EngineEvent.streamFailed`).
  func abandonLiveStream()
  /// Stops writing and keeps what is buffered, so the position is the one measured (shutdown).
  func haltOutput()
  /// Moves what is heard by whole frames: positive later (silence), negative earlier (skipped).
  func nudgeOutput(frames: Int)
}

extension AudioEngine {
  public func state() -> AudioEngineState { state(at: MonotonicClock.nanoseconds()) }
  public func heardPosition() -> HeardPosition? { heardPosition(at: MonotonicClock.nanoseconds()) }
  public func playLocal(_ source: LocalSource) -> Int? { playLocal(source, startFrame: 0) }
}

/// Where the listener is: the track heard, to the nearest millisecond (as STAT reports it) and in
/// frames, exactly.
public struct HeardPosition: Equatable, Sendable {
  public var trackID: Int
  public var milliseconds: Int
  public var frames: Int
  public var sampleRate: Int

  public init(trackID: Int, milliseconds: Int, frames: Int, sampleRate: Int) {
    self.trackID = trackID
    self.milliseconds = milliseconds
    self.frames = frames
    self.sampleRate = sampleRate
  }
}

/// One reading of what the engine is doing.
public struct AudioEngineState: Equatable, Sendable {
  public enum Output: Equatable, Sendable {
    /// Nothing buffered to play (stopped, or played out).
    case idle
    case playing
    /// Paused with tracks buffered.
    case paused

    public var hasAudio: Bool { self != .idle }
  }

  /// The track whose source is being read, and whether that source is a cached file.
  public struct Decoding: Equatable, Sendable {
    public var trackID: Int
    public var fromCache: Bool

    public init(trackID: Int, fromCache: Bool) {
      self.trackID = trackID
      self.fromCache = fromCache
    }
  }

  /// The track the decoder worked on last, the frames it delivered of it, and its rate.
  public struct LastDecoded: Equatable, Sendable {
    public var trackID: Int
    public var frames: Int
    public var sampleRate: Int?

    public init(trackID: Int, frames: Int, sampleRate: Int?) {
      self.trackID = trackID
      self.frames = frames
      self.sampleRate = sampleRate
    }
  }

  public var output: Output
  public var decoding: Decoding?
  public var lastDecoded: LastDecoded?
  public var heard: HeardPosition?

  public init(
    output: Output = .idle, decoding: Decoding? = nil, lastDecoded: LastDecoded? = nil, heard: HeardPosition? = nil
  ) {
    self.output = output
    self.decoding = decoding
    self.lastDecoded = lastDecoded
    self.heard = heard
  }
}
