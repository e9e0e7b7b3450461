import AudioBuffers

/// Uncompressed PCM: raw samples with a given layout, or a WAV / AIFF file whose header says what
/// the samples are.
///
/// - A body that starts with `RIFF`/`RF64` … `WAVE` or `FORM` … `AIFF`/`AIFC` is parsed and its
///   header wins over the given parameters. WAV: `fmt ` (PCM or WAVE_FORMAT_EXTENSIBLE with a PCM
///   sub-format; the container width comes from the block alignment), `ds64` for RF64, `data`.
///   AIFF/AIFC: `COMM` (80-bit extended sample rate; AIFC compression `NONE`/`twos` big-endian or
///   `sowt` little-endian), `SSND` (its offset is skipped). Other chunks are skipped, however large.
/// - A data size of 0 or 0xFFFFFFFF (written by encoders that cannot seek back) means "to the end
///   of the stream"; any size plays at most to the end of the stream. After the data, the rest of
///   the stream (trailing chunks) is read and dropped.
/// - Otherwise the body is raw PCM with the given parameters — unless its first 12 bytes are
///   printable text starting with `<` (an HTML or XML error page), which is rejected.
/// - 8-bit samples are unsigned in WAV and raw PCM, signed in AIFF.
/// - Mono is duplicated to both channels; more than two channels: the first two are kept.
/// - A frame split between two reads waits in a carry buffer; a partial frame at the very end of
///   the stream is dropped.
public final class PCMDecoder: AudioDecoder {
  public let minimumFreeFrames = 4096
  public private(set) var format: AudioFormat?

  /// Frames converted per call at most.
  static let chunkFrames = 8192
  static let scratchBytes = 64 << 10
  static let maxChannels = 32

  struct Layout {
    var sampleRate: Int
    var channels: Int
    /// Significant bits, for the format.
    var bits: Int
    /// Bytes each sample occupies in the stream (1…4).
    var bytesPerSample: Int
    var littleEndian: Bool
    var unsigned8: Bool
    var frameBytes: Int { bytesPerSample * channels }
  }

  private enum Container { case wav, aiff }
  private enum Next { case chunkHeader, data }

  private enum Stage {
    case sniff
    case chunkHeader
    case chunkBody(id: FourCC, size: Int)
    case ssndHeader(size: Int)
    case skip(remaining: Int, then: Next)
    case data
    case trailing
    case ended
  }

  private let raw: Layout
  private var layout: Layout?
  private var container = Container.wav
  private var stage = Stage.sniff
  /// Data bytes not yet read; nil: to the end of the stream.
  private var dataRemaining: Int?
  private var ds64DataSize: Int?
  /// Data size and SSND offset found before the data starts.
  private var pendingDataSize: Int?

  private let header = HeaderBytes()
  /// Input bytes: the carried partial frame first, then the new read.
  private let scratch = UnsafeMutablePointer<UInt8>.allocate(capacity: PCMDecoder.scratchBytes)
  private var carryCount = 0
  private let stash = FrameStash(capacityFrames: PCMDecoder.chunkFrames)

  /// Parameters for a body without a header (nil fields: 44100 Hz, 2 channels, 16 bits, little-endian).
  public init(
    sampleRate: Int? = nil, channels: Int? = nil, bitsPerSample: Int? = nil, littleEndian: Bool? = nil
  ) throws(DecodeError) {
    let bits = bitsPerSample ?? 16
    let channels = channels ?? 2
    let sampleRate = sampleRate ?? 44100
    guard [8, 16, 24, 32].contains(bits) else { throw .unsupportedStream("PCM with \(bits) bits per sample") }
    guard (1...Self.maxChannels).contains(channels) else { throw .unsupportedStream("PCM with \(channels) channels") }
    guard sampleRate > 0 else { throw .unsupportedStream("PCM at \(sampleRate) Hz") }
    raw = Layout(
      sampleRate: sampleRate, channels: channels, bits: bits, bytesPerSample: bits / 8,
      littleEndian: littleEndian ?? true, unsigned8: true)
  }

  deinit {
    scratch.deallocate()
  }

  public func decode(from input: StreamInput, to output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    guard stash.drain(to: output) else { return .decoded }
    while true {
      switch stage {
      case .ended:
        return .finished
      case .data:
        return try decodeData(from: input, to: output)
      case .trailing:
        let ended = input.hasEnded  // sampled before the discard: nothing dropped after it means done
        if input.ring.discardAll() == 0 {
          guard ended else { return .needsInput }
          stage = .ended
        }
      default:
        if let progress = try parseHeader(from: input) { return progress }
      }
    }
  }

  // MARK: Samples

