import AudioBuffers
import CMPG123

/// MPEG audio (layers I–III) through libmpg123's feed API.
///
/// Output is forced to signed 16-bit at the stream's native rate and channel count, which is what
/// `mpg123 -s` writes; MPG123_GAPLESS trims the LAME/Xing encoder delay and padding. Bytes are
/// fed from the stream ring only when libmpg123 asks for more (MPG123_NEED_MORE), so it never
/// holds more than it needs. mpg123 copies what it is fed into its own buffer pool.
public final class MP3Decoder: AudioDecoder {
  public let minimumFreeFrames = 1152
  public private(set) var format: AudioFormat?

  /// Stereo frames decoded per call at most (four MPEG-1 layer III frames; twice that in mono).
  static let chunkFrames = 4608
  static let feedBytes = 16 << 10
  /// Bytes fed without a single decoded frame before the body is declared not MPEG audio. Large,
  /// because an ID3v2 tag with pictures may precede the audio.
  static let maxBytesWithoutAudio = 16 << 20

  private let handle: OpaquePointer
  private let pcm: UnsafeMutablePointer<Int16>
  private let feed: UnsafeMutableRawBufferPointer
  /// Room for a whole read in mono (twice the frames of a stereo read).
  private let stash = FrameStash(capacityFrames: 2 * MP3Decoder.chunkFrames)
  private var channels = 2
  private var producedAudio = false
  private var bytesWithoutAudio = 0
  private var finished = false

  public init() throws(DecodeError) {
    _ = mpg123_init()  // a no-op since libmpg123 1.27; required by older versions
    var error: Int32 = 0
    guard let handle = mpg123_new(nil, &error) else {
      throw .library("mpg123_new: " + String(cString: mpg123_plain_strerror(error)))
    }
    self.handle = handle
    pcm = .allocate(capacity: Self.chunkFrames * 2)
    feed = .allocate(byteCount: Self.feedBytes, alignment: 16)

    let flags = Int(MPG123_GAPLESS.rawValue | MPG123_QUIET.rawValue)
    guard mpg123_param2(handle, Int32(MPG123_ADD_FLAGS.rawValue), flags, 0) == MPG123_OK.rawValue,
      mpg123_format_none(handle) == MPG123_OK.rawValue
    else { throw .library("mpg123 setup: " + String(cString: mpg123_strerror(handle))) }
    // Every native MPEG rate, mono or stereo, signed 16-bit only: no resampling, no conversion.
    var rates: UnsafePointer<Int>?
    var rateCount = 0
    mpg123_rates(&rates, &rateCount)
    if let rates {
      for i in 0..<rateCount {
        _ = mpg123_format(
          handle, rates[i], Int32(MPG123_MONO.rawValue | MPG123_STEREO.rawValue), Int32(MPG123_ENC_SIGNED_16.rawValue))
      }
    }
    guard mpg123_open_feed(handle) == MPG123_OK.rawValue else {
      throw .library("mpg123_open_feed: " + String(cString: mpg123_strerror(handle)))
    }
  }

  deinit {
    mpg123_delete(handle)
    pcm.deallocate()
    feed.deallocate()
  }

  public func decode(from input: StreamInput, to output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    guard stash.drain(to: output) else { return .decoded }
    if finished { return .finished }
    // Bounded: each pass either decodes, feeds, or returns.
    for _ in 0..<64 {
      var done = 0
      let rc = mpg123_read(handle, pcm, Self.chunkFrames * 2 * MemoryLayout<Int16>.size, &done)
      if done > 0 { emit(bytes: done, to: output) }
      switch rc {
      case MPG123_OK.rawValue:
        if done > 0 { return .decoded }
      case MPG123_NEW_FORMAT.rawValue:
        try readFormat()
        if done > 0 { return .decoded }
      case MPG123_NEED_MORE.rawValue:
        if done > 0 { return .decoded }
        let ended = input.hasEnded  // sampled before the read: 0 bytes after it means exhausted
        let n = input.read(into: feed)
        if n == 0 {
          guard ended else { return .needsInput }
          guard producedAudio else { throw .unsupportedStream("no MPEG audio frame in the stream") }
          finished = true
          return .finished
        }
        guard mpg123_feed(handle, feed.baseAddress!.assumingMemoryBound(to: UInt8.self), n) == MPG123_OK.rawValue
        else { throw .library("mpg123_feed: " + String(cString: mpg123_strerror(handle))) }
        if !producedAudio {
          bytesWithoutAudio += n
          if bytesWithoutAudio > Self.maxBytesWithoutAudio {
            throw .unsupportedStream("no MPEG audio frame in the first \(bytesWithoutAudio) bytes")
          }
        }
      case MPG123_DONE.rawValue:
        finished = true
        return stash.isEmpty ? .finished : .decoded
      default:
        let why =
          rc == MPG123_ERR.rawValue
          ? String(cString: mpg123_strerror(handle)) : String(cString: mpg123_plain_strerror(rc))
        throw producedAudio ? .corrupt("mpg123: " + why) : .unsupportedStream("mpg123: " + why)
      }
    }
    return .decoded
  }

  private func readFormat() throws(DecodeError) {
    var rate = 0
    var channelCount: Int32 = 0
    var encoding: Int32 = 0
    guard mpg123_getformat(handle, &rate, &channelCount, &encoding) == MPG123_OK.rawValue else {
      throw .library("mpg123_getformat: " + String(cString: mpg123_strerror(handle)))
    }
    guard encoding == Int32(MPG123_ENC_SIGNED_16.rawValue), channelCount == 1 || channelCount == 2 else {
      throw .library("mpg123 chose an unexpected output format (encoding \(encoding), \(channelCount) channels)")
    }
    channels = Int(channelCount)
    format = AudioFormat(sampleRate: rate, channels: channels, bitsPerSample: 16)
  }

  private func emit(bytes: Int, to output: FrameOutput) {
    guard let format else { return }
    producedAudio = true
    let frames = bytes / (2 * channels)
    let pcm = self.pcm
    if channels == 1 {
      stash.emit(count: frames, format: format, to: output) { destination, first, n in
        for i in 0..<n {
          let sample = Int32(pcm[first + i]) &<< 16
          destination[2 * i] = sample
          destination[2 * i + 1] = sample
        }
      }
    } else {
      stash.emit(count: frames, format: format, to: output) { destination, first, n in
        let source = pcm + 2 * first
        for i in 0..<(2 * n) { destination[i] = Int32(source[i]) &<< 16 }
      }
    }
  }
}
