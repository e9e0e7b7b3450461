import Decoders
import SlimProto
import Support

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
  public var codec: Codec

  public init(path: String, codec: Codec) {
    self.path = path
    self.codec = codec
  }
}
