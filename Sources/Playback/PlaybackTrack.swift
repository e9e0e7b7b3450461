import AudioBuffers
import Decoders
import SlimProto
import Support

/// The engine's record of one `strm s`, from request to the end of its playback.
struct PlaybackTrack {
  enum Phase: Equatable {
    /// Bytes are arriving and being decoded.
    case streaming
    /// Everything was decoded (STMd sent); its frames wait in, or play from, the output ring.
    case decoded
    /// The decoder gave up on it: STMd if it began as audio (it ends where its audio does), STMn
    /// if it never was.
    case failed
  }

  let id: Int
  let command: StreamCommand
  /// Played from the cache, not streamed by the server.
  var isLocal = false
  /// A server stream whose rest comes from the cache (a handoff).
  var continuedFromCache = false
  /// Frames into the file where playback began (a local seek), for positions.
  var startFrame = 0
  var phase = Phase.streaming
  /// The decoder job that feeds it now; events of earlier jobs (cancelled by a reset) are stale.
  var decodeJob: Int?
  /// The decoder chosen for it.
  var codec: Codec?
  var format: AudioFormat?
  /// Frames the decoder committed of it once it finished or failed: where a cached copy takes
  /// over when its stream was cut.
  var decodedFrames: Int?
  /// STMs was sent: its first frame reached the output.
  var started = false
  /// STMl was sent (manual start only).
  var announcedLoaded = false
  /// STMo was sent (once per stream).
  var reportedUnderrun = false
}

/// One track as the offline side sees it: whether the cache feeds it, and what was decoded of it
/// once its source ended.
public struct TrackProgress: Equatable, Sendable {
  public let id: Int
  public let fromCache: Bool
  /// Frames committed once the decoder finished or gave up; nil while it is being decoded.
  public let decodedFrames: Int?
  public let sampleRate: Int?

  public init(id: Int, fromCache: Bool, decodedFrames: Int?, sampleRate: Int?) {
    self.id = id
    self.fromCache = fromCache
    self.decodedFrames = decodedFrames
    self.sampleRate = sampleRate
  }
}

extension PCMCodes {
  /// The stream parameters for the PCM decoder; missing fields come from a WAV/AIFF header.
  var decoderParameters: PCMParameters {
    PCMParameters(
      sampleRate: sampleRateHz, channels: channelCount, bitsPerSample: bitsPerSample, littleEndian: isLittleEndian)
  }
}
