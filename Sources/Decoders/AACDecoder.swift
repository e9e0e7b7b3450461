import AudioBuffers
import CFAAD

/// AAC (LC, HE-AAC with SBR and PS) through libfaad: in MP4 (`.m4a` as LMS sends it, through
/// `MP4Demuxer`) or as an ADTS stream (`.aac` files, radio).
///
/// Output: 24-bit (libfaad's `FAAD_FMT_24BIT`, as squeezelite asks for and `faad -b 2` writes), the rate libfaad
/// reports (twice the core rate with SBR); more than two channels are downmixed by libfaad.
/// libfaad returns nothing for the first frame it decodes (the MDCT overlap's warm-up), so its
/// output starts one frame later than the stream's samples: the MP4 trim (`MP4Trim`, from
/// `iTunSMPB` or the edit list) is applied on that timeline, counting the silent first frame.
public final class AACDecoder: AudioDecoder {
  public let minimumFreeFrames = 2048
  public private(set) var format: AudioFormat?

  /// The most one frame yields: 2048 frames (SBR) of 8 channels, 24-bit in 32.
  static let outputSamples = 2048 * 8
  /// Packets decoded before a start mid-track, only for the state they leave.
  static let seekPreroll = 2
  /// ADTS: libfaad wants at least 768 bytes a channel in front of it (FAAD_MIN_STREAMSIZE).
  static let adtsWindow = 768 * 8 * 2

  private enum Stage { case sniff, mp4, adtsOpen, adts, ended }

  private var stage = Stage.sniff
  private let handle: NeAACDecHandle
  private let pcm = UnsafeMutablePointer<Int32>.allocate(capacity: AACDecoder.outputSamples)
  private let stash = FrameStash(capacityFrames: 2048)
  private let demuxer = MP4Demuxer()
  /// ADTS bytes not yet decoded, at the front of a linear window (libfaad needs a whole frame).
  private let window = UnsafeMutableRawBufferPointer.allocate(byteCount: AACDecoder.adtsWindow, alignment: 16)
  private var windowCount = 0
  private var trim = OutputTrim()
  private var errors = 0
  /// ADTS bytes passed over since the last decoded frame.
  private var skippedWithoutFrame = 0
  static let maxSkippedBytes = 1 << 20
  static let attemptsPerCall = 64
  private var damaged = StreamDamage()

  public var damage: StreamDamage {
    guard let truncation = demuxer.truncation else { return damaged }
    return StreamDamage(stretches: damaged.stretches + 1, last: truncation)
  }

  public init() throws(DecodeError) {
    guard let handle = NeAACDecOpen() else { throw .library("libfaad: NeAACDecOpen failed") }
    self.handle = handle
    let config = NeAACDecGetCurrentConfiguration(handle)!
    config.pointee.outputFormat = UInt8(FAAD_FMT_24BIT)
    config.pointee.downMatrix = 1
    _ = NeAACDecSetConfiguration(handle, config)
  }

  deinit {
    NeAACDecClose(handle)
    pcm.deallocate()
    window.deallocate()
  }

  public func decode(from input: StreamInput, to output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    guard stash.drain(to: output) else { return .decoded }
    switch stage {
    case .ended:
      return .finished
    case .sniff:
      return try sniff(input)
    case .mp4:
      return try nextSample(input, output)
    case .adtsOpen:
      return try openADTS(input)
    case .adts:
      return try nextADTSFrame(input, output)
    }
  }

  /// ADTS (the 12-bit sync word, maybe behind an ID3v2 tag), else MP4 (the demuxer checks for a box).
  private func sniff(_ input: StreamInput) throws(DecodeError) -> DecodeProgress {
    let ended = input.hasEnded
    guard input.ring.fill >= 8 else {  // shorter than any AAC stream
      if ended { throw .unsupportedStream("stream too short for AAC") }
      return .needsInput
    }
    var first = [UInt8](repeating: 0, count: 3)
    _ = first.withUnsafeMutableBytes { input.ring.peek(into: $0) }
    if first[0] == 0xFF && first[1] & 0xF6 == 0xF0 || (first[0] == 0x49 && first[1] == 0x44 && first[2] == 0x33) {
      stage = .adtsOpen
    } else {
      stage = .mp4  // the demuxer rejects anything that does not begin with a box
    }
    return .decoded
  }

  // MARK: MP4

