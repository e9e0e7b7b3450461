import AudioBuffers

/// What a DSD file's header says, read up to its first audio byte.
struct DSDHeader: Equatable {
  var layout: DSDStreamLayout
  /// DSF: the audio bytes in each channel's last block (the rest is padding), when the header
  /// counts its samples.
  var lastBlockBytes: Int?
}

/// Reads a DSF or DSDIFF header chunk by chunk as it streams in, and checks it.
///
/// - DSF: `DSD `, `fmt ` (format 0, channels, rate, bit order, samples per channel, block size),
///   then `data`. DSDIFF: `FRM8`/`DSD `, `PROP`/`SND ` with `FS  `, `CHNL` and `CMPR`, then `DSD `.
///   Other chunks are skipped; DST compression is refused.
/// - A DSF sample count of 0 (a writer that could not seek back) leaves the data chunk to decide.
final class DSDHeaderReader {
  private enum Stage {
    case sniff
    case dsfHeader
    case dsfChunk
    case dffForm
    case dffChunk
    case skip(remaining: Int)
  }

  private struct DSFFormat {
    var channels: Int
    var rate: Int
    var lsbFirst: Bool
    var samples: Int
    var blockSize: Int
  }

  /// What reading one chunk came to.
  private enum Step {
    case needsInput
    case progressed
    case found(DSDHeader)
  }

  private var stage = Stage.sniff
  /// Where a skipped chunk leads: the next chunk of the file's kind.
  private var nextChunkStage = Stage.dsfChunk
  private let header = HeaderBytes()
  private var dsfFormat: DSFFormat?
  private var dffRate = 0
  private var dffChannels = 0

  private static let dsd = FourCC("DSD "), frm8 = FourCC("FRM8"), fmt = FourCC("fmt "), data = FourCC("data")
  private static let prop = FourCC("PROP"), snd = FourCC("SND "), fs = FourCC("FS  "), chnl = FourCC("CHNL")
  private static let cmpr = FourCC("CMPR"), dst = FourCC("DST ")
  private static let headerName = "DSD file's header"

  /// The header, once the audio begins; nil while more of the stream is needed.
  func read(from input: StreamInput) throws(DecodeError) -> DSDHeader? {
    while true {
      switch stage {
      case .sniff:
        guard try header.collect(4, from: input, inside: Self.headerName) else { return nil }
        let id = header.fourCC(0)
        header.reset()
        if id == Self.dsd {
          nextChunkStage = .dsfChunk
          stage = .dsfHeader
        } else if id == Self.frm8 {
          nextChunkStage = .dffChunk
          stage = .dffForm
        } else {
          throw .unsupportedStream("neither DSF nor DSDIFF (starts with \(id))")
        }
      case .skip(let remaining):
        let ended = input.hasEnded
        let n = input.read(
          into: UnsafeMutableRawBufferPointer(start: header.bytes, count: min(HeaderBytes.capacity, remaining)))
        if n == 0 {
          guard ended else { return nil }
          throw .corrupt("stream ended inside the \(Self.headerName)")
        }
        stage = remaining - n > 0 ? .skip(remaining: remaining - n) : nextChunkStage
      case .dsfHeader:
        // The rest of the `DSD ` chunk: its size, the file's size, the metadata's offset.
        guard try header.collect(24, from: input, inside: Self.headerName) else { return nil }
        let size = header.littleEndian64(0)
        header.reset()
        guard size >= 28, size < 1 << 20 else { throw .corrupt("DSF header chunk of \(size) bytes") }
        stage = size > 28 ? .skip(remaining: Int(size) - 28) : .dsfChunk
      case .dsfChunk:
        switch try readDSFChunk(from: input) {
        case .needsInput: return nil
        case .progressed: continue
        case .found(let found): return found
        }
      case .dffForm:
        // The FRM8 chunk's size and its form type.
        guard try header.collect(12, from: input, inside: Self.headerName) else { return nil }
        let form = header.fourCC(8)
        header.reset()
        guard form == Self.dsd else { throw .unsupportedStream("DSDIFF form '\(form)'") }
        stage = .dffChunk
      case .dffChunk:
        switch try readDSDIFFChunk(from: input) {
        case .needsInput: return nil
        case .progressed: continue
        case .found(let found): return found
        }
      }
    }
  }

  // MARK: DSF