  private func decodeData(from input: StreamInput, to output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    guard let layout else { return .finished }
    let frameBytes = layout.frameBytes
    let maxFrames = min(Self.chunkFrames, Self.scratchBytes / frameBytes)
    var want = maxFrames * frameBytes - carryCount
    if let dataRemaining { want = min(want, dataRemaining) }
    if want == 0 {
      stage = .trailing  // the data chunk is complete; a partial frame in the carry is dropped
      return .decoded
    }
    let ended = input.hasEnded  // sampled before the read: 0 bytes after it means exhausted
    let n = input.read(into: UnsafeMutableRawBufferPointer(start: scratch + carryCount, count: want))
    if let dataRemaining { self.dataRemaining = dataRemaining - n }
    let total = carryCount + n
    let frames = total / frameBytes
    if frames == 0 && n == 0 {
      guard ended else { return .needsInput }
      stage = .ended  // a partial frame at the very end is dropped
      return .finished
    }
    if frames > 0, let format {
      let scratch = self.scratch
      stash.emit(count: frames, format: format, to: output) { destination, first, count in
        Self.convert(scratch + first * frameBytes, frames: count, layout: layout, into: destination)
      }
    }
    carryCount = total - frames * frameBytes
    if carryCount > 0 { scratch.update(from: scratch + frames * frameBytes, count: carryCount) }
    return .decoded
  }

  private func use(_ layout: Layout) {
    self.layout = layout
    format = AudioFormat(sampleRate: layout.sampleRate, channels: layout.channels, bitsPerSample: layout.bits)
  }

  // MARK: Header

  private var headerName: String { container == .wav ? "WAV header" : "AIFF header" }

  private func parseHeader(from input: StreamInput) throws(DecodeError) -> DecodeProgress? {
    switch stage {
    case .sniff:
      guard try header.collect(12, from: input, partialAtEnd: true, inside: headerName) else { return .needsInput }
      let id = header.fourCC(0)
      let kind = header.count >= 12 ? header.fourCC(8) : nil
      if (id == FourCC("RIFF") || id == FourCC("RF64")) && kind == FourCC("WAVE") {
        container = .wav
        stage = .chunkHeader
      } else if id == FourCC("FORM") && (kind == FourCC("AIFF") || kind == FourCC("AIFC")) {
        container = .aiff
        stage = .chunkHeader
      } else {
        if looksLikeMarkup() { throw .unsupportedStream("the body is text (HTML/XML), not PCM") }
        // Raw PCM: what was sniffed is the first data.
        use(raw)
        scratch.update(from: header.bytes, count: header.count)
        carryCount = header.count
        dataRemaining = nil
        stage = .data
        // Convert the sniffed bytes along with the next read.
      }
      header.reset()
    case .chunkHeader:
      guard try header.collect(8, from: input, inside: headerName) else { return .needsInput }
      let id = header.fourCC(0)
      let size = container == .wav ? Int(header.littleEndian32(4)) : Int(header.bigEndian32(4))
      header.reset()
      if container == .wav && id == FourCC("data") {
        guard layout != nil else { throw .corrupt("WAV data chunk before its fmt chunk") }
        if UInt32(size) == 0xFFFF_FFFF, let ds64DataSize {
          dataRemaining = ds64DataSize
        } else {
          dataRemaining = size == 0 || UInt32(size) == 0xFFFF_FFFF ? nil : size
        }
        stage = .data
      } else if container == .aiff && id == FourCC("SSND") {
        guard layout != nil else { throw .corrupt("AIFF SSND chunk before its COMM chunk") }
        stage = .ssndHeader(size: size)
      } else if id == FourCC("fmt ") || id == FourCC("ds64") || id == FourCC("COMM") {
        stage = .chunkBody(id: id, size: size)
      } else {
        stage = .skip(remaining: size + (size & 1), then: .chunkHeader)
      }
    case .chunkBody(let id, let size):
      let wanted = min(size, 64)
      guard try header.collect(wanted, from: input, inside: headerName) else { return .needsInput }
      switch id {
      case FourCC("fmt "): try parseWAVFormat(count: wanted)
      case FourCC("COMM"): try parseAIFFCommon(count: wanted)
      default:  // ds64: RIFF size (8), data size (8), sample count (8)
        if wanted >= 16 { ds64DataSize = Int(clamping: header.littleEndian64(8)) }
      }
      header.reset()
      stage = .skip(remaining: size - wanted + (size & 1), then: .chunkHeader)
    case .ssndHeader(let size):
      guard try header.collect(8, from: input, inside: headerName) else { return .needsInput }
      let offset = Int(header.bigEndian32(0))
      header.reset()
      let known = UInt32(truncatingIfNeeded: size) != 0xFFFF_FFFF && size != 0 && size >= 8 + offset
      dataRemaining = known ? size - 8 - offset : nil
      stage = .skip(remaining: offset, then: .data)
    case .skip(let remaining, let next):
      var left = remaining
      while left > 0 {
        let ended = input.hasEnded
        let n = input.read(into: UnsafeMutableRawBufferPointer(start: scratch, count: min(left, Self.scratchBytes)))
        if n == 0 {
          if ended { throw .corrupt("stream ended inside the \(container == .wav ? "WAV" : "AIFF") header") }
          stage = .skip(remaining: left, then: next)
          return .needsInput
        }
        left -= n
      }
      stage = next == .data ? .data : .chunkHeader
    case .data, .trailing, .ended:
      return nil
    }
    return nil
  }

