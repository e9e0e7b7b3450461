import AudioBuffers

/// How DSD reaches the output (`-D`).
public struct DSDOutput: Equatable, Sendable {
  public enum Delivery: Equatable, Sendable {
    /// DSD over PCM: 16 DSD bits per channel in each 24-bit sample, behind an alternating marker
    /// byte, at a sixteenth of the DSD rate; a DoP DAC plays the bits as DSD.
    case dop
    /// Converted to 24-bit PCM at an eighth of the DSD rate.
    case pcm
  }

  public var delivery: Delivery
  /// The highest rate the output takes: a DoP rate above it is converted to PCM instead, as
  /// squeezelite does.
  public var maximumRate: Int

  public init(delivery: Delivery, maximumRate: Int = 384_000) {
    self.delivery = delivery
    self.maximumRate = maximumRate
  }

  /// Without `-D`: PCM.
  public static let pcm = DSDOutput(delivery: .pcm)
}

/// DSD files as LMS streams them (`strm d`, the file from its first byte): DSF and DSDIFF
/// (uncompressed; DST is refused), played as DoP or converted to PCM (see `DSDOutput`).
///
/// - The header is parsed chunk by chunk: DSF `DSD `, `fmt ` (format 0, channels, rate, bit order,
///   samples per channel, block size), `data`; DSDIFF `FRM8`/`DSD `, `PROP`/`SND ` with `FS  `,
///   `CHNL`, `CMPR`, then `DSD `. Other chunks are skipped.
/// - The audio ends after the samples the header counts (DSF pads its last block) or where the
///   stream ends, whichever comes first: LMS's stream after a seek repeats the whole file's header
///   before the rest of the file.
/// - Mono plays on both sides; of more channels the first two are kept.
/// - DoP frames: `[marker][first byte][second byte][0]` per channel, the marker 0x05 and 0xFA in
///   turn from frame to frame (the same on both channels); an odd last byte is completed with DSD
///   silence (0x69).
public final class DSDDecoder: AudioDecoder {
  public let minimumFreeFrames = 4096
  public private(set) var format: AudioFormat?
  public var content: String? {
    layout.map { "\($0.containerName) \($0.rateName), \(format?.dop == true ? "DoP" : "converted to PCM")" }
  }

  private enum Stage {
    case sniff
    case dsfHeader
    case dsfChunk
    case dffForm
    case dffChunk
    case skip(remaining: Int)
    case audio
    case trailing
    case ended
  }

  static let dopMarkers: (UInt8, UInt8) = (0x05, 0xFA)
  static let silenceByte: UInt8 = 0x69

  private let requested: DSDOutput
  private var stage = Stage.sniff
  private var layout: DSDStreamLayout?
  /// Found in the header before its data chunk.
  private var dsfFormat: (channels: Int, rate: Int, lsbFirst: Bool, samples: Int, blockSize: Int)?
  private var dffRate = 0
  private var dffChannels = 0
  private var bytesPerChannelLeft = 0
  /// DSF: the audio bytes in each channel's last block (the rest is padding), when the header
  /// counts its samples.
  private var dsfLastBlockBytes: Int?

  private let head = UnsafeMutablePointer<UInt8>.allocate(capacity: 64)
  private var headCount = 0
  /// One group of input bytes (see `DSDStreamLayout.groupBytes`), then its two output channels
  /// as MSB-first bytes side by side, then the frames made of them.
  private var group: UnsafeMutablePointer<UInt8>?
  private var groupFill = 0
  private var planar: UnsafeMutablePointer<UInt8>?
  private var frames: UnsafeMutablePointer<Int32>?
  private var stash: FrameStash?
  private var converter: DSDToPCM?
  private var filters = (left: DSDToPCM.Channel(), right: DSDToPCM.Channel())
  /// Whether the next DoP frame carries the first marker.
  private var firstMarkerNext = true
  private let reversed: [UInt8] = (0..<256).map { value in
    var v = UInt8(value)
    var r: UInt8 = 0
    for _ in 0..<8 {
      r = (r << 1) | (v & 1)
      v >>= 1
    }
    return r
  }

