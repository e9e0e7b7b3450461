import Decoders
import SlimProto

/// Track life-cycle events, on the control event loop. The offline coordinator follows the
/// queue with them; ids are the engine's own, for server streams and local tracks alike.
public protocol PlaybackObserver: AnyObject {
  /// A `strm s` created a track.
  func trackCreated(_ id: Int)
  /// Its first frame is being heard.
  func trackStarted(_ id: Int)
  /// Every byte of it was decoded.
  func trackDecoded(_ id: Int)
  /// Its decoder gave up.
  func trackFailed(_ id: Int)
  /// Its network stream ended without reaching the end (a non-zero DSCO).
  func streamFailed(_ id: Int, reason: DisconnectReason)
  /// The output played everything and nothing more is coming.
  func playbackEnded()
}

/// A cached track to play from disk.
public struct LocalSource: Equatable, Sendable {
  public var path: String
  public var codec: Decoders.Codec

  public init(path: String, codec: Decoders.Codec) {
    self.path = path
    self.codec = codec
  }
}

/// Where a server stream takes over from local playback.
public struct SplicePoint: Equatable, Sendable {
  /// The engine track the server stream will continue (or, at a boundary, the one it starts).
  public var trackID: Int
  /// Frames from that track's start at which the server's audio must begin.
  public var frame: Int
  public var sampleRate: Int
  /// The output ring position of the splice.
  public var outputFrame: Int

  public var seconds: Double { Double(frame) / Double(max(1, sampleRate)) }
}
