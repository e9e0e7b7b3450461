import CSupport
import Support

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
    if !isOpen {
      // A pipe's default 64 KiB would hold 370 ms of CD audio that keeps draining into the reader
      // through a pause; one page behaves like a sound card's short buffer.
      _ = slimplay_set_pipe_size(1, 4096)
    }
    isOpen = true
  }

  public func close() { isOpen = false }

  public func write(_ samples: UnsafeBufferPointer<Int32>, dither: Bool) throws(OutputError) -> Int {
    let maxSamples = scratch.count / packer.format.bytesPerSample
    let taken = UnsafeBufferPointer(rebasing: samples[0..<min(samples.count, maxSamples)])
    let byteCount = packer.pack(taken, into: scratch, dither: dither)
    if case .failure(let failure) = POSIXIO.writeAll(1, UnsafeRawBufferPointer(rebasing: scratch[0..<byteCount])) {
      throw .writeFailed("stdout: \(failure)")
    }
    return taken.count / 2
  }

  /// What sits in the pipe has not been heard yet (0 for a file or a terminal).
  public func delayFrames() -> Int {
    max(0, Int(slimplay_queued_bytes(1))) / packer.format.bytesPerFrame
  }
  public func discardQueued() {}
  /// A pipe drains into its reader by itself.
  public func playOutQueued() {}
}