  public init(output: DSDOutput) {
    requested = output
  }

  deinit {
    head.deallocate()
    group?.deallocate()
    planar?.deallocate()
    frames?.deallocate()
  }

  public func decode(from input: StreamInput, to output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    if let stash, !stash.drain(to: output) { return .decoded }
    while true {
      switch stage {
      case .ended:
        return .finished
      case .audio:
        return try decodeAudio(from: input, to: output)
      case .trailing:
        let ended = input.hasEnded
        if input.read(into: UnsafeMutableRawBufferPointer(start: head, count: 64)) == 0 {
          guard ended else { return .needsInput }
          stage = .ended
        }
      case .skip(let remaining):
        let ended = input.hasEnded
        let n = input.read(into: UnsafeMutableRawBufferPointer(start: head, count: min(64, remaining)))
        if n == 0 {
          guard ended else { return .needsInput }
          throw .corrupt("stream ended inside the DSD file's header")
        }
        stage = remaining - n > 0 ? .skip(remaining: remaining - n) : nextChunkStage
      default:
        if let progress = try parseHeader(from: input) { return progress }
      }
    }
  }

  // MARK: Header

  /// Where a skipped chunk leads: the next chunk of the file's kind.
  private var nextChunkStage = Stage.dsfChunk

  private func collect(_ count: Int, from input: StreamInput) throws(DecodeError) -> Bool {
    while headCount < count {
      let ended = input.hasEnded
      let n = input.read(into: UnsafeMutableRawBufferPointer(start: head + headCount, count: count - headCount))
      if n == 0 {
        if ended { throw .corrupt("stream ended inside the DSD file's header") }
        return false
      }
      headCount += n
    }
    return true
  }

