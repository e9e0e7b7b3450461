import SlimProto
import Support

/// What the audio side reports in every STAT.
public struct PlaybackSnapshot: Equatable, Sendable {
  public var streamBufferSize: UInt32 = 0
  public var streamBufferFullness: UInt32 = 0
  /// Bytes received of the current stream (also carried into a reconnect HELO).
  public var bytesReceived: UInt64 = 0
  public var outputBufferSize: UInt32 = 0
  public var outputBufferFullness: UInt32 = 0
  /// Time heard of the current track, corrected for the device delay.
  public var elapsedMilliseconds: UInt32 = 0

  public init() {}
}

/// The audio side of the player as the protocol session sees it. Every call happens on the
/// control event loop; an engine hands work to its own threads and reports back on that loop.
public protocol PlaybackEngine: AnyObject {
  /// Where everything the engine has to say goes, in order: set by whoever sits downstream (the
  /// session, or a coordinator between it and the engine) before any command arrives.
  var onEvent: ((EngineEvent) -> Void)? { get set }
  /// `strm` (all but `t`), `audg`, `aude`, `cont`, `codc` and `body`.
  func handle(_ message: ServerMessage)

  /// Current buffer and position figures for a STAT, the position the one heard at `instant`
  /// (CLOCK_MONOTONIC ns).
  func snapshot(at instant: UInt64) -> PlaybackSnapshot

  /// The highest sample rate the output can really play, for `MaxSampleRate`.
  var maximumSampleRate: Int { get }

  /// The SlimProto connection came up (HELO about to be sent) or went down.
  func serverConnectionChanged(_ isConnected: Bool)

  /// How the player's need for the server stands, for `ServerLiveness`.
  var streamHealth: StreamHealth { get }
}

extension PlaybackEngine {
  public func snapshot() -> PlaybackSnapshot { snapshot(at: MonotonicClock.nanoseconds()) }
  public func serverConnectionChanged(_ isConnected: Bool) {}
  public var streamHealth: StreamHealth { StreamHealth() }
}

/// What tells a silent server from a gone one (see `ServerLiveness`).
public struct StreamHealth: Equatable, Sendable {
  /// Seconds the live stream has waited for bytes with room in its ring; nil while no stream
  /// waits for the network.
  public var stalledSeconds: Double?
  /// Playing its last buffered track with no stream open: the next one must come from the server.
  public var playingWithoutStream = false
  /// Seconds since the last track was both decoded and heard to start, while playing without a
  /// stream: how long the server's next track is overdue (LMS sends it within milliseconds of
  /// hearing both).
  public var waitingForNextTrackSeconds: Double?
  /// Seconds of decoded audio left to play; set only while the stream stalls or the player plays
  /// without a stream.
  public var secondsBuffered: Double?
  /// What the player waits for has a cached copy to play instead: the stalled stream's track,
  /// or the queue's next track (offline mode).
  public var cacheCanContinue = false

  public init(stalledSeconds: Double? = nil, playingWithoutStream: Bool = false) {
    self.stalledSeconds = stalledSeconds
    self.playingWithoutStream = playingWithoutStream
  }
}

/// What an engine says, on the control event loop: what the session sends the server, and what
/// its owners follow (the tracks' lives, the output's power, the server's stream requests).
/// Track ids are the engine's own, for server streams and local tracks alike.
public enum EngineEvent: Equatable, Sendable {
  /// A STAT for the server.
  case status(StatusEvent, errorCode: UInt16)
  /// Another message for the server (RESP, META, DSCO).
  case message(PlayerMessage)
  /// A `strm s` (or a local play) created track `id`.
  case trackCreated(id: Int)
  /// The first frame of track `id` is being heard.
  case trackStarted(id: Int)
  /// Every byte of track `id` was decoded: `frames` frames at `sampleRate` (nil if its format
  /// never became known).
  case trackDecoded(id: Int, frames: Int, sampleRate: Int?)
  /// The decoder of track `id` gave up.
  case trackFailed(id: Int)
  /// The network stream of track `id` ended without reaching its end (a non-zero DSCO).
  case streamFailed(id: Int, reason: DisconnectReason)
  /// The output played everything and nothing more is coming.
  case playbackEnded
  /// The server switched the output on or off (`aude`).
  case powerChanged(on: Bool)
  /// The server asked for a stream (`strm s`), before it opens.
  case streamRequested

  public static func status(_ event: StatusEvent) -> EngineEvent { .status(event, errorCode: 0) }
}
