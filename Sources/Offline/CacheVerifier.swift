import AudioBuffers
import Decoders
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// Whether a downloaded file really is audio our decoders can play: the first part of it is run
/// through the decoder until it has produced frames.
enum CacheVerifier {
  static func decodes(path: String, codec: Codec, probeBytes: Int = 512 * 1024) -> Bool {
    guard let decoder = try? DecoderFactory.make(codec: codec) else { return false }
    let input = StreamInput(capacity: probeBytes)
    let output = FrameOutput(capacityFrames: 65536)
    output.beginTrack(id: 1)
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    while input.ring.space > 0 {
      let region = input.ring.writableRegion()
      guard case .success(let n) = POSIXIO.read(fd, into: region.baseAddress, count: region.count), n > 0 else {
        break
      }
      input.ring.commitWrite(n)
    }
    input.markEnded()
    for _ in 0..<10_000 {
      if output.ring.totalWritten > 0 { return true }
      if output.freeFrames < decoder.minimumFreeFrames { output.ring.discardAll() }
      guard let progress = try? decoder.decode(from: input, to: output) else { return false }
      if progress != .decoded { return output.ring.totalWritten > 0 }
    }
    return false
  }
}