  private func parseHeader(from input: StreamInput) throws(DecodeError) -> DecodeProgress? {
    switch stage {
    case .sniff:
      guard try collect(4, from: input) else { return .needsInput }
      headCount = 0
      if text(0) == "DSD " {
        nextChunkStage = .dsfChunk
        stage = .dsfHeader
      } else if text(0) == "FRM8" {
        nextChunkStage = .dffChunk
        stage = .dffForm
      } else {
        throw .unsupportedStream("neither DSF nor DSDIFF (starts with \(printable(0, 4)))")
      }
    case .dsfHeader:
      // The rest of the `DSD ` chunk: its size, the file's size, the metadata's offset.
      guard try collect(24, from: input) else { return .needsInput }
      let size = littleEndian64(0)
      headCount = 0
      guard size >= 28, size < 1 << 20 else { throw .corrupt("DSF header chunk of \(size) bytes") }
      stage = size > 28 ? .skip(remaining: Int(size) - 28) : .dsfChunk
    case .dsfChunk:
      guard try collect(12, from: input) else { return .needsInput }
      let id = text(0)
      let size = littleEndian64(4)
      guard size >= 12, size <= 1 << 62 else { throw .corrupt("DSF chunk '\(printable(0, 4))' of \(size) bytes") }
      let body = Int(size) - 12
      if id == "fmt " {
        guard body >= 40, body < 1 << 20 else { throw .corrupt("DSF fmt chunk of \(size) bytes") }
        guard try collect(52, from: input) else { return .needsInput }
        try readDSFFormat()
        headCount = 0
        stage = body > 40 ? .skip(remaining: body - 40) : .dsfChunk
      } else if id == "data" {
        headCount = 0
        guard let f = dsfFormat else { throw .corrupt("DSF data before its fmt chunk") }
        try Self.check(channels: f.channels)
        // A writer that could not seek back leaves the sample count 0: the data chunk decides.
        let perChannel = f.samples > 0 ? min(f.samples / 8, body / f.channels) : body / f.channels
        if f.samples > 0, f.blockSize > 0 {
          let tail = (f.samples / 8) % f.blockSize
          dsfLastBlockBytes = tail == 0 ? f.blockSize : tail
        }
        try begin(
          DSDStreamLayout(
            container: .dsf(blockSize: f.blockSize, lsbFirst: f.lsbFirst), sampleRate: f.rate, channels: f.channels,
            bytesPerChannel: perChannel))
      } else {
        headCount = 0
        stage = body > 0 ? .skip(remaining: body) : .dsfChunk
      }
    case .dffForm:
      // The FRM8 chunk's size and its form type.
      guard try collect(12, from: input) else { return .needsInput }
      guard text(8) == "DSD " else { throw .unsupportedStream("DSDIFF form '\(printable(8, 4))'") }
      headCount = 0
      stage = .dffChunk
    case .dffChunk:
      guard try collect(12, from: input) else { return .needsInput }
      let id = text(0)
      let size = bigEndian64(4)
      guard size <= 1 << 62 else { throw .corrupt("DSDIFF chunk '\(printable(0, 4))' of \(size) bytes") }
      let padded = Int(size) + Int(size & 1)
      // The fixed part of the chunks read here; what follows it is skipped.
      let fixed = ["PROP": 4, "FS  ": 4, "CHNL": 2, "CMPR": 4][id]
      if let fixed {
        guard size >= fixed else { throw .corrupt("DSDIFF \(id) chunk of \(size) bytes") }
        guard try collect(12 + fixed, from: input) else { return .needsInput }
      }
      switch id {
      case "PROP":
        // Its sub-chunks follow its form type, which must be SND.
        guard text(12) == "SND " else { throw .unsupportedStream("DSDIFF property form '\(printable(12, 4))'") }
        headCount = 0
        return nil
      case "FS  ":
        dffRate = Int(bigEndian32(12))
      case "CHNL":
        dffChannels = Int(head[12]) << 8 | Int(head[13])
      case "CMPR":
        guard text(12) == "DSD " else {
          throw .unsupportedStream("DSDIFF compressed as '\(printable(12, 4))' (only uncompressed DSD plays)")
        }
      case "DSD ":
        headCount = 0
        guard dffRate > 0, dffChannels > 0 else { throw .corrupt("DSDIFF audio before its FS and CHNL chunks") }
        try Self.check(channels: dffChannels)
        try begin(
          DSDStreamLayout(
            container: .dff, sampleRate: dffRate, channels: dffChannels, bytesPerChannel: Int(size) / dffChannels))
        return nil
      case "DST ":
        throw .unsupportedStream("DST-compressed DSDIFF (only uncompressed DSD plays)")
      default:
        break
      }
      headCount = 0
      let rest = padded - (fixed ?? 0)
      stage = rest > 0 ? .skip(remaining: rest) : .dffChunk
    default:
      break
    }
    return nil
  }

  private func readDSFFormat() throws(DecodeError) {
    // Offsets within the chunk: version 12, format id 16, channel type 20, channels 24, rate 28,
    // bits per sample 32, samples per channel 36, block size per channel 44.
    let formatID = littleEndian32(16)
    guard formatID == 0 else { throw .unsupportedStream("DSF format \(formatID) (only raw DSD plays)") }
    let bits = littleEndian32(32)
    guard bits == 1 || bits == 8 else { throw .corrupt("DSF with \(bits) bits per sample") }
    let samples = littleEndian64(36)
    guard samples < 1 << 60 else { throw .corrupt("DSF sample count \(samples)") }
    dsfFormat = (
      channels: Int(littleEndian32(24)), rate: Int(littleEndian32(28)), lsbFirst: bits == 1, samples: Int(samples),
      blockSize: Int(littleEndian32(44))
    )
  }

