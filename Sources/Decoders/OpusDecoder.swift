import AudioBuffers
import COpus

/// Ogg Opus through libopusfile over read-only callbacks that pull from the stream ring.
///
/// Output: 48 kHz, 16-bit (`op_read` with dithering disabled, which equals
/// `opusdec --no-dither`); opusfile applies the pre-skip, the end trimming and the header gain.
/// More than two channels: the first two decoded channels are kept (in Vorbis order, so for 3 or
/// more channels that is front left and centre — no downmix).
///
/// **Never blocking.** The read callback returns what the ring holds; with the ring empty it
/// returns 0 only when the stream has ended (opusfile's end of file) and otherwise -1, a read
/// error. opusfile fails a page fetch on a read error before it changes any state, so `op_read`
/// returns OP_EREAD and can simply be called again later: that is reported as `.needsInput`.
/// To keep that rare, `op_read` is only called with at least 16 KiB buffered (or the stream ended,
/// or the ring full). One place is not safe that way: a chained stream's next link, whose headers
/// span several pages — the threshold makes a starved read there unlikely, not impossible.
///
/// Opening reads the headers (and the first audio page) synchronously and cannot resume after a
/// starved read. So the bytes it consumes are recorded in a head buffer (1 MiB, allocated with
/// the decoder, released once open) and a starved attempt is retried later with the head as
/// opusfile's initial data. An attempt is made whenever 8 KiB more are buffered (or the stream
/// ended, or the ring is full); a failed attempt costs a re-parse of the head, nothing else.
public final class OpusDecoder: AudioDecoder {
  public let minimumFreeFrames = 5760
  public private(set) var format: AudioFormat?

  /// 120 ms at 48 kHz: the longest Opus packet.
  static let chunkFrames = 5760
  /// Channels the decode buffer is sized for; opusfile returns fewer samples for more.
  static let bufferChannels = 8
  static let headCapacity = 1 << 20
  static let openThreshold = 8 << 10
  static let readThreshold = 16 << 10
  static let maxConsecutiveHoles = 64

  private enum Stage { case sniff, opening, decoding, ended }

  private var stage = Stage.sniff
  private var file: OpaquePointer?
  private let pcm: UnsafeMutablePointer<Int16>
  private let stash = FrameStash(capacityFrames: OpusDecoder.chunkFrames)

  /// Bytes consumed while opening, replayed on the next attempt.
  private var head: UnsafeMutableRawPointer?
  private var headCount = 0
  private var headOverflowed = false

  private var activeInput: StreamInput?
  private var starved = false
  private var holes = 0

  public init() {
    pcm = .allocate(capacity: Self.chunkFrames * Self.bufferChannels)
    // Not touched until used: the pages are only faulted in as far as the headers reach.
    head = .allocate(byteCount: Self.headCapacity, alignment: 16)
  }

  deinit {
    if let file { op_free(file) }
    head?.deallocate()
    pcm.deallocate()
  }

  public func decode(from input: StreamInput, to output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    guard stash.drain(to: output) else { return .decoded }
    switch stage {
    case .ended:
      return .finished
    case .sniff:
      return try sniff(input)
    case .opening:
      return try open(input)
    case .decoding:
      return try read(input, output)
    }
  }

  private func sniff(_ input: StreamInput) throws(DecodeError) -> DecodeProgress {
    guard let head else { return .decoded }
    while headCount < 4 {
      let ended = input.hasEnded
      let n = input.read(into: UnsafeMutableRawBufferPointer(start: head + headCount, count: 4 - headCount))
      if n == 0 {
        if ended { throw .unsupportedStream("stream too short for Ogg Opus") }
        return .needsInput
      }
      headCount += n
    }
    let bytes = head.assumingMemoryBound(to: UInt8.self)
    guard bytes[0] == 0x4F, bytes[1] == 0x67, bytes[2] == 0x67, bytes[3] == 0x53 else {  // "OggS"
      throw .unsupportedStream("not an Ogg stream (starts with \(hex(bytes, 4)))")
    }
    stage = .opening
    return .decoded
  }

