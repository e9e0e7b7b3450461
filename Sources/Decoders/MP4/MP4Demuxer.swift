import AudioBuffers

/// Reads an MP4 file as it streams in (what LMS sends for `.m4a` as it is) and hands out its
/// audio track's samples in order. Decoder thread only; never blocks: `next` returns `.needsInput`
/// whenever the ring runs dry and continues where it stopped.
///
/// The index (`moov`) must come before the audio (`mdat`), as in files made for streaming (iTunes',
/// `ffmpeg -movflags +faststart`, and LMS's own rewritten header after a seek). Boxes before it
/// are skipped; `moov` is collected whole (at most `moovLimit` bytes) and parsed; then each sample
/// is read at the offset its chunk gives, skipping whatever lies between (other boxes, other
/// tracks' samples). Allocation: the `moov` buffer and one sample buffer, once per track.
final class MP4Demuxer {
  enum Next {
    case needsInput
    /// The index has been read: once, before the first sample.
    case track(MP4AudioTrack)
    /// A whole sample, valid until the next call.
    case sample(UnsafeRawBufferPointer)
    /// Every sample has been handed out (or the stream ended early; see `truncatedAt`).
    case end
  }

  static let moovLimit = 64 << 20
  /// Bytes after every sample that may be read (not used) by a bit reader: zero after each sample.
  static let slack = 8
  /// The largest sample taken: far above any AAC or ALAC packet (an 8-channel 32-bit ALAC packet of
  /// 4096 frames is 128 KiB).
  static let sampleLimit = 16 << 20

  private enum Stage {
    case boxHeader
    case skipping(remaining: UInt64)
    case moov
    case samples
    /// After the last sample: the rest of the stream (boxes after the audio) is read and dropped,
    /// so the track ends when its stream does.
    case draining
    case ended
  }