  private static func check(channels: Int) throws(DecodeError) {
    guard (1...DSDStreamLayout.maximumChannels).contains(channels) else {
      throw .unsupportedStream("DSD with \(channels) channels")
    }
  }

  /// The audio begins: checks the layout, chooses DoP or PCM and allocates the group buffers.
  private func begin(_ layout: DSDStreamLayout) throws(DecodeError) {
    guard DSDStreamLayout.isValidRate(layout.sampleRate) else {
      throw .unsupportedStream("DSD at \(layout.sampleRate) Hz")
    }
    if case .dsf(let blockSize, _) = layout.container {
      guard blockSize > 0, blockSize % 2 == 0, blockSize <= DSDStreamLayout.maximumBlockSize else {
        throw .corrupt("DSF block size \(blockSize)")
      }
    }
    let dop = requested.delivery == .dop && layout.sampleRate / 16 <= requested.maximumRate
    if !dop { converter = DSDToPCM() }  // its tables: 16 KiB, only for a track converted
    self.layout = layout
    bytesPerChannelLeft = layout.bytesPerChannel
    format =
      dop
      ? AudioFormat(sampleRate: layout.sampleRate / 16, channels: layout.channels, bitsPerSample: 24, dop: true)
      : AudioFormat(sampleRate: layout.sampleRate / 8, channels: layout.channels, bitsPerSample: 24)
    let perChannel = layout.bytesPerChannelInGroup
    group = .allocate(capacity: layout.groupBytes)
    planar = .allocate(capacity: 2 * perChannel)
    frames = .allocate(capacity: 2 * perChannel)
    stash = FrameStash(capacityFrames: perChannel)
    stage = .audio
  }

  // MARK: Audio

  private func decodeAudio(from input: StreamInput, to output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    guard let layout, let group else { return .finished }
    if bytesPerChannelLeft == 0 {
      stage = .trailing
      return .decoded
    }
    let ended = input.hasEnded  // sampled before the read: 0 bytes after it means exhausted
    let n = input.read(
      into: UnsafeMutableRawBufferPointer(start: group + groupFill, count: layout.groupBytes - groupFill))
    groupFill += n
    if groupFill < layout.groupBytes {
      if n > 0 { return .decoded }
      guard ended else { return .needsInput }
    }
    var perChannel = usableBytesPerChannel(layout)
    if groupFill == layout.groupBytes, let lastBlockBytes = dsfLastBlockBytes {
      // After a seek LMS's stream overstates what follows (the header is the whole file's): the
      // last group is the one the stream or the file's ID3 chunk ends, and only its first bytes
      // are audio. One look ahead tells.
      let endedNow = input.hasEnded
      var next: (UInt8, UInt8, UInt8) = (0, 0, 0)
      let seen = withUnsafeMutableBytes(of: &next) { input.ring.peek(into: $0) }
      if seen < 3 && !endedNow { return .needsInput }
      if seen == 0 || (seen == 3 && next == (0x49, 0x44, 0x33)) {  // "ID3"
        perChannel = min(perChannel, lastBlockBytes)
        bytesPerChannelLeft = perChannel
      }
    }
    groupFill = 0
    guard perChannel > 0 else {
      stage = .ended  // the stream ended: what was left is less than a frame
      return .finished
    }
    bytesPerChannelLeft -= perChannel
    if ended && n == 0 { bytesPerChannelLeft = 0 }
    separate(layout, bytesPerChannel: perChannel)
    emit(bytesPerChannel: perChannel, to: output)
    return .decoded
  }

  /// Bytes of each channel in the group just read: a whole group, or what a short last one holds,
  /// and never past the samples the header counts.
  private func usableBytesPerChannel(_ layout: DSDStreamLayout) -> Int {
    var perChannel: Int
    if groupFill == layout.groupBytes {
      perChannel = layout.bytesPerChannelInGroup
    } else {
      switch layout.container {
      case .dsf(let blockSize, _):
        // The last channel's block decides: a block cut short holds what was read of it.
        perChannel = max(0, min(blockSize, groupFill - (layout.channels - 1) * blockSize))
      case .dff:
        perChannel = groupFill / layout.channels
      }
    }
    return min(perChannel, bytesPerChannelLeft)
  }

