/// The codecs this player decodes, and every name they go by: the `strm` format byte, the HELO
/// format tokens, the `-c`/`-e` names (squeezelite's spellings too) and the file types LMS
/// reports for the cache. One vocabulary for the protocol, the decoders and the cache.
public enum Codec: String, CaseIterable, Sendable {
  case alac
  case aac
  case flac
  case opus
  case vorbis
  case mp3
  case pcm
  /// DSD in DSF or DSDIFF files.
  case dsd

  /// The order offered to the server when `-c` does not say, squeezelite's. LMS streams a file in
  /// the first format of this list it has a rule for. Only MP4 files have rules to `alc` and
  /// `aac`, and only Ogg files to `ogg`; they come first because LMS 7.9 also has rules that turn
  /// all three into FLAC with its own faad or sox: this way they arrive as they are and are
  /// decoded here (and can be cached for offline play). Every other file goes by lossless first.
  /// DSD files have rules to `dsf`/`dff` only (or a transcode with LMS's own tools): first, as
  /// squeezelite lists them.
  public static let defaultOrder: [Codec] = [.dsd, .alac, .aac, .vorbis, .flac, .opus, .mp3, .pcm]

  /// A `-c`/`-e` name: ours or squeezelite's.
  public init?(name: String) {
    switch name {
    case "alac", "alc": self = .alac
    case "aac", "mp4", "m4a": self = .aac
    case "flac", "flc", "ogf": self = .flac
    case "opus", "ops": self = .opus
    case "vorbis", "ogg": self = .vorbis
    case "mp3", "mpg", "mad": self = .mp3
    case "pcm", "aif", "wav": self = .pcm
    case "dsd", "dsf", "dff": self = .dsd
    default: return nil
    }
  }

  /// LMS's file type of a track (`type` in its status, `ct` in its database), for the cache.
  public init?(fileType: String) {
    switch fileType.lowercased() {
    case "flc", "flac", "ogf": self = .flac  // ogf: FLAC in Ogg
    case "mp3": self = .mp3
    // MP4 files are `mp4` (`m4a` and `m4b` too), or `alc` when the scanner found Apple Lossless;
    // `aac` is an ADTS file.
    case "alc", "alac": self = .alac
    case "mp4", "m4a", "m4b", "aac": self = .aac
    case "ops", "opus": self = .opus
    // LMS 7.9 types Ogg files `ogg` (it does not index Opus; LMS 8 types Opus `ops`).
    case "ogg", "oga", "vorbis": self = .vorbis
    case "wav", "aif", "aiff", "pcm": self = .pcm
    case "dsf", "dff": self = .dsd
    default: return nil
    }
  }

  /// The `strm` format byte that asks for this codec.
  public var streamFormatByte: UInt8 {
    switch self {
    case .alac: UInt8(ascii: "l")
    case .aac: UInt8(ascii: "a")
    case .flac: UInt8(ascii: "f")
    case .opus: UInt8(ascii: "u")
    case .vorbis: UInt8(ascii: "o")
    case .mp3: UInt8(ascii: "m")
    case .pcm: UInt8(ascii: "p")
    case .dsd: UInt8(ascii: "d")
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
    case .alac: ["alc"]
    case .aac: ["aac"]
    case .flac: ["ogf", "flc"]  // FLAC in Ogg, then native, as squeezelite
    case .opus: ["ops"]
    case .vorbis: ["ogg"]
    case .mp3: ["mp3"]
    case .pcm: ["aif", "pcm"]
    case .dsd: ["dsf", "dff"]
    }
  }
}
