#if canImport(Glibc)
  import Glibc
#endif

/// Raw interleaved little-endian PCM on standard output (`-o -`). A pipe's reader paces it.
public final class StandardOutput: OutputDevice {
  public let name = "stdout"
  public private(set) var isOpen = false
  public private(set) var sampleRate = 44100
  public let chunkFrames = 1024
  private var packer: SamplePacker
  private let scratch: UnsafeMutableRawBufferPointer

  public init(format: SampleFormat) {
    packer = SamplePacker(format: format)
    // Room for the largest write, allocated once.
    scratch = .allocate(byteCount: 8192 * format.bytesPerFrame, alignment: 16)
  }

  deinit { scratch.deallocate() }

  public func open(sampleRate: Int) throws(OutputError) {
    self.sampleRate = sampleRate
    isOpen = true
  }

  public func close() { isOpen = false }

  public func write(_ samples: UnsafeBufferPointer<Int32>, dither: Bool) throws(OutputError) -> Int {
    let maxSamples = scratch.count / packer.format.bytesPerSample
    let taken = UnsafeBufferPointer(rebasing: samples[0..<min(samples.count, maxSamples)])
    let byteCount = packer.pack(taken, into: scratch, dither: dither)
    var offset = 0
    while offset < byteCount {
      let n = Glibc.write(1, scratch.baseAddress! + offset, byteCount - offset)
      if n < 0 {
        if errno == EINTR { continue }
        throw .writeFailed("stdout: \(String(cString: strerror(errno)))")
      }
      offset += n
    }
    return taken.count / 2
  }

  public func delayFrames() -> Int { 0 }
  public func discardQueued() {}
}