  /// Raw PCM cannot be told from anything else, but an error page can: the first 12 bytes all
  /// printable ASCII, the first non-blank one `<`. (Audio starting that way is vanishingly rare.)
  private func looksLikeMarkup() -> Bool {
    guard header.count == 12 else { return false }
    var firstVisible: UInt8?
    for i in 0..<12 {
      let byte = header[i]
      let blank = byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
      guard blank || (0x21...0x7E).contains(byte) else { return false }
      if !blank && firstVisible == nil { firstVisible = byte }
    }
    return firstVisible == 0x3C
  }

  private func parseWAVFormat(count: Int) throws(DecodeError) {
    guard count >= 16 else { throw .corrupt("WAV fmt chunk too short") }
    var tag = Int(header.littleEndian16(0))
    let channels = Int(header.littleEndian16(2))
    let rate = Int(header.littleEndian32(4))
    let blockAlign = Int(header.littleEndian16(12))
    var bits = Int(header.littleEndian16(14))
    if tag == 0xFFFE && count >= 40 {  // WAVE_FORMAT_EXTENSIBLE: valid bits, then the sub-format GUID
      let valid = Int(header.littleEndian16(18))
      if valid > 0 && valid <= bits { bits = valid }
      tag = Int(header.littleEndian16(24))
    }
    guard tag == 1 else { throw .unsupportedStream("WAV format tag \(tag) (only integer PCM)") }
    guard (1...Self.maxChannels).contains(channels) else { throw .unsupportedStream("WAV with \(channels) channels") }
    guard rate > 0 else { throw .corrupt("WAV sample rate 0") }
    var bytes = blockAlign / channels
    if bytes * channels != blockAlign || bytes == 0 { bytes = (bits + 7) / 8 }
    guard (1...4).contains(bytes), bits >= 1, bits <= bytes * 8 else {
      throw .unsupportedStream("WAV with \(bits)-bit samples in \(bytes) bytes")
    }
    use(
      Layout(
        sampleRate: rate, channels: channels, bits: bits, bytesPerSample: bytes, littleEndian: true, unsigned8: true))
  }

  private func parseAIFFCommon(count: Int) throws(DecodeError) {
    guard count >= 18 else { throw .corrupt("AIFF COMM chunk too short") }
    let channels = Int(header.bigEndian16(0))
    let bits = Int(header.bigEndian16(6))
    let rate = extendedToInt(header.bytes + 8)
    var littleEndian = false
    if count >= 22 {  // AIFC: compression type
      let compression = header.fourCC(18)
      if compression == FourCC("sowt") {
        littleEndian = true
      } else if compression != FourCC("NONE") && compression != FourCC("twos") {
        throw .unsupportedStream("AIFC compression \(header.fourCC(18))")
      }
    }
    guard (1...Self.maxChannels).contains(channels) else { throw .unsupportedStream("AIFF with \(channels) channels") }
    guard (1...32).contains(bits) else { throw .unsupportedStream("AIFF with \(bits)-bit samples") }
    guard rate > 0 else { throw .corrupt("AIFF sample rate 0") }
    use(
      Layout(
        sampleRate: rate, channels: channels, bits: bits, bytesPerSample: (bits + 7) / 8, littleEndian: littleEndian,
        unsigned8: false))
  }
}

/// An 80-bit IEEE 754 extended value (AIFF's sample rate), rounded to an integer; 0 when out of range.
func extendedToInt(_ p: UnsafePointer<UInt8>) -> Int {
  let exponent = (Int(p[0]) & 0x7F) << 8 | Int(p[1])
  var mantissa: UInt64 = 0
  for i in 2..<10 { mantissa = mantissa << 8 | UInt64(p[i]) }
  if p[0] & 0x80 != 0 || mantissa == 0 { return 0 }
  let shift = 16383 + 63 - exponent
  if shift <= 0 || shift >= 64 { return 0 }
  let half = mantissa >> (shift - 1)
  let rounded = half >> 1 + (half & 1)
  return rounded > UInt64(Int.max) ? 0 : Int(rounded)
}
