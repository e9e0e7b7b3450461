import LMSControl
import Playback
import SlimProto

/// The values the offline decisions take in and give out.
extension OfflineStateMachine {
  public struct Resync: Equatable, Sendable {
    /// The engine track being heard: it plays on from the cache to its end.
    public var engineTrack: Int
    public var queueIndex: Int
    /// The offset asked of the server; its `time` is this plus the elapsed time reported. Nil on a
    /// member that follows its group's master: the master asked, and this member reports no elapsed
    /// time until the server's stream takes over (LMS then leaves the group's sync alone, rather than
    /// correct a member against an offset it cannot know).
    public var requestedSeconds: Double?
    /// STMd for the adopted stream was sent: the server may stream the next track.
    public var decoderReadyReported = false
    /// The adopted stream waits for the server's `strm u` (a sync group's start).
    public var awaitingStart = false
    /// Paused before the outage: the jump asked the server to pause, and until its `strm p` comes
    /// every `strm u` is the jump's own start, not the listener's (LMS 8.3 seen to start the adopted
    /// stream and never pause it, the `pause 1` having reached it before the jump's play).
    public var staysPaused = false

    /// A member that follows its group's master: it asked the server for nothing.
    public var followsGroup: Bool { requestedSeconds == nil }
  }

  /// Where offline playback ran out of cached audio: the resync asks the server to go on from
  /// there, so it does not show "play" over silence.
  public enum PlayedOut: Equatable, Sendable {
    /// Queue entry `queueIndex` was heard to its end and nothing cached followed it.
    case after(queueIndex: Int)
    /// Queue entry `queueIndex` was cut short, and neither it nor what follows was cached.
    case cutShort(queueIndex: Int)
  }

  /// What the engine is doing, as far as the decisions need it.
  public struct EngineFacts: Equatable, Sendable {
    public enum Decoding: Equatable, Sendable {
      case idle
      case liveStream(track: Int)
      case localFile(track: Int)
    }

    public struct Heard: Equatable, Sendable {
      public var engineTrack: Int
      /// Seconds heard since the track began in the output (its start offset not included).
      public var seconds: Double

      public init(engineTrack: Int, seconds: Double) {
        self.engineTrack = engineTrack
        self.seconds = seconds
      }
    }

    /// The engine's own reading of its output.
    public typealias Output = AudioEngineState.Output

    public var decoding = Decoding.idle
    /// The track the decoder worked on last, when it has finished or been cut.
    public var lastDecodedTrack: Int?
    /// That track ended well short of its duration (a dying server's stream ends cleanly).
    public var lastDecodedCutShort = false
    public var output = Output.idle
    public var heard: Heard?

    public init(
      decoding: Decoding = .idle, lastDecodedTrack: Int? = nil, lastDecodedCutShort: Bool = false,
      output: Output = .idle, heard: Heard? = nil
    ) {
      self.decoding = decoding
      self.lastDecodedTrack = lastDecodedTrack
      self.lastDecodedCutShort = lastDecodedCutShort
      self.output = output
      self.heard = heard
    }
  }

  public enum LogLevel: Equatable, Sendable { case info, notice, warning }

  /// What a resync waits for.
  public enum ResyncWait: Equatable, Sendable {
    /// The server's stream after this player's own jump.
    case serverStream
    /// The group master's jump and the server's stream that follows it.
    case groupMaster
  }

  public enum Action: Equatable, Sendable {
    /// Hand the server's message to the engine.
    case forward(ServerMessage)
    /// Send a STAT event to the server.
    case report(StatusEvent)
    /// Call `decoderReadyDue()` after this many milliseconds.
    case reportDecoderReadyLater(afterMilliseconds: Int)
    /// The track's source becomes its cached copy, at the exact next frame.
    case continueFromCache(engineTrack: Int, track: QueueTrack)
    /// Queue the first of these cached tracks that opens behind what plays (gapless).
    case playCached([QueueTrack])
    /// Give up on a live stream whose server is gone.
    case abandonLiveStream
    case startPolling
    case stopPolling
    case pollSoon
    case planDownloads
    /// Read the server's queue from this index on, after this many milliseconds.
    case readStatusForResync(fromIndex: Int, afterMilliseconds: Int)
    /// Read the server's queue now, for `groupStreamChecked(_:check:facts:)`.
    case checkGroupStream(check: Int, fromIndex: Int)
    /// `playlist jump index 0 0 {timeOffset}`; then `pause 1` when `thenPause`.
    case jump(queueIndex: Int, seconds: Double, thenPause: Bool)
    /// `playlist jump index`: the server restarts that track its own way.
    case restartServerTrack(queueIndex: Int)
    /// `stop`: the queue was played to its end offline.
    case stopServer
    /// `playlist clear`, then these tracks added by id (the listener's queue, built offline);
    /// then `queuePutOnServer(facts:)`, or `resyncFailed` when the server refused.
    case putQueueOnServer([QueueTrack])
    /// `pause 1`: a player paused before the outage stays paused.
    case pauseServer
    case stopLocal
    /// Drop the cached tracks queued behind this engine track (the server's stream follows it).
    case dropLocalTracks(after: Int)
    /// Give the server (or the group's master) this long to start the stream, then `resyncFailed`.
    case armResyncTimeout(ResyncWait)
    case cancelResyncTimeout
    case log(LogLevel, String)
  }
}
