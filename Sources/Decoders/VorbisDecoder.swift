import AudioBuffers
import CVorbis

#if canImport(Glibc)
  import Glibc
#endif

/// Ogg Vorbis through libvorbisfile over read-only callbacks that pull from the stream ring.
///
/// Output: the stream's rate, 16-bit (`ov_read`, signed little-endian, as `oggdec` writes it);
/// vorbisfile trims the first and last block by the granule positions, so an album encoded
/// gaplessly plays gaplessly. Chained streams (a radio station's next song) change format where
/// their link begins. More than two channels: the first two (front left and centre in Vorbis
/// order for 3 or more — no downmix), as for Opus.
///
/// **Never blocking** (`LibraryInput`): with the ring empty before the end of the stream the read
/// callback fails (0 bytes with errno set, vorbisfile's read error); among audio pages vorbisfile
/// then gives up the page fetch before changing any state (`ov_read` returns 0, or OV_EREAD) and the
/// call is made again once more input is there. `ov_read` is only called with 16 KiB buffered (or
/// the stream ended, or the ring full), and never while a chained stream's next headers are within
/// its reach but not all there (`OggPageScanner`): a read starved inside them could not resume.
/// Opening is retried with the bytes read so far replayed.
public final class VorbisDecoder: AudioDecoder {
  public let minimumFreeFrames = 4096

  public private(set) var format: AudioFormat?

  /// Samples (all channels) one `ov_read` may return: a packet is at most 4096 frames a channel
  /// (8192-sample blocks), and `ov_read` returns one at most.
  static let bufferSamples = 8192
  static let openThreshold = 8 << 10
  static let readThreshold = 16 << 10
  static let maxConsecutiveHoles = 64

  private enum Stage { case sniff, opening, decoding, ended }

  private var stage = Stage.sniff
  private let file: UnsafeMutablePointer<OggVorbis_File>
  private var isOpen = false
  private let pcm: UnsafeMutablePointer<Int16>
  private let stash = FrameStash(capacityFrames: VorbisDecoder.bufferSamples)
  private let source = LibraryInput()
  private var holes = 0

  public init() {
    file = .allocate(capacity: 1)
    pcm = .allocate(capacity: Self.bufferSamples)
  }

  deinit {
    if isOpen { ov_clear(file) }
    file.deallocate()
    pcm.deallocate()
  }

  public func decode(from input: StreamInput, to output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    guard stash.drain(to: output) else { return .decoded }
    switch stage {
    case .ended:
      return .finished
    case .sniff:
      guard try source.sniffOgg(input, codec: "Ogg Vorbis") else { return .needsInput }
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
    let callbacks = ov_callbacks(
      read_func: { buffer, size, count, source in
        let n = Unmanaged<LibraryInput>.fromOpaque(source!).takeUnretainedValue()
          .read(into: buffer!, count: size * count)
        guard n >= 0 else {
          errno = EAGAIN  // vorbisfile's read error: 0 bytes with errno set
          return 0
        }
        return n / max(size, 1)
      },
      seek_func: nil, close_func: nil, tell_func: nil)
    // The head so far goes in as initial data (vorbisfile copies it before reading); the callback
    // keeps appending what it reads, for the next attempt.
    let result = source.reading(input) {
      ov_open_callbacks(
        Unmanaged.passUnretained(source).toOpaque(), file,
        UnsafeMutablePointer(
          mutating: source.recorded.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }),
        source.headCount, callbacks)
    }
    if result == 0 {
      isOpen = true
      source.opened()
      stage = .decoding
      if let info = ov_info(file, -1)?.pointee {
        format = AudioFormat(sampleRate: info.rate, channels: Int(info.channels), bitsPerSample: 16)
      }
      return .decoded
    }
    if source.starved {
      if source.headOverflowed {
        throw .unsupportedStream("Ogg Vorbis headers larger than \(LibraryInput.headCapacity) bytes")
      }
      return .needsInput
    }
    switch result {
    case OV_ENOTVORBIS: throw .unsupportedStream("no Vorbis stream in the Ogg data")
    case OV_EVERSION: throw .unsupportedStream("unsupported Vorbis version")
    case OV_EFAULT: throw .library("vorbisfile: internal fault")
    default: throw .corrupt("vorbisfile could not open the stream (error \(result))")
    }
  }

  private func read(_ input: StreamInput, _ output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    guard source.mayRead(input, threshold: Self.readThreshold) else { return .needsInput }
    var link: Int32 = 0
    let bytes = source.reading(input) {
      pcm.withMemoryRebound(to: CChar.self, capacity: Self.bufferSamples * 2) {
        ov_read(file, $0, Int32(Self.bufferSamples * 2), 0, 2, 1, &link)  // little-endian, 16-bit, signed
      }
    }
    if bytes > 0 {
      holes = 0
      guard let info = ov_info(file, link)?.pointee else { throw .corrupt("Ogg Vorbis: no header for link \(link)") }
      let channels = Int(info.channels)
      format = AudioFormat(sampleRate: info.rate, channels: channels, bitsPerSample: 16)
      stash.emit(interleaved: pcm, frames: bytes / 2 / channels, channels: channels, format: format!, to: output)
      return .decoded
    }
    if bytes == 0 {
      if source.starved { return .needsInput }
      stage = .ended
      return stash.isEmpty ? .finished : .decoded
    }
    if bytes == Int(OV_EREAD) && source.starved { return .needsInput }
    if bytes == OV_HOLE {
      holes += 1
      if holes < Self.maxConsecutiveHoles { return .decoded }
      throw .corrupt("Ogg Vorbis: \(holes) holes in a row")
    }
    throw .corrupt("vorbisfile: ov_read failed (error \(bytes))")
  }
}
