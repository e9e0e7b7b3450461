import AudioBuffers
import Decoders
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// Whether a downloaded file really is audio our decoders can play: the file is run through the
/// decoder, a small window at a time, until it has produced frames (or `probeBytes` were read).
/// The buffers are small on purpose: they are allocated for each download, and large temporary
/// allocations make the allocator keep memory resident afterwards.
enum CacheVerifier {
  static func decodes(path: String, codec: Codec, probeBytes: Int = 16 << 20) -> Bool {
    guard let decoder = try? DecoderFactory.make(codec: codec) else { return false }
    let input = StreamInput(capacity: 64 * 1024)
    let output = FrameOutput(capacityFrames: max(8192, decoder.minimumFreeFrames))
    output.beginTrack(id: 1)
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var read = 0
    /// Tops the window up from the file; marks the input ended at the end of the file or the probe.
    func refill() {
      while !input.hasEnded, input.ring.space > 0 {
        let region = input.ring.writableRegion()
        let wanted = min(region.count, probeBytes - read)
        guard wanted > 0, case .success(let n) = POSIXIO.read(fd, into: region.baseAddress, count: wanted), n > 0
        else {
          input.markEnded()
          return
        }
        input.ring.commitWrite(n)
        read += n
      }
    }
    refill()
    for _ in 0..<10_000 {
      if output.ring.totalWritten > 0 { return true }
      if output.freeFrames < decoder.minimumFreeFrames { output.ring.discardAll() }
      guard let progress = try? decoder.decode(from: input, to: output) else { return false }
      switch progress {
      case .decoded: continue
      case .needsInput where !input.hasEnded: refill()
      default: return output.ring.totalWritten > 0
      }
    }
    return false
  }
}
