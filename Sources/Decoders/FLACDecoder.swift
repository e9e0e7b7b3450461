import AudioBuffers
import CFLAC

/// Native FLAC through libFLAC's stream decoder (read, write, metadata and error callbacks only:
/// a network stream cannot seek, tell or know its length).
///
/// **Never starving libFLAC.** libFLAC's read callback has no "no data yet" answer: a read of 0
/// bytes makes it call again at once (a busy loop), END_OF_STREAM ends the stream. So this
/// decoder makes sure libFLAC is never asked for bytes that have not arrived:
/// - The metadata is parsed here, not by libFLAC: `fLaC`, then each block header; STREAMINFO is
///   kept and every other block (pictures of any size, padding, tags, an ID3v2 tag in front) is
///   skipped here, incrementally, returning `.needsInput` whenever the ring runs dry. libFLAC then
///   gets a synthetic `fLaC` + STREAMINFO (marked last) from a small prefix buffer, followed by
///   the frames straight from the stream ring.
/// - `FLAC__stream_decoder_process_single` (one frame) is only called when the ring holds at
///   least `frameBound` bytes — an upper bound for one frame: the verbatim size of the largest
///   block (`max blocksize × channels × (bits + 1) / 8` plus headers, from STREAMINFO, the first
///   frame's header, or any frame seen so far) — or when the stream has ended, or the ring is full.
/// - Should the read callback still find the ring empty (junk between frames, a frame larger than
///   its stream claims), it answers ABORT; the decoder is flushed and resyncs at the next frame.
///   That loses the damaged stretch and counts as an error.
///
/// A body that starts with a frame sync (ff f8 / ff f9) instead of `fLaC` — what LMS sends after
/// a seek — is handed to libFLAC directly; the format then comes from the frame headers. A body
/// that starts with anything else is rejected at once (`unsupportedStream`).
///
/// More than two channels: the first two are kept.
public final class FLACDecoder: AudioDecoder {
  public let minimumFreeFrames = 4096
  public private(set) var format: AudioFormat?

  private enum Stage {
    case sniff
    case id3Header
    case blockHeader
    case streamInfo
    case skip(remaining: Int, then: Next)
    case frames
    case ended
  }

  private enum Next { case sniff, blockHeader, frames }

  /// Consecutive library errors (without a good frame in between) before giving up.
  static let maxConsecutiveErrors = 64
  /// Bytes read past the last good frame before giving up on finding another.
  static let maxBytesWithoutFrame = 4 << 20
  /// The largest block FLAC allows (65535) — the overflow stash holds one whole block.
  static let maxBlockSize = 65535

  private let decoder: UnsafeMutablePointer<FLAC__StreamDecoder>
  private let stash = FrameStash(capacityFrames: FLACDecoder.maxBlockSize)
  private var stage = Stage.sniff

