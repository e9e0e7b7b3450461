import AudioBuffers
import COpus

/// Ogg Opus through libopusfile over read-only callbacks that pull from the stream ring.
///
/// Output: 48 kHz, 16-bit (`op_read` with dithering disabled, which equals
/// `opusdec --no-dither`); opusfile applies the pre-skip, the end trimming and the header gain.
/// More than two channels: the first two decoded channels are kept (in Vorbis order, so for 3 or
/// more channels that is front left and centre — no downmix).
///
/// **Never blocking** (`LibraryInput`). The read callback returns what the ring holds; with the
/// ring empty it returns 0 only when the stream has ended (opusfile's end of file) and otherwise
/// -1, a read error. opusfile fails a page fetch on a read error before it changes any state, so `op_read`
/// returns OP_EREAD and can simply be called again later: that is reported as `.needsInput`.
/// To keep that rare, `op_read` is only called with at least 16 KiB buffered (or the stream ended,
/// or the ring full), and never while a chained stream's next headers are within its reach but not
/// all there (`OggPageScanner`): a read starved inside them could not resume.
///
/// Opening reads the headers (and the first audio page) synchronously and cannot resume after a
/// starved read: a starved attempt is retried with the bytes read so far replayed as opusfile's
/// initial data. An attempt is made whenever 8 KiB more are buffered (or the stream ended, or the
/// ring is full); a failed attempt costs a re-parse of the head, nothing else.
public final class OpusDecoder: AudioDecoder {
  public let minimumFreeFrames = 5760
  public private(set) var format: AudioFormat?

  /// 120 ms at 48 kHz: the longest Opus packet.
  static let chunkFrames = 5760
  /// Channels the decode buffer is sized for; opusfile returns fewer samples for more.
  static let bufferChannels = 8
  static let openThreshold = 8 << 10
  static let readThreshold = 16 << 10
  static let maxConsecutiveHoles = 64

  private enum Stage { case sniff, opening, decoding, ended }

  private var stage = Stage.sniff
  private var file: OpaquePointer?
  private let pcm: UnsafeMutablePointer<Int16>
  private let stash = FrameStash(capacityFrames: OpusDecoder.chunkFrames)
  private let source = LibraryInput()
  private var holes = 0

  public init() {
    pcm = .allocate(capacity: Self.chunkFrames * Self.bufferChannels)
  }

  deinit {
    if let file { op_free(file) }
    pcm.deallocate()
  }

  public func decode(from input: StreamInput, to output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    guard stash.drain(to: output) else { return .decoded }
    switch stage {
    case .ended:
      return .finished
    case .sniff:
      guard try source.sniffOgg(input, codec: "Ogg Opus") else { return .needsInput }
      stage = .opening
      return .decoded
    case .opening:
      return try open(input)
    case .decoding:
      return try read(input, output)
    }
  }

  private func open(_ input: StreamInput) throws(DecodeError) -> DecodeProgress {
    let ring = input.ring
    guard ring.fill >= Self.openThreshold || input.hasEnded || ring.space == 0 else { return .needsInput }
    var callbacks = OpusFileCallbacks(
      read: { source, buffer, count in
        Int32(Unmanaged<LibraryInput>.fromOpaque(source!).takeUnretainedValue().read(into: buffer!, count: Int(count)))
      },
      seek: nil, tell: nil, close: nil)
    var error: Int32 = 0
    // The head so far goes in as initial data (opusfile copies it before reading); the callback
    // keeps appending what it reads, for the next attempt.
    let opened = source.reading(input) {
      op_open_callbacks(
        Unmanaged.passUnretained(source).toOpaque(), &callbacks, source.recorded, source.headCount, &error)
    }
    if let opened {
      file = opened
      op_set_dither_enabled(opened, 0)
      source.opened()
      let header = op_head(opened, -1)!.pointee
      format = AudioFormat(sampleRate: 48000, channels: Int(header.channel_count), bitsPerSample: 16)
      stage = .decoding
      return .decoded
    }
    // A starved read fails the attempt with OP_EREAD or, inside the comment header, OP_EBADHEADER:
    // whatever the code, an attempt that ran out of input is retried once more has arrived.
    if source.starved {
      if source.headOverflowed {
        throw .unsupportedStream("Ogg Opus headers larger than \(LibraryInput.headCapacity) bytes")
      }
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
    guard source.mayRead(input, threshold: Self.readThreshold) else { return .needsInput }
    var link: Int32 = 0
    let n = source.reading(input) { op_read(file, pcm, Int32(Self.chunkFrames * Self.bufferChannels), &link) }
    if n > 0 {
      holes = 0
      let channels = Int(op_head(file, link)!.pointee.channel_count)
      format = AudioFormat(sampleRate: 48000, channels: channels, bitsPerSample: 16)
      stash.emit(interleaved: pcm, frames: Int(n), channels: channels, format: format!, to: output)
      return .decoded
    }
    if n == 0 {
      stage = .ended
      return stash.isEmpty ? .finished : .decoded
    }
    if n == OP_EREAD && source.starved { return .needsInput }
    if n == OP_HOLE {
      holes += 1
      if holes < Self.maxConsecutiveHoles { return .decoded }
      throw .corrupt("Ogg Opus: \(holes) holes in a row")
    }
    throw .corrupt("opusfile: op_read failed (error \(n))")
  }
}
