import Support

/// What the server said about a PCM stream (strm's sample size, rate, channels and endianness).
/// nil fields: taken from the WAV/AIFF header if there is one, else 44100 Hz, 2 channels, 16 bits,
/// little-endian.
public struct PCMParameters: Sendable, Equatable {
  public var sampleRate: Int?
  public var channels: Int?
  public var bitsPerSample: Int?
  public var littleEndian: Bool?

  public init(sampleRate: Int? = nil, channels: Int? = nil, bitsPerSample: Int? = nil, littleEndian: Bool? = nil) {
    self.sampleRate = sampleRate
    self.channels = channels
    self.bitsPerSample = bitsPerSample
    self.littleEndian = littleEndian
  }
}

public enum DecoderFactory {
  /// A fresh decoder for one track. `pcm` only matters for `.pcm`, `dsd` for `.dsd`.
  public static func make(
    codec: Codec, pcm: PCMParameters? = nil, dsd: DSDOutput = .pcm
  ) throws(DecodeError) -> any AudioDecoder {
    switch codec {
    case .dsd:
      return DSDDecoder(output: dsd)
    case .alac:
      return ALACDecoder()
    case .aac:
      return try AACDecoder()
    case .flac:
      return FLACStreamDecoder()
    case .mp3:
      return try MP3Decoder()
    case .opus:
      return OpusDecoder()
    case .vorbis:
      return OggStreamDecoder(announced: .vorbis)
    case .pcm:
      let p = pcm ?? PCMParameters()
      return try PCMDecoder(
        sampleRate: p.sampleRate, channels: p.channels, bitsPerSample: p.bitsPerSample, littleEndian: p.littleEndian)
    }
  }
}
