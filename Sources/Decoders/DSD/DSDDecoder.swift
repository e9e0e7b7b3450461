import AudioBuffers

/// How DSD reaches the output (`-D`).
public struct DSDOutput: Equatable, Sendable {
  public enum Delivery: Equatable, Sendable {
    /// DSD over PCM: 16 DSD bits per channel in each 24-bit sample, behind an alternating marker
    /// byte, at a sixteenth of the DSD rate; a DoP DAC plays the bits as DSD.
    case dop
    /// Native DSD in one of ALSA's formats, for a device that takes it.
    case native(NativeDSDFormat)
    /// Converted to 24-bit PCM at 352.8 kHz (384 kHz in the 48 kHz family), or half that for an
    /// output that does not take it.
    case pcm
  }

  public var delivery: Delivery
  /// The highest rate the output takes: a DoP or native frame rate above it is converted to PCM
  /// instead, as squeezelite does.
  public var maximumRate: Int
  /// The highest PCM rate the output plays as it is: a conversion to PCM goes to half its usual
  /// rate for an output below it.
  public var maximumPCMRate: Int

  public init(delivery: Delivery, maximumRate: Int = 384_000, maximumPCMRate: Int = 384_000) {
    self.delivery = delivery
    self.maximumRate = maximumRate
    self.maximumPCMRate = maximumPCMRate
  }

  /// Without `-D`: PCM.
  public static let pcm = DSDOutput(delivery: .pcm)
}

/// DSD files as LMS streams them (`strm d`, the file from its first byte): DSF and DSDIFF
/// (uncompressed; DST is refused), played as DoP, as native DSD or converted to PCM (see
/// `DSDOutput`).
///
/// - The header is read by `DSDHeaderReader`.
/// - The audio ends after the samples the header counts (DSF pads its last block) or where the
///   stream ends, whichever comes first: LMS's stream after a seek repeats the whole file's header
///   before the rest of the file.
/// - Mono plays on both sides; of more channels the first two are kept.
/// - DoP frames (see `DoP`): per channel the marker, the two DSD bytes, 0. Native frames (see
///   `NativeDSDFormat`): per channel the format's bytes from the top. A last sample short of bytes
///   is completed with DSD's idle pattern.
public final class DSDDecoder: AudioDecoder {
  public let minimumFreeFrames = 4096
  public private(set) var format: AudioFormat?
  public var content: String? {
    guard let layout, let format else { return nil }
    let delivery =
      switch format.encoding {
      case .dop: "DoP"
      case .dsd(let native): "native \(native.alsaName)"
      case .pcm: "converted to PCM"
      }
    return "\(layout.containerName) \(layout.rateName), \(delivery)"
  }

  private enum Stage {
    case header
    case audio
    case trailing
    case ended
  }

  private let requested: DSDOutput
  private var stage = Stage.header
  private var headerReader: DSDHeaderReader? = DSDHeaderReader()
  private var layout: DSDStreamLayout?
  private var bytesPerChannelLeft = 0
  /// DSF: the audio bytes in each channel's last block (the rest is padding), when the header
  /// counts its samples.
  private var dsfLastBlockBytes: Int?