  private func open(_ input: StreamInput) throws(DecodeError) -> DecodeProgress {
    let ring = input.ring
    guard ring.fill >= Self.openThreshold || input.hasEnded || ring.space == 0 else { return .needsInput }
    var callbacks = OpusFileCallbacks(
      read: { source, buffer, count in
        Unmanaged<OpusDecoder>.fromOpaque(source!).takeUnretainedValue().read(into: buffer!, count: Int(count))
      },
      seek: nil, tell: nil, close: nil)
    var error: Int32 = 0
    activeInput = input
    starved = false
    // The head so far goes in as initial data (opusfile copies it before reading); the callback
    // keeps appending what it reads, for the next attempt.
    let initialCount = headCount
    let opened = op_open_callbacks(
      Unmanaged.passUnretained(self).toOpaque(), &callbacks,
      head?.assumingMemoryBound(to: UInt8.self), initialCount, &error)
    activeInput = nil
    if let opened {
      file = opened
      op_set_dither_enabled(opened, 0)
      head?.deallocate()
      head = nil
      headCount = 0
      let header = op_head(opened, -1)!.pointee
      format = AudioFormat(sampleRate: 48000, channels: Int(header.channel_count), bitsPerSample: 16)
      stage = .decoding
      return .decoded
    }
    // A starved read fails the attempt with OP_EREAD or, inside the comment header, OP_EBADHEADER:
    // whatever the code, an attempt that ran out of input is retried once more has arrived.
    if starved {
      if headOverflowed { throw .unsupportedStream("Ogg Opus headers larger than \(Self.headCapacity) bytes") }
      return .needsInput
    }
    switch error {
    case OP_ENOTFORMAT: throw .unsupportedStream("no Opus stream in the Ogg data")
    case OP_EVERSION, OP_EIMPL: throw .unsupportedStream("unsupported Opus stream (opusfile error \(error))")
    case OP_EFAULT: throw .library("opusfile: out of memory")
    default: throw .corrupt("opusfile could not open the stream (error \(error))")
    }
  }

  private func read(_ input: StreamInput, _ output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    guard let file else { return .finished }
    let ring = input.ring
    guard ring.fill >= Self.readThreshold || input.hasEnded || ring.space == 0 else { return .needsInput }
    activeInput = input
    starved = false
    var link: Int32 = 0
    let n = op_read(file, pcm, Int32(Self.chunkFrames * Self.bufferChannels), &link)
    activeInput = nil
    if n > 0 {
      holes = 0
      emit(frames: Int(n), channels: Int(op_head(file, link)!.pointee.channel_count), to: output)
      return .decoded
    }
    if n == 0 {
      stage = .ended
      return stash.isEmpty ? .finished : .decoded
    }
    if n == OP_EREAD && starved { return .needsInput }
    if n == OP_HOLE {
      holes += 1
      if holes < Self.maxConsecutiveHoles { return .decoded }
      throw .corrupt("Ogg Opus: \(holes) holes in a row")
    }
    throw .corrupt("opusfile: op_read failed (error \(n))")
  }

  private func emit(frames: Int, channels: Int, to output: FrameOutput) {
    let streamFormat = AudioFormat(sampleRate: 48000, channels: channels, bitsPerSample: 16)
    format = streamFormat
    let pcm = self.pcm
    let right = channels > 1 ? 1 : 0
    stash.emit(count: frames, format: streamFormat, to: output) { destination, first, n in
      var source = pcm + first * channels
      for i in 0..<n {
        destination[2 * i] = Int32(source[0]) &<< 16
        destination[2 * i + 1] = Int32(source[right]) &<< 16
        source += channels
      }
    }
  }

  /// opusfile's read: bytes, 0 at the end of the stream, -1 when nothing has arrived yet.
  private func read(into buffer: UnsafeMutablePointer<UInt8>, count: Int) -> Int32 {
    guard let input = activeInput, count > 0 else { return -1 }
    let ended = input.hasEnded  // sampled before the read: 0 bytes after it means exhausted
    let n = input.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: count))
    if n == 0 {
      if ended { return 0 }
      starved = true
      return -1
    }
    if stage == .opening, let head {
      if !headOverflowed && headCount + n <= Self.headCapacity {
        (head + headCount).copyMemory(from: buffer, byteCount: n)
        headCount += n
      } else {
        headOverflowed = true
      }
    }
    return Int32(n)
  }
}