  /// The group's first two channels (the first twice for mono), MSB first, into `planar`.
  private func separate(_ layout: DSDStreamLayout, bytesPerChannel count: Int) {
    guard let group, let planar else { return }
    let right = layout.channels > 1 ? 1 : 0
    let perChannel = layout.bytesPerChannelInGroup
    switch layout.container {
    case .dsf(let blockSize, let lsbFirst):
      for side in 0..<2 {
        let source = group + (side == 0 ? 0 : right) * blockSize
        let target = planar + side * perChannel
        if lsbFirst {
          reversed.withUnsafeBufferPointer { table in
            for i in 0..<count { target[i] = table[Int(source[i])] }
          }
        } else {
          target.update(from: source, count: count)
        }
      }
    case .dff:
      let stride = layout.channels
      for i in 0..<count {
        planar[i] = group[i * stride]
        planar[perChannel + i] = group[i * stride + right]
      }
    }
  }

  private func emit(bytesPerChannel count: Int, to output: FrameOutput) {
    guard let layout, let planar, let frames, let stash, let format else { return }
    let left = UnsafePointer(planar)
    let right = UnsafePointer(planar + layout.bytesPerChannelInGroup)
    let frameCount: Int
    if format.dop {
      frameCount = (count + 1) / 2
      var first = firstMarkerNext
      for f in 0..<frameCount {
        let marker = UInt32(first ? Self.dopMarkers.0 : Self.dopMarkers.1)
        let i = 2 * f
        let hasSecondByte = i + 1 < count
        let l1 = hasSecondByte ? left[i + 1] : Self.silenceByte
        let r1 = hasSecondByte ? right[i + 1] : Self.silenceByte
        frames[2 * f] = Int32(bitPattern: marker << 24 | UInt32(left[i]) << 16 | UInt32(l1) << 8)
        frames[2 * f + 1] = Int32(bitPattern: marker << 24 | UInt32(right[i]) << 16 | UInt32(r1) << 8)
        first.toggle()
      }
      firstMarkerNext = first
    } else if let converter {
      frameCount = count
      converter.convert(left, count: count, channel: &filters.left, into: frames, stride: 2)
      converter.convert(right, count: count, channel: &filters.right, into: frames + 1, stride: 2)
    } else {
      return
    }
    stash.emit(count: frameCount, format: format, to: output) { destination, first, n in
      destination.update(from: frames + 2 * first, count: 2 * n)
    }
  }

  // MARK: Bytes

  private func text(_ offset: Int) -> String {
    String(decoding: UnsafeBufferPointer(start: head + offset, count: 4), as: UTF8.self)
  }

  private func printable(_ offset: Int, _ count: Int) -> String {
    (0..<count).map { i in
      let c = head[offset + i]
      return (0x20..<0x7F).contains(c) ? String(UnicodeScalar(c)) : "."
    }.joined()
  }

  private func littleEndian32(_ offset: Int) -> UInt32 {
    (0..<4).reduce(0) { $0 | UInt32(head[offset + $1]) << (8 * $1) }
  }

  private func littleEndian64(_ offset: Int) -> UInt64 {
    (0..<8).reduce(0) { $0 | UInt64(head[offset + $1]) << (8 * $1) }
  }

  private func bigEndian32(_ offset: Int) -> UInt32 {
    (0..<4).reduce(0) { $0 << 8 | UInt32(head[offset + $1]) }
  }

  private func bigEndian64(_ offset: Int) -> UInt64 {
    (0..<8).reduce(0) { $0 << 8 | UInt64(head[offset + $1]) }
  }
}
