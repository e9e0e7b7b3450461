import AudioBuffers

/// FLAC in Ogg (Ogg FLAC, LMS's `ogf`), turned back into native FLAC for `FLACDecoder`: the first packet of a link carries
/// `fLaC` and STREAMINFO (behind a 9-byte Ogg mapping header), the next ones the other metadata
/// blocks, then one frame each. They go, in that order, into a private ring that the inner decoder
/// reads as its stream. A chained stream's next link (a radio station's next song, maybe another
/// format) ends the inner stream; once the inner decoder has finished it, a fresh one starts on
/// the new link.
public final class OggFLACDecoder: AudioDecoder {
  public var minimumFreeFrames: Int { native.minimumFreeFrames }
  public var format: AudioFormat? { native.format }
  public var damage: StreamDamage {
    guard reader.lostStretches > 0 else { return damaged }
    return StreamDamage(stretches: damaged.stretches + reader.lostStretches, last: "Ogg pages lost or damaged")
  }

  /// Room for the largest frame FLAC allows at 8 channels of 24 bits, and then some.
  static let innerCapacity = 1 << 20

  private enum Stage {
    /// Packets into `inner`, decoded from there.
    case ogg
    /// A new link has begun; the inner decoder finishes the last one first.
    case endingLink
    case ended
  }

  private var stage = Stage.ogg
  private var native: FLACDecoder
  private let inner = StreamInput(capacity: OggFLACDecoder.innerCapacity)
  private let reader = OggPacketReader(maxPacket: OggFLACDecoder.innerCapacity)
  /// A packet read but not yet written (the inner ring was full, or it is the first of a new link,
  /// which waits for the last one to finish): in the reader's buffer, valid until its next read.
  private var pending: UnsafeRawBufferPointer?
  private var links = 0
  /// Why the next link of a chained stream cannot be played (not FLAC), once the current one ends.
  private var nextLinkProblem: DecodeError?
  private var damaged = StreamDamage()

  public init() throws(DecodeError) {
    native = try FLACDecoder()
  }

  public func decode(from input: StreamInput, to output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    stage == .ended ? .finished : try decodeOgg(input, output)
  }

  private func decodeOgg(_ input: StreamInput, _ output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    let moved = try pump(input, into: inner)
    let progress = try native.decode(from: inner, to: output)
    switch progress {
    case .decoded:
      return .decoded
    case .finished:
      record(native.damage)
      guard stage == .endingLink else {
        stage = .ended
        return .finished
      }
      if let nextLinkProblem {
        stage = .ended
        throw nextLinkProblem  // the last link played whole; the next one cannot be
      }
      // The next link: a fresh decoder over a fresh inner stream, its first packet first.
      _ = inner.ring.discardAll()
      inner.reopen()
      self.native = try FLACDecoder()
      stage = .ogg
      return .decoded
    case .needsInput:
      if moved { return .decoded }
      if input.isExhausted && pending == nil && !inner.hasEnded {
        inner.markEnded()  // the stream is over: the inner decoder finishes what it has
        return .decoded
      }
      return .needsInput
    }
  }

  /// Moves packets from the stream into the inner ring while it has room (the inner stream is a
  /// byte stream: a packet may go in pieces); true if anything moved.
  private func pump(_ input: StreamInput, into inner: StreamInput) throws(DecodeError) -> Bool {
    var moved = false
    while stage == .ogg {
      if pending == nil {
        guard let packet = try reader.next(from: input) else { break }
        switch packet {
        case .first(let bytes):
          links += 1
          do {
            pending = try streamHeader(bytes)
          } catch {
            guard links > 1 else { throw error }
            nextLinkProblem = error  // thrown once the current link has played out
          }
          if links > 1 {
            // A chained stream's next link: the current one ends here.
            inner.markEnded()
            stage = .endingLink
            return true
          }
        case .next(let bytes):
          guard links > 0 else { continue }  // packets before any FLAC header: not ours
          pending = bytes
        }
      }
      guard let packet = pending else { break }
      let written = inner.ring.write(packet)
      guard written > 0 else { break }
      pending = written < packet.count ? UnsafeRawBufferPointer(rebasing: packet[written...]) : nil
      moved = true
    }
    return moved
  }

  /// The first packet of a link: 0x7F "FLAC", mapping version 1.x, a header count, then "fLaC"
  /// and the STREAMINFO block, which is what the inner decoder gets.
  private func streamHeader(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> UnsafeRawBufferPointer {
    guard bytes.count >= 13 + 4 + 34, bytes[0] == 0x7F, bytes[1] == 0x46, bytes[2] == 0x4C, bytes[3] == 0x41,
      bytes[4] == 0x43, bytes[9] == 0x66, bytes[10] == 0x4C, bytes[11] == 0x61, bytes[12] == 0x43
    else {
      let head = hex(bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), min(bytes.count, 9))
      throw .unsupportedStream("an Ogg stream that is not Ogg FLAC (its first packet starts with \(head))")
    }
    guard bytes[5] == 1 else { throw .unsupportedStream("Ogg FLAC mapping version \(bytes[5])") }
    return UnsafeRawBufferPointer(rebasing: bytes[9...])
  }

  private func record(_ damage: StreamDamage) {
    guard damage.stretches > 0 else { return }
    damaged.stretches += damage.stretches
    damaged.last = damage.last
  }
}