  private var stage = Stage.boxHeader
  /// File offset of the next byte read from the ring.
  private(set) var position: UInt64 = 0
  private let header = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 8)
  private var headerCount = 0
  private var moov: UnsafeMutableRawBufferPointer?
  private var moovCount = 0
  private(set) var track: MP4AudioTrack?
  private var cursor = MP4SampleCursor()
  private var sample: UnsafeMutableRawBufferPointer?
  private var pending: (offset: UInt64, size: Int)?
  private var sampleCount = 0
  private var boxes = 0
  /// What was cut off when the stream ended before the last sample.
  private(set) var truncation: String?

  init() {}

  deinit {
    header.deallocate()
    moov?.deallocate()
    sample?.deallocate()
  }

  func next(from input: StreamInput) throws(DecodeError) -> Next {
    while true {
      let ended = input.hasEnded  // sampled before reading: nothing read after it means exhausted
      switch stage {
      case .ended:
        return .end
      case .boxHeader:
        guard try readHeader(input) else { return exhausted(ended, input) ? endEarly("a box header") : .needsInput }
      case .skipping(let remaining):
        let skipped = skip(input, remaining)
        if skipped == remaining {
          stage = .boxHeader
        } else {
          stage = .skipping(remaining: remaining - skipped)
          return exhausted(ended, input) ? endEarly("a skipped box") : .needsInput
        }
      case .moov:
        guard let moov else { return .end }
        moovCount += read(input, into: UnsafeMutableRawBufferPointer(rebasing: moov[moovCount...]))
        guard moovCount == moov.count else {
          return exhausted(ended, input) ? endEarly("the index (moov)") : .needsInput
        }
        let parsed = try MP4AudioTrack.parse(moov: UnsafeRawBufferPointer(moov))
        guard parsed.samples.largestSample <= Self.sampleLimit else {
          throw .corrupt("MP4: a sample of \(parsed.samples.largestSample) bytes")
        }
        moov.deallocate()
        self.moov = nil
        // Zeroed slack after the largest sample: bit readers may load a few bytes past a sample's end.
        let buffer = UnsafeMutableRawBufferPointer.allocate(
          byteCount: parsed.samples.largestSample + Self.slack, alignment: 16)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        sample = buffer
        track = parsed
        stage = .boxHeader
        return .track(parsed)
      case .draining:
        _ = skip(input, UInt64(input.ring.fill))
        guard exhausted(ended, input) else { return .needsInput }
        stage = .ended
        return .end
      case .samples:
        if pending == nil {
          guard let track, let next = try cursor.next(in: track.samples) else {
            stage = .draining
            continue
          }
          guard next.offset >= position else {
            throw .corrupt(
              "MP4: sample \(cursor.sample - 1) at offset \(next.offset), before the read position \(position)")
          }
          pending = next
          sampleCount = 0
        }
        guard let target = pending, let sample else { return .end }
        if position < target.offset {
          _ = skip(input, target.offset - position)
          if position < target.offset { return exhausted(ended, input) ? endEarly("the audio") : .needsInput }
        }
        sampleCount += read(input, into: UnsafeMutableRawBufferPointer(rebasing: sample[sampleCount..<target.size]))
        guard sampleCount == target.size else { return exhausted(ended, input) ? endEarly("a sample") : .needsInput }
        pending = nil
        UnsafeMutableRawBufferPointer(rebasing: sample[target.size..<(target.size + Self.slack)])
          .initializeMemory(as: UInt8.self, repeating: 0)
        return .sample(UnsafeRawBufferPointer(rebasing: sample[0..<target.size]))
      }
    }
  }

  /// The stream ended (`ended`, sampled before the last read) and every byte has been read.
  /// Passes over the next `count` samples without reading them (their bytes are skipped as they
  /// come). Only between samples.
  func skipSamples(_ count: Int) throws(DecodeError) {
    guard let track, pending == nil else { return }
    for _ in 0..<count where try cursor.next(in: track.samples) != nil {}
  }

  private func exhausted(_ ended: Bool, _ input: StreamInput) -> Bool { ended && input.ring.fill == 0 }

  private func endEarly(_ what: String) -> Next {
    let total = track.map { " (sample \(cursor.sample) of \($0.samples.count))" } ?? ""
    truncation = "the stream ended inside \(what)\(total)"
    stage = .ended
    return .end
  }

  /// Reads a box header and decides what to do with the box; false while it has not all arrived.
  private func readHeader(_ input: StreamInput) throws(DecodeError) -> Bool {
    if headerCount < 8 {
      headerCount += read(input, into: UnsafeMutableRawBufferPointer(rebasing: header[headerCount..<8]))
      guard headerCount == 8 else { return false }
    }
    let size32 = MP4Reader.u32(UnsafeRawBufferPointer(header), at: 0)
    let type = FourCC(value: MP4Reader.u32(UnsafeRawBufferPointer(header), at: 4))
    if boxes == 0 && !Self.plausibleFirstBoxes.contains(type) {
      throw .unsupportedStream(
        "not an MP4 stream (starts with \(hex(header.baseAddress!.assumingMemoryBound(to: UInt8.self), 8)))")
    }
    var headerSize: UInt64 = 8
    var size = UInt64(size32)
    if size32 == 1 {
      headerCount += read(input, into: UnsafeMutableRawBufferPointer(rebasing: header[headerCount..<16]))
      guard headerCount == 16 else { return false }
      size =
        UInt64(MP4Reader.u32(UnsafeRawBufferPointer(header), at: 8)) << 32
        | UInt64(MP4Reader.u32(UnsafeRawBufferPointer(header), at: 12))
      headerSize = 16
    }
    headerCount = 0
    boxes += 1
    let payload = size == 0 ? UInt64.max : size &- headerSize  // 0: the box runs to the end of the file
    guard size == 0 || size >= headerSize else { throw .corrupt("MP4: box '\(type)' of \(size) bytes") }
    if type == .moov {
      guard track == nil else {
        stage = .skipping(remaining: payload)
        return true
      }
      guard payload <= UInt64(Self.moovLimit) else {
        throw .unsupportedStream("MP4 index (moov) of \(payload) bytes, more than \(Self.moovLimit)")
      }
      moov = .allocate(byteCount: Int(payload), alignment: 16)
      moovCount = 0
      stage = .moov
    } else if type == .mdat {
      guard track != nil else {
        throw .unsupportedStream(
          "MP4 with its index (moov) after the audio (mdat): not streamable (remux with the index first, e.g. ffmpeg -movflags +faststart)"
        )
      }
      stage = .samples
    } else {
      stage = .skipping(remaining: payload)
    }
    return true
  }

  private static let plausibleFirstBoxes: [FourCC] = [
    .ftyp, .moov, .mdat, FourCC("free"), FourCC("skip"), FourCC("wide"), FourCC("pdin"), .uuid, FourCC("styp"),
  ]

  private func read(_ input: StreamInput, into buffer: UnsafeMutableRawBufferPointer) -> Int {
    guard buffer.count > 0 else { return 0 }
    let n = input.read(into: buffer)
    position += UInt64(n)
    return n
  }

  /// Drops up to `count` bytes from the ring without copying them; returns how many.
  private func skip(_ input: StreamInput, _ count: UInt64) -> UInt64 {
    let ring = input.ring
    let n = UInt64(min(UInt64(ring.fill), count))
    if n > 0 { ring.commitRead(Int(n)) }
    position += n
    return n
  }
}
