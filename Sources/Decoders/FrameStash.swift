import AudioBuffers

/// Decoded frames that did not fit into the output ring yet (interleaved stereo Int32, the output
/// format), plus the one place where decoders hand frames to the output.
///
/// Codec libraries deliver whole blocks (a FLAC block, an Opus packet); `emit` writes as much of a
/// block as the ring takes straight into it and keeps the rest here. Decoders drain the stash
/// before they decode anything new, so the stash only ever holds frames of one format and one
/// block's worth. Allocated once, at the decoder's creation; used on the decoder thread only.
final class FrameStash {
  let capacityFrames: Int
  private let storage: UnsafeMutablePointer<Int32>
  private var start = 0
  private var end = 0
  private var stashedFormat = AudioFormat(sampleRate: 0, channels: 0, bitsPerSample: 0)

  init(capacityFrames: Int) {
    self.capacityFrames = capacityFrames
    // Trivial values, always written before they are read; left untouched (not faulted in) until
    // the output ring first overflows.
    storage = .allocate(capacity: capacityFrames * OutputFrames.samplesPerFrame)
  }

  deinit {
    storage.deallocate()
  }

  var isEmpty: Bool { start == end }
  var count: Int { end - start }

  /// Moves stashed frames into the output. True when the stash is empty afterwards; false when
  /// the ring is full or the boundary queue refused the commit (try again later).
  func drain(to output: FrameOutput) -> Bool {
    while start < end {
      let region = output.writableSamples()
      let frames = min(region.count / OutputFrames.samplesPerFrame, end - start)
      guard frames > 0, let destination = region.baseAddress else { return false }
      destination.update(
        from: storage + start * OutputFrames.samplesPerFrame, count: frames * OutputFrames.samplesPerFrame)
      guard output.commit(frames: frames, format: stashedFormat) else { return false }
      start += frames
    }
    start = 0
    end = 0
    return true
  }

  /// Hands `count` frames to the output: `produce(destination, first, n)` must write frames
  /// `first ..< first + n` of the block, interleaved stereo, at `destination`. What the ring does
  /// not take (full, wrapped, or the boundary queue refused) goes into the stash. Only call with
  /// an empty stash; `count` must not exceed `capacityFrames`.
  func emit(
    count: Int, format: AudioFormat, to output: FrameOutput?,
    _ produce: (UnsafeMutablePointer<Int32>, Int, Int) -> Void
  ) {
    precondition(isEmpty && count <= capacityFrames, "FrameStash.emit: stash busy or block too large")
    var done = 0
    if let output {
      while done < count {
        let region = output.writableSamples()
        let frames = min(region.count / OutputFrames.samplesPerFrame, count - done)
        guard frames > 0, let destination = region.baseAddress else { break }
        produce(destination, done, frames)
        guard output.commit(frames: frames, format: format) else { break }
        done += frames
      }
    }
    if done < count {
      produce(storage, done, count - done)
      start = 0
      end = count - done
      stashedFormat = format
    }
  }

  /// Hands over `frames` frames of 16-bit samples interleaved over `channels` (a codec library's
  /// output), as left-justified stereo: mono on both sides, beyond two channels the first two.
  func emit(
    interleaved pcm: UnsafePointer<Int16>, frames: Int, channels: Int, format: AudioFormat, to output: FrameOutput
  ) {
    let right = channels > 1 ? 1 : 0
    emit(count: frames, format: format, to: output) { destination, first, n in
      var frame = pcm + first * channels
      for i in 0..<n {
        destination[2 * i] = Int32(frame[0]) &<< 16
        destination[2 * i + 1] = Int32(frame[right]) &<< 16
        frame += channels
      }
    }
  }

  /// Forgets everything stashed.
  func removeAll() {
    start = 0
    end = 0
  }
}

/// Bytes as hex, for error messages.
func hex(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> String {
  let digits = Array("0123456789abcdef")
  var text = ""
  for i in 0..<count {
    if i > 0 { text.append(" ") }
    text.append(digits[Int(bytes[i] >> 4)])
    text.append(digits[Int(bytes[i] & 15)])
  }
  return text
}