  private func nextSample(_ input: StreamInput, _ output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    switch try demuxer.next(from: input) {
    case .needsInput:
      return .needsInput
    case .end:
      stage = .ended
      return stash.isEmpty ? .finished : .decoded
    case .track(let track):
      guard case .aac(var config) = track.codec else {
        throw .unsupportedStream("MP4 track is Apple Lossless, not AAC")
      }
      var rate: UInt = 0
      var channels: UInt8 = 0
      let result = NeAACDecInit2(handle, &config, UInt(config.count), &rate, &channels)
      guard result >= 0 else {
        throw .unsupportedStream("libfaad cannot decode this AudioSpecificConfig (\(config.count) bytes)")
      }
      trim = OutputTrim(mp4: track.trim, timescale: track.mediaTimescale, outputRate: Int(rate))
      if output.framesToDrop > 0 && !output.dropContinuesTrack {
        // A start mid-track: decoding begins `preroll` packets early, whose output only primes
        // the overlap of the transform (and libfaad yields nothing for the first one). Not for a
        // source switch (a cached copy continuing the track): libfaad's noise generator (PNS) has
        // a state that only a decode from the start reproduces, and the continuation must equal
        // what the first source would have played, so it decodes from the start and drops.
        let seek = trim.seek(in: track.samples, dropping: output.framesToDrop, preroll: Self.seekPreroll)
        try demuxer.skipSamples(seek.firstSample)
        output.passedOver(frames: seek.passedOver)
      }
      format = AudioFormat(sampleRate: Int(rate), channels: Int(channels), bitsPerSample: 24)
      return .decoded
    case .sample(let bytes):
      decodeFrame(UnsafeMutableRawPointer(mutating: bytes.baseAddress!), bytes.count, output)
      return .decoded
    }
  }

  /// Decodes one frame and hands over the part of it the trim keeps; returns the bytes libfaad
  /// consumed (0 on an error).
  @discardableResult
  private func decodeFrame(_ bytes: UnsafeMutableRawPointer, _ count: Int, _ output: FrameOutput) -> Int {
    var info = NeAACDecFrameInfo()
    var destination: UnsafeMutableRawPointer? = UnsafeMutableRawPointer(pcm)
    _ = NeAACDecDecode2(
      handle, &info, bytes.assumingMemoryBound(to: UInt8.self), UInt(count), &destination,
      UInt(Self.outputSamples * 4))
    if info.error != 0 {
      // A damaged frame is skipped (what it should have played is lost); libfaad resets itself.
      errors += 1
      if errors == 1 {
        damaged.stretches += 1
        damaged.last = String(cString: NeAACDecGetErrorMessage(info.error))
      }
      return Int(info.bytesconsumed)
    }
    errors = 0
    skippedWithoutFrame = 0
    let channels = Int(info.channels)
    guard channels > 0 else { return Int(info.bytesconsumed) }
    let frames = Int(info.samples) / channels
    let current = AudioFormat(sampleRate: Int(info.samplerate), channels: channels, bitsPerSample: 24)
    if format != current { format = current }
    let kept = trim.keep(frames: frames)
    if kept.count > 0 {
      let first = pcm + kept.first * channels
      let right = channels > 1 ? 1 : 0
      stash.emit(count: kept.count, format: current, to: output) { destination, start, n in
        var frame = first + start * channels
        for i in 0..<n {
          destination[2 * i] = frame[0] &<< 8  // 24-bit samples, left-justified
          destination[2 * i + 1] = frame[right] &<< 8
          frame += channels
        }
      }
    }
    return Int(info.bytesconsumed)
  }

  // MARK: ADTS

  /// Fills the window from the ring; true when it holds enough for a frame (or all there is).
  private func refill(_ input: StreamInput) -> Bool {
    let ended = input.hasEnded
    windowCount += input.read(into: UnsafeMutableRawBufferPointer(rebasing: window[windowCount...]))
    return windowCount == window.count || (ended && input.ring.fill == 0)
  }

  private func consume(_ count: Int) {
    let n = min(count, windowCount)
    if n > 0 && n < windowCount {
      window.baseAddress!.copyMemory(from: window.baseAddress! + n, byteCount: windowCount - n)  // memmove
    }
    windowCount -= n
  }

  private func openADTS(_ input: StreamInput) throws(DecodeError) -> DecodeProgress {
    guard refill(input) else { return .needsInput }
    var rate: UInt = 0
    var channels: UInt8 = 0
    let skipped = NeAACDecInit(
      handle, window.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt(windowCount), &rate, &channels)
    guard skipped >= 0 else { throw .unsupportedStream("libfaad found no AAC (ADTS) stream") }
    consume(Int(skipped))
    format = AudioFormat(sampleRate: Int(rate), channels: Int(channels), bitsPerSample: 24)
    stage = .adts
    return .decoded
  }

  private func nextADTSFrame(_ input: StreamInput, _ output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    // Damaged stretches are passed over within one call, a few frames' worth at a time.
    let written = output.ring.totalWritten
    for _ in 0..<Self.attemptsPerCall {
      let complete = refill(input)
      guard complete || windowCount >= Self.adtsWindow / 2 else { return .needsInput }
      guard windowCount > 0 else {
        stage = .ended
        return stash.isEmpty ? .finished : .decoded
      }
      let consumed = decodeFrame(window.baseAddress!, windowCount, output)
      if consumed > 0 {
        consume(consumed)
      } else {
        // Nothing decodable here: on to the next sync word (or past the window when there is none).
        let bytes = window.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var next = 1
        while next + 1 < windowCount && !(bytes[next] == 0xFF && bytes[next + 1] & 0xF6 == 0xF0) { next += 1 }
        if next + 1 >= windowCount { next = windowCount }
        skippedWithoutFrame += next
        if skippedWithoutFrame > Self.maxSkippedBytes {
          throw .corrupt("AAC: no decodable ADTS frame in \(skippedWithoutFrame) bytes")
        }
        consume(next)
      }
      if output.ring.totalWritten != written || !stash.isEmpty { break }
    }
    return .decoded
  }
}
