import AudioBuffers

/// What one call to a decoder achieved.
public enum DecodeProgress: Equatable, Sendable {
  /// Frames were committed or input consumed; call again.
  case decoded
  /// Nothing more can be done until more input arrives.
  case needsInput
  /// The stream is fully decoded and every frame committed.
  case finished
}

public enum DecodeError: Error, Equatable, CustomStringConvertible {
  /// The stream is not in a form this decoder can read (e.g. a non-audio body).
  case unsupportedStream(String)
  /// The data is damaged beyond recovery.
  case corrupt(String)
  /// The codec library failed.
  case library(String)

  public var description: String {
    switch self {
    case .unsupportedStream(let why): "unsupported stream: \(why)"
    case .corrupt(let why): "corrupt stream: \(why)"
    case .library(let why): "decoder library error: \(why)"
    }
  }
}

/// Damage a decoder read past: stretches of a stream it could not decode and skipped (resyncing at
/// the next frame), and what the last one was. Logged when the track ends.
public struct StreamDamage: Equatable, Sendable {
  public var stretches = 0
  public var last = ""
  public init(stretches: Int = 0, last: String = "") {
    self.stretches = stretches
    self.last = last
  }
}

/// A decoder for one track. It runs on the decoder thread only; it reads compressed bytes from
/// `input` and commits frames (interleaved stereo Int32, left-justified) to `output`.
///
/// Contract: call `decode` only when `output.freeFrames >= minimumFreeFrames`. Nothing on this
/// path allocates per call: buffers are allocated when the decoder is created.
public protocol AudioDecoder: AnyObject {
  var minimumFreeFrames: Int { get }
  /// Known once the stream's header (or first frame) has been read.
  var format: AudioFormat? { get }
  func decode(from input: StreamInput, to output: FrameOutput) throws(DecodeError) -> DecodeProgress
  /// What the stream so far had that could not be decoded (none for a decoder that cannot tell).
  var damage: StreamDamage { get }
  /// What the stream turned out to hold, for a decoder that goes by content rather than by the
  /// server's word ("Ogg FLAC" in a stream announced as Ogg Vorbis); nil otherwise.
  var content: String? { get }
}

extension AudioDecoder {
  public var damage: StreamDamage { StreamDamage() }
  public var content: String? { nil }
}