  /// Header bytes being collected by the pre-parser.
  private let head = UnsafeMutablePointer<UInt8>.allocate(capacity: 64)
  private var headCount = 0
  /// Bytes handed to libFLAC before the ring's: `fLaC` + STREAMINFO, or the sniffed frame start.
  private let prefix = UnsafeMutablePointer<UInt8>.allocate(capacity: 64)
  private var prefixCount = 0
  private var prefixPosition = 0
  private var haveStreamInfo = false
  private var streamInfoIsLast = false
  /// Scratch for skipped bytes.
  private let discard = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 << 10, alignment: 16)

  /// Upper bound of one frame's size in bytes (see the type's comment).
  private var frameBound = 64 << 10
  private var largestBlock = 0

  // Per decode call: where the callbacks read from and write to.
  private var activeInput: StreamInput?
  private var activeOutput: FrameOutput?
  private var starved = false

  private var framesDecoded = 0
  private var errorsSinceFrame = 0
  /// Runs of errors between two good frames.
  private var damagedStretches = 0
  private var bytesSinceFrame = 0
  private var lastError = ""

  public var damage: StreamDamage {
    damagedStretches > 0 ? StreamDamage(stretches: damagedStretches, last: lastError) : StreamDamage()
  }

  public init() throws(DecodeError) {
    guard let decoder = FLAC__stream_decoder_new() else { throw .library("FLAC__stream_decoder_new failed") }
    self.decoder = decoder
    let status = FLAC__stream_decoder_init_stream(
      decoder,
      { _, buffer, bytes, client in
        Unmanaged<FLACDecoder>.fromOpaque(client!).takeUnretainedValue().read(into: buffer!, count: bytes!)
      },
      nil, nil, nil, nil,
      { _, frame, buffer, client in
        Unmanaged<FLACDecoder>.fromOpaque(client!).takeUnretainedValue().write(frame: frame!, channels: buffer!)
      },
      { _, metadata, client in
        Unmanaged<FLACDecoder>.fromOpaque(client!).takeUnretainedValue().metadata(metadata!)
      },
      { _, status, client in
        Unmanaged<FLACDecoder>.fromOpaque(client!).takeUnretainedValue().error(status)
      },
      Unmanaged.passUnretained(self).toOpaque())
    guard status == FLAC__STREAM_DECODER_INIT_STATUS_OK else {
      throw .library("FLAC__stream_decoder_init_stream failed (\(status.rawValue))")
    }
  }

  deinit {
    FLAC__stream_decoder_delete(decoder)
    head.deallocate()
    prefix.deallocate()
    discard.deallocate()
  }

  public func decode(from input: StreamInput, to output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    guard stash.drain(to: output) else { return .decoded }
    while true {
      switch stage {
      case .ended:
        return .finished
      case .frames:
        return try decodeFrame(from: input, to: output)
      default:
        if let progress = try parseHeaders(from: input) { return progress }
      }
    }
  }

  // MARK: Frames (libFLAC)

  private func decodeFrame(from input: StreamInput, to output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    let ring = input.ring
    let buffered = ring.fill + (prefixCount - prefixPosition)
    guard buffered >= frameBound || input.hasEnded || ring.space == 0 else { return .needsInput }

    activeInput = input
    activeOutput = output
    let ok = FLAC__stream_decoder_process_single(decoder) != 0
    activeInput = nil
    activeOutput = nil
    let state = FLAC__stream_decoder_get_state(decoder)

    if starved {
      starved = false
      _ = FLAC__stream_decoder_flush(decoder)
      if errorsSinceFrame == 0 { damagedStretches += 1 }
      errorsSinceFrame += 1
      lastError = "frame larger than the buffered input"
      try checkErrorBudget()
      return .needsInput
    }
    if state == FLAC__STREAM_DECODER_END_OF_STREAM {
      guard framesDecoded > 0 else {
        throw .corrupt("no FLAC frame in the stream" + (lastError.isEmpty ? "" : " (\(lastError))"))
      }
      stage = .ended
      return stash.isEmpty ? .finished : .decoded
    }
    guard ok, state != FLAC__STREAM_DECODER_ABORTED else {
      let why = String(cString: FLAC__stream_decoder_get_resolved_state_string(decoder))
      throw .library("libFLAC: " + why + (lastError.isEmpty ? "" : " (\(lastError))"))
    }
    try checkErrorBudget()
    return .decoded
  }

  private func checkErrorBudget() throws(DecodeError) {
    if errorsSinceFrame >= Self.maxConsecutiveErrors || bytesSinceFrame >= Self.maxBytesWithoutFrame {
      throw .corrupt(
        "FLAC: \(errorsSinceFrame) errors, \(bytesSinceFrame) bytes without a good frame (last: \(lastError))")
    }
  }

  private func read(
    into buffer: UnsafeMutablePointer<FLAC__byte>, count: UnsafeMutablePointer<Int>
  ) -> FLAC__StreamDecoderReadStatus {
    let wanted = count.pointee
    var copied = 0
    if prefixPosition < prefixCount {
      copied = min(wanted, prefixCount - prefixPosition)
      buffer.update(from: prefix + prefixPosition, count: copied)
      prefixPosition += copied
    }
    if copied < wanted, let input = activeInput {
      let ended = input.hasEnded  // sampled before the read: 0 bytes after it means exhausted
      copied += input.read(into: UnsafeMutableRawBufferPointer(start: buffer + copied, count: wanted - copied))
      if copied == 0 {
        count.pointee = 0
        if ended { return FLAC__STREAM_DECODER_READ_STATUS_END_OF_STREAM }
        starved = true
        return FLAC__STREAM_DECODER_READ_STATUS_ABORT
      }
    }
    count.pointee = copied
    bytesSinceFrame += copied
    return FLAC__STREAM_DECODER_READ_STATUS_CONTINUE
  }

  private func write(
    frame: UnsafePointer<FLAC__Frame>, channels buffer: UnsafePointer<UnsafePointer<FLAC__int32>?>
  ) -> FLAC__StreamDecoderWriteStatus {
    let header = frame.pointee.header
    let channels = Int(header.channels)
    let bits = Int(header.bits_per_sample)
    let blockSize = Int(header.blocksize)
    guard channels > 0, bits >= 4, bits <= 32, blockSize <= stash.capacityFrames,
      let left = buffer[0], let right = buffer[channels > 1 ? 1 : 0]
    else {
      lastError = "unsupported frame (\(channels) channels, \(bits) bits, \(blockSize) samples)"
      return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT
    }
    let frameFormat = AudioFormat(sampleRate: Int(header.sample_rate), channels: channels, bitsPerSample: bits)
    format = frameFormat
    let shift = Int32(32 - bits)
    stash.emit(count: blockSize, format: frameFormat, to: activeOutput) { destination, first, frames in
      for i in 0..<frames {
        destination[2 * i] = left[first + i] &<< shift
        destination[2 * i + 1] = right[first + i] &<< shift
      }
    }
    framesDecoded += 1
    errorsSinceFrame = 0
    bytesSinceFrame = 0
    if blockSize > largestBlock {
      largestBlock = blockSize
      updateFrameBound(blockSize: blockSize, channels: channels, bits: bits)
    }
    return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE
  }

  private func metadata(_ metadata: UnsafePointer<FLAC__StreamMetadata>) {
    guard metadata.pointee.type == FLAC__METADATA_TYPE_STREAMINFO else { return }
    let info = metadata.pointee.data.stream_info
    format = AudioFormat(
      sampleRate: Int(info.sample_rate), channels: Int(info.channels), bitsPerSample: Int(info.bits_per_sample))
    largestBlock = max(largestBlock, Int(info.max_blocksize))
    updateFrameBound(blockSize: largestBlock, channels: Int(info.channels), bits: Int(info.bits_per_sample))
  }

  private func error(_ status: FLAC__StreamDecoderErrorStatus) {
    if errorsSinceFrame == 0 { damagedStretches += 1 }
    errorsSinceFrame += 1
    switch status {
    case FLAC__STREAM_DECODER_ERROR_STATUS_LOST_SYNC: lastError = "lost sync"
    case FLAC__STREAM_DECODER_ERROR_STATUS_BAD_HEADER: lastError = "bad frame header"
    case FLAC__STREAM_DECODER_ERROR_STATUS_FRAME_CRC_MISMATCH: lastError = "frame CRC mismatch (played as silence)"
    case FLAC__STREAM_DECODER_ERROR_STATUS_UNPARSEABLE_STREAM: lastError = "unparseable stream"
    default: lastError = "libFLAC error \(status.rawValue)"
    }
  }

  private func updateFrameBound(blockSize: Int, channels: Int, bits: Int) {
    // Verbatim subframes (the worst case an encoder emits), one extra bit for a side channel,
    // plus generous room for frame and subframe headers and the CRC.
    let bound = blockSize * channels * (bits + 1) / 8 + 1024
    frameBound = max(16 << 10, bound)
  }

  // MARK: Headers (parsed here)

  /// Collects header bytes into `head` until it holds `count`. False: not there yet.
  private func collect(_ count: Int, from input: StreamInput) throws(DecodeError) -> Bool {
    while headCount < count {
      let ended = input.hasEnded
      let n = input.read(into: UnsafeMutableRawBufferPointer(start: head + headCount, count: count - headCount))
      if n == 0 {
        if ended { throw .corrupt("FLAC stream ended inside its header") }
        return false
      }
      headCount += n
    }
    return true
  }

  /// Runs the header stages; nil when it moved on to another stage.
  private func parseHeaders(from input: StreamInput) throws(DecodeError) -> DecodeProgress? {
    switch stage {
    case .sniff:
      if headCount == 0 && input.isExhausted { throw .corrupt("empty FLAC stream") }
      guard try collect(4, from: input) else { return .needsInput }
      if head[0] == 0x66 && head[1] == 0x4C && head[2] == 0x61 && head[3] == 0x43 {  // "fLaC"
        prefix.update(from: head, count: 4)
        prefixCount = 4
        headCount = 0
        stage = .blockHeader
      } else if head[0] == 0x49 && head[1] == 0x44 && head[2] == 0x33 {  // "ID3"
        stage = .id3Header
      } else if head[0] == 0xFF && head[1] & 0xFE == 0xF8 {
        // A frame sync: the body starts at a frame (LMS after a seek).
        prefix.update(from: head, count: 4)
        prefixCount = 4
        headCount = 0
        estimateFrameBound(fromFrameHeader: prefix)
        stage = .frames
      } else {
        throw .unsupportedStream("not a FLAC stream (starts with \(hex(head, 4)))")
      }
    case .id3Header:
      guard try collect(10, from: input) else { return .needsInput }
      var size = 0
      for i in 6..<10 { size = size << 7 | Int(head[i] & 0x7F) }
      if head[5] & 0x10 != 0 { size += 10 }  // footer
      headCount = 0
      stage = .skip(remaining: size, then: .sniff)
    case .blockHeader:
      guard try collect(4, from: input) else { return .needsInput }
      let isLast = head[0] & 0x80 != 0
      let type = head[0] & 0x7F
      let length = Int(head[1]) << 16 | Int(head[2]) << 8 | Int(head[3])
      headCount = 0
      if type == 127 { throw .corrupt("invalid FLAC metadata block type") }
      if type == 0 && length == 34 && !haveStreamInfo {
        stage = .streamInfo
        // Keep the header, marked as the last block: libFLAC sees no other metadata.
        prefix[prefixCount] = 0x80
        prefix[prefixCount + 1] = head[1]
        prefix[prefixCount + 2] = head[2]
        prefix[prefixCount + 3] = head[3]
        prefixCount += 4
        if isLast { streamInfoIsLast = true }
      } else {
        stage = .skip(remaining: length, then: isLast ? .frames : .blockHeader)
      }
    case .streamInfo:
      guard try collect(34, from: input) else { return .needsInput }
      (prefix + prefixCount).update(from: head, count: 34)
      prefixCount += 34
      headCount = 0
      haveStreamInfo = true
      stage = streamInfoIsLast ? .frames : .blockHeader
    case .skip(let remaining, let next):
      var left = remaining
      while left > 0 {
        let ended = input.hasEnded
        let n = input.read(into: UnsafeMutableRawBufferPointer(rebasing: discard[0..<min(left, discard.count)]))
        if n == 0 {
          if ended { throw .corrupt("FLAC stream ended inside its metadata") }
          stage = .skip(remaining: left, then: next)
          return .needsInput
        }
        left -= n
      }
      switch next {
      case .sniff: stage = .sniff
      case .blockHeader: stage = .blockHeader
      case .frames: stage = .frames
      }
    case .frames, .ended:
      return nil
    }
    if case .frames = stage, !haveStreamInfo, prefixCount == 4, prefix[0] == 0x66 {
      // `fLaC` without STREAMINFO: let libFLAC find the frames by their sync code.
      prefixCount = 0
    }
    return nil
  }

  /// The first frame's header gives its block size, channels and sample size (when coded there).
  private func estimateFrameBound(fromFrameHeader bytes: UnsafePointer<UInt8>) {
    let blockCode = Int(bytes[2] >> 4)
    let blockSize: Int
    switch blockCode {
    case 1: blockSize = 192
    case 2...5: blockSize = 576 << (blockCode - 2)
    case 8...15: blockSize = 256 << (blockCode - 8)
    default: blockSize = 65536  // coded at the end of the header, or reserved: assume the worst
    }
    let assignment = Int(bytes[3] >> 4)
    let channels = assignment < 8 ? assignment + 1 : 2
    let bits: Int
    switch (bytes[3] >> 1) & 7 {
    case 1: bits = 8
    case 2: bits = 12
    case 4: bits = 16
    case 5: bits = 20
    case 6: bits = 24
    default: bits = 32
    }
    updateFrameBound(blockSize: blockSize, channels: channels, bits: bits)
  }
}