  /// One group of input bytes (see `DSDStreamLayout.groupBytes`), then its two output channels
  /// as MSB-first bytes side by side, then the frames made of them.
  private var group: UnsafeMutablePointer<UInt8>?
  private var groupFill = 0
  private var planar: UnsafeMutablePointer<UInt8>?
  private var frames: UnsafeMutablePointer<Int32>?
  private var stash: FrameStash?
  private var converter: DSDToPCM?
  private var filters: (left: DSDToPCM.Channel, right: DSDToPCM.Channel)?
  /// Whether the next DoP frame carries the second marker.
  private var secondMarkerNext = false
  /// Each byte with its bits in reverse order (DSF's LSB-first bytes made MSB-first).
  private static let bitReversed: [UInt8] = (0..<256).map { value in
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
        let ended = input.hasEnded  // sampled before the discard: nothing dropped after it means done
        if input.ring.discardAll() == 0 {
          guard ended else { return .needsInput }
          stage = .ended
        }
      case .header:
        guard let found = try headerReader?.read(from: input) else { return .needsInput }
        headerReader = nil
        begin(found)
      }
    }
  }

  /// The audio begins: chooses DoP, native DSD or PCM and allocates the group buffers.
  private func begin(_ header: DSDHeader) {
    let layout = header.layout
    dsfLastBlockBytes = header.lastBlockBytes
    let format = Self.outputFormat(for: layout, requested: requested)
    if format.encoding == .pcm {
      // Its tables (16 KiB at DSD64, as many more as the rate is higher) only for a track converted.
      let converter = DSDToPCM(
        multiple: layout.sampleRate / layout.dsd64Rate,
        bytesPerSample: layout.sampleRate / 8 / format.sampleRate)
      filters = (converter.makeChannel(), converter.makeChannel())
      self.converter = converter
    }
    self.layout = layout
    self.format = format
    bytesPerChannelLeft = layout.bytesPerChannel
    let perChannel = layout.bytesPerChannelInGroup
    group = .allocate(capacity: layout.groupBytes)
    planar = .allocate(capacity: 2 * perChannel)
    frames = .allocate(capacity: 2 * perChannel)
    stash = FrameStash(capacityFrames: perChannel)
    stage = .audio
  }

  /// DoP or native DSD as asked, at a frame rate the output takes; PCM otherwise.
  static func outputFormat(for layout: DSDStreamLayout, requested: DSDOutput) -> AudioFormat {
    let pcm = AudioFormat(
      sampleRate: pcmRate(for: layout, maximumRate: requested.maximumPCMRate), channels: layout.channels,
      bitsPerSample: 24)
    switch requested.delivery {
    case .pcm:
      return pcm
    case .dop:
      let rate = layout.sampleRate / 16
      guard rate <= requested.maximumRate else { return pcm }
      return AudioFormat(sampleRate: rate, channels: layout.channels, bitsPerSample: 24, encoding: .dop)
    case .native(let native):
      let rate = native.frameRate(dsdRate: layout.sampleRate)
      guard rate <= requested.maximumRate else { return pcm }
      return AudioFormat(
        sampleRate: rate, channels: layout.channels, bitsPerSample: 8 * native.bytesPerSample, encoding: .dsd(native))
    }
  }

  /// PCM at 352.8 kHz (384 kHz) from any DSD rate; at half that for an output that does not take
  /// it (the filter still keeps the fold 79 dB down there); lower is left to the output's `-R`.
  static func pcmRate(for layout: DSDStreamLayout, maximumRate: Int) -> Int {
    let full = layout.dsd64Rate / 8
    return full > maximumRate && full / 2 <= maximumRate ? full / 2 : full
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
    if case .dff = layout.container {
      switch trailingChunk(in: group, count: perChannel * layout.channels, channels: layout.channels, input: input) {
      case .needsMore: return .needsInput
      case .found(let start):
        perChannel = start / layout.channels
        bytesPerChannelLeft = perChannel
        if perChannel == 0 {
          groupFill = 0
          stage = .trailing  // the chunk begins the group: the rest of the stream is dropped
          return .decoded
        }
      case .none: break
      }
    }
    groupFill = 0
    guard perChannel > 0 else {
      stage = .ended  // the stream ended: what was left is less than a frame
      return .finished
    }
    bytesPerChannelLeft -= perChannel
    // The last group only when nothing follows: a group already whole reads nothing (n == 0) even
    // with the rest of the stream buffered behind it.
    if input.isExhausted { bytesPerChannelLeft = 0 }
    separate(layout, bytesPerChannel: perChannel)
    emit(bytesPerChannel: perChannel, to: output)
    return .decoded
  }

  /// A DSDIFF chunk after the audio, in the group just read (see `DSDIFFTrailingChunk`); the
  /// ring is only peeked, so a group looked at again after `needsMore` is looked at whole.
  private func trailingChunk(
    in group: UnsafeMutablePointer<UInt8>, count: Int, channels: Int, input: StreamInput
  ) -> DSDIFFTrailingChunk.Search {
    let atEnd = input.hasEnded  // sampled before the peek: a short peek after it is all there is
    var following: (UInt64, UInt64) = (0, 0)
    return withUnsafeMutableBytes(of: &following) { raw in
      let seen = input.ring.peek(
        into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<DSDIFFTrailingChunk.headerPrefix]))
      let next = UnsafeBufferPointer(start: raw.baseAddress!.assumingMemoryBound(to: UInt8.self), count: seen)
      return DSDIFFTrailingChunk.search(
        UnsafeBufferPointer(start: group, count: count), channels: channels, following: next, atEnd: atEnd)
    }
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
          Self.bitReversed.withUnsafeBufferPointer { table in
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
    switch format.encoding {
    case .dop:
      frameCount = (count + 1) / 2
      var second = secondMarkerNext
      for f in 0..<frameCount {
        let i = 2 * f
        let hasSecondByte = i + 1 < count
        let l1 = hasSecondByte ? left[i + 1] : DoP.idleByte
        let r1 = hasSecondByte ? right[i + 1] : DoP.idleByte
        frames[2 * f] = DoP.sample(secondMarker: second, left[i], l1)
        frames[2 * f + 1] = DoP.sample(secondMarker: second, right[i], r1)
        second.toggle()
      }
      secondMarkerNext = second
    case .dsd(let native):
      let bytes = native.bytesPerSample
      frameCount = (count + bytes - 1) / bytes
      for f in 0..<frameCount {
        frames[2 * f] = Self.nativeSample(left, from: f * bytes, of: count, bytes: bytes)
        frames[2 * f + 1] = Self.nativeSample(right, from: f * bytes, of: count, bytes: bytes)
      }
    case .pcm:
      guard let converter, filters != nil else { return }
      // In place: a copy of a channel's history would be copied again on its first write.
      frameCount = converter.convert(left, count: count, channel: &filters!.left, into: frames, stride: 2)
      converter.convert(right, count: count, channel: &filters!.right, into: frames + 1, stride: 2)
    }
    stash.emit(count: frameCount, format: format, to: output) { destination, first, n in
      destination.update(from: frames + 2 * first, count: 2 * n)
    }
  }

  /// `bytes` DSD bytes of one channel from `start`, the first on top, left-justified; bytes past
  /// `count` are DSD's idle pattern.
  @inline(__always)
  private static func nativeSample(_ channel: UnsafePointer<UInt8>, from start: Int, of count: Int, bytes: Int) -> Int32
  {
    var word: UInt32 = 0
    for index in 0..<bytes {
      let byte = start + index < count ? channel[start + index] : DoP.idleByte
      word |= UInt32(byte) << (24 - 8 * index)
    }
    return Int32(bitPattern: word)
  }
}