  private func readDSFChunk(from input: StreamInput) throws(DecodeError) -> Step {
    guard try header.collect(12, from: input, inside: Self.headerName) else { return .needsInput }
    let id = header.fourCC(0)
    let size = header.littleEndian64(4)
    guard size >= 12, size <= 1 << 62 else { throw .corrupt("DSF chunk '\(id)' of \(size) bytes") }
    let body = Int(size) - 12
    switch id {
    case Self.fmt:
      guard body >= 40, body < 1 << 20 else { throw .corrupt("DSF fmt chunk of \(size) bytes") }
      guard try header.collect(52, from: input, inside: Self.headerName) else { return .needsInput }
      dsfFormat = try readDSFFormat()
      header.reset()
      stage = body > 40 ? .skip(remaining: body - 40) : .dsfChunk
      return .progressed
    case Self.data:
      header.reset()
      guard let format = dsfFormat else { throw .corrupt("DSF data before its fmt chunk") }
      try Self.check(channels: format.channels)
      guard format.blockSize > 0, format.blockSize % 2 == 0, format.blockSize <= DSDStreamLayout.maximumBlockSize
      else { throw .corrupt("DSF block size \(format.blockSize)") }
      let perChannel = format.samples > 0 ? min(format.samples / 8, body / format.channels) : body / format.channels
      var lastBlockBytes: Int?
      if format.samples > 0 {
        let tail = (format.samples / 8) % format.blockSize
        lastBlockBytes = tail == 0 ? format.blockSize : tail
      }
      let layout = DSDStreamLayout(
        container: .dsf(blockSize: format.blockSize, lsbFirst: format.lsbFirst), sampleRate: format.rate,
        channels: format.channels, bytesPerChannel: perChannel)
      return .found(try checked(DSDHeader(layout: layout, lastBlockBytes: lastBlockBytes)))
    default:
      header.reset()
      stage = body > 0 ? .skip(remaining: body) : .dsfChunk
      return .progressed
    }
  }

  private func readDSFFormat() throws(DecodeError) -> DSFFormat {
    // Offsets within the chunk: version 12, format id 16, channel type 20, channels 24, rate 28,
    // bits per sample 32, samples per channel 36, block size per channel 44.
    let formatID = header.littleEndian32(16)
    guard formatID == 0 else { throw .unsupportedStream("DSF format \(formatID) (only raw DSD plays)") }
    let bits = header.littleEndian32(32)
    guard bits == 1 || bits == 8 else { throw .corrupt("DSF with \(bits) bits per sample") }
    let samples = header.littleEndian64(36)
    guard samples < 1 << 60 else { throw .corrupt("DSF sample count \(samples)") }
    return DSFFormat(
      channels: Int(header.littleEndian32(24)), rate: Int(header.littleEndian32(28)), lsbFirst: bits == 1,
      samples: Int(samples), blockSize: Int(header.littleEndian32(44)))
  }

  // MARK: DSDIFF

  /// The fixed part of the chunks read here (what follows it is skipped); nil for other chunks.
  private static func fixedBytes(of id: FourCC) -> Int? {
    switch id {
    case prop, fs, cmpr: 4
    case chnl: 2
    default: nil
    }
  }

  private func readDSDIFFChunk(from input: StreamInput) throws(DecodeError) -> Step {
    guard try header.collect(12, from: input, inside: Self.headerName) else { return .needsInput }
    let id = header.fourCC(0)
    let size = header.bigEndian64(4)
    guard size <= 1 << 62 else { throw .corrupt("DSDIFF chunk '\(id)' of \(size) bytes") }
    let padded = Int(size) + Int(size & 1)
    let fixed = Self.fixedBytes(of: id)
    if let fixed {
      guard size >= fixed else { throw .corrupt("DSDIFF \(id) chunk of \(size) bytes") }
      guard try header.collect(12 + fixed, from: input, inside: Self.headerName) else { return .needsInput }
    }
    switch id {
    case Self.prop:
      // Its sub-chunks follow its form type, which must be SND.
      let form = header.fourCC(12)
      header.reset()
      guard form == Self.snd else { throw .unsupportedStream("DSDIFF property form '\(form)'") }
      return .progressed
    case Self.fs:
      dffRate = Int(header.bigEndian32(12))
    case Self.chnl:
      dffChannels = Int(header.bigEndian16(12))
    case Self.cmpr:
      let compression = header.fourCC(12)
      guard compression == Self.dsd else {
        throw .unsupportedStream("DSDIFF compressed as '\(compression)' (only uncompressed DSD plays)")
      }
    case Self.dsd:
      header.reset()
      guard dffRate > 0, dffChannels > 0 else { throw .corrupt("DSDIFF audio before its FS and CHNL chunks") }
      try Self.check(channels: dffChannels)
      let layout = DSDStreamLayout(
        container: .dff, sampleRate: dffRate, channels: dffChannels, bytesPerChannel: Int(size) / dffChannels)
      return .found(try checked(DSDHeader(layout: layout)))
    case Self.dst:
      throw .unsupportedStream("DST-compressed DSDIFF (only uncompressed DSD plays)")
    default:
      break
    }
    header.reset()
    let rest = padded - (fixed ?? 0)
    stage = rest > 0 ? .skip(remaining: rest) : .dffChunk
    return .progressed
  }

  // MARK: Checks

  private static func check(channels: Int) throws(DecodeError) {
    guard (1...DSDStreamLayout.maximumChannels).contains(channels) else {
      throw .unsupportedStream("DSD with \(channels) channels")
    }
  }

  private func checked(_ found: DSDHeader) throws(DecodeError) -> DSDHeader {
    guard DSDStreamLayout.isValidRate(found.layout.sampleRate) else {
      throw .unsupportedStream("DSD at \(found.layout.sampleRate) Hz")
    }
    return found
  }
}
