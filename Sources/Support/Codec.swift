/// The codecs this player decodes, and every name they go by: the `strm` format byte, the HELO
/// format tokens, the `-c`/`-e` names (squeezelite's spellings too) and the file types LMS
/// reports for the cache. One vocabulary for the protocol, the decoders and the cache.
public enum Codec: String, CaseIterable, Sendable {
  case flac
  case opus
  case vorbis
  case mp3
  case pcm

  /// The order offered to the server when `-c` does not say. LMS streams a file in the first
  /// format of this list it has a rule for: lossless first, except that Ogg comes before FLAC,
  /// as in squeezelite, because LMS 7.9 also has an Ogg → FLAC rule (a decode by its sox), and only
  /// Ogg files have a rule to Ogg: this way they arrive as they are and are decoded here.
  public static let defaultOrder: [Codec] = [.vorbis, .flac, .opus, .mp3, .pcm]

  /// A `-c`/`-e` name: ours or squeezelite's.
  public init?(name: String) {
    switch name {
    case "flac", "flc": self = .flac
    case "opus", "ops": self = .opus
    case "vorbis", "ogg": self = .vorbis
    case "mp3", "mpg", "mad": self = .mp3
    case "pcm", "aif", "wav": self = .pcm
    default: return nil
    }
  }

  /// LMS's file type of a track (`type` in its status, `ct` in its database), for the cache.
  public init?(fileType: String) {
    switch fileType.lowercased() {
    case "flc", "flac": self = .flac
    case "mp3": self = .mp3
    case "ops", "opus": self = .opus
    // LMS 7.9 types Ogg files `ogg` (it does not index Opus; LMS 8 types Opus `ops`).
    case "ogg", "oga", "vorbis": self = .vorbis
    case "wav", "aif", "aiff", "pcm": self = .pcm
    default: return nil
    }
  }

  /// The `strm` format byte that asks for this codec.
  public var streamFormatByte: UInt8 {
    switch self {
    case .flac: UInt8(ascii: "f")
    case .opus: UInt8(ascii: "u")
    case .vorbis: UInt8(ascii: "o")
    case .mp3: UInt8(ascii: "m")
    case .pcm: UInt8(ascii: "p")
    }
  }

  /// The codec a `strm` format byte asks for; nil for formats this player does not decode.
  public init?(streamFormatByte byte: UInt8) {
    guard let codec = Codec.allCases.first(where: { $0.streamFormatByte == byte }) else { return nil }
    self = codec
  }

  /// Format tokens for HELO. `pcm` covers WAV and AIFF, whose headers the decoder reads.
  public var capabilityTokens: [String] {
    switch self {
    case .flac: ["flc"]
    case .opus: ["ops"]
    case .vorbis: ["ogg"]
    case .mp3: ["mp3"]
    case .pcm: ["aif", "pcm"]
    }
  }
}
