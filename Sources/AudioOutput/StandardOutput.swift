import AudioBuffers
import CSupport
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// Raw interleaved little-endian PCM on standard output (`-o -`), or native DSD in its ALSA
/// format's bytes. A pipe's reader paces it.
///
/// The pipe is the output's buffer, as a sound card's is. When the player may open the pipe for
/// reading too (its own pipe, as a shell makes it), the pipe holds a third to half a second, deep
/// enough that a player starved of CPU for a scheduling period (a throttled control group) keeps
/// the reader fed, and no deeper: gain is applied before the pipe, so a volume change (and LMS's
/// fade around a pause) is heard a pipe late. A flush takes back what it queued, as `snd_pcm_drop`
/// does; a pause lets the reader have it, as squeezelite's pipe does, so LMS's fade-out before
/// the pause is heard before it. Another user's pipe cannot be emptied from this end, so it is
/// kept to one page (23 ms of CD audio).
///
/// Into a deep pipe the output writes a quarter of the pipe at a time, and waits for that much room
/// on the clock rather than in `write`: a writer blocked in a full pipe is woken by every read of
/// its reader (43 a second for a reader taking pages of CD audio), this one four times a pipe.
public final class StandardOutput: OutputDevice {
  public let name = "stdout"
  public private(set) var isOpen = false
  public private(set) var sampleRate = 44100
  public private(set) var chunkFrames = 1024
  /// A pipe is kept in pages: the smallest step in which its reader makes room (4 KiB on x86-64,
  /// 16 KiB under a Raspberry Pi 5's kernel).
  private let readerStep = max(4096, Int(sysconf(Int32(_SC_PAGESIZE))))
  /// The deep pipe's size in bytes; 0 when the pipe is kept to a page (or is no pipe).
  private var pipeCapacity = 0
  private var packer: SamplePacker
  private let fileDescriptor: Int32
  private let scratch: UnsafeMutableRawBufferPointer
  /// Whether what the pipe holds can be taken back: a pipe of this process's own, until a halt
  /// hands it over to its reader.
  private var drainable: Bool
  /// Bytes written and bytes taken back: the reader has had their difference, which must end on a
  /// frame boundary after a drain.
  private var bytesWritten = 0
  private var bytesDrained = 0

  /// `fileDescriptor` is standard output but for tests.
  public init(format: SampleFormat, fileDescriptor: Int32 = 1) {
    packer = SamplePacker(format: format)
    self.fileDescriptor = fileDescriptor
    drainable = slimplay_pipe_is_drainable(fileDescriptor) == 1
    // Room for the largest write, allocated once.
    scratch = .allocate(byteCount: 8192 * format.bytesPerFrame, alignment: 16)
  }

  deinit {
    scratch.deallocate()
  }

  public func open(sampleRate: Int) throws(OutputError) {
    try open(sampleRate: sampleRate, nativeDSD: nil)
  }

  public var nativeDSD: NativeDSDFormat? { packer.nativeDSD }

  public func open(sampleRate: Int, nativeDSD: NativeDSDFormat?) throws(OutputError) {
    let modeChanged = nativeDSD != packer.nativeDSD
    if modeChanged { packer = SamplePacker(format: packer.format, nativeDSD: nativeDSD) }
    if !isOpen || sampleRate != self.sampleRate || modeChanged {
      let frameBytes = packer.bytesPerFrame
      let size = drainable ? Self.pipeBytes(rate: sampleRate, frameBytes: frameBytes) : readerStep
      // Fails while the pipe holds more than a smaller size, or for a file or a terminal: such a
      // pipe is written as a shallow one.
      let granted = Int(slimplay_set_pipe_size(fileDescriptor, Int32(size)))
      pipeCapacity = drainable && granted >= size ? granted : 0
      chunkFrames = pipeCapacity > 0 ? min(scratch.count, pipeCapacity / 4) / frameBytes : 1024
    }
    self.sampleRate = sampleRate
    isOpen = true
  }

  /// A deep pipe starts full, and as much again is decoded behind it: its reader's clock starts
  /// with the first byte, while the decoder may still be sharing a short CPU with the stream.
  public func startFrames(sampleRate: Int) -> Int {
    drainable
      ? 2 * Self.pipeBytes(rate: sampleRate, frameBytes: packer.bytesPerFrame) / packer.bytesPerFrame : 0
  }

  /// The largest power of two (the kernel rounds to one) holding at most half a second, and at
  /// least 64 KiB: 371 ms of 16-bit 44.1 kHz, 341 ms of 32-bit 96 kHz.
  static func pipeBytes(rate: Int, frameBytes: Int) -> Int {
    let half = rate * frameBytes / 2
    var size = 65536
    while size * 2 <= half { size *= 2 }
    return size
  }

  public func close() {
    isOpen = false
  }

  public func write(_ samples: UnsafeBufferPointer<Int32>, dither: Bool) throws(OutputError) -> Int {
    let maxSamples = scratch.count / packer.bytesPerSample
    let taken = UnsafeBufferPointer(rebasing: samples[0..<min(samples.count, maxSamples)])
    let byteCount = packer.pack(taken, into: scratch, dither: dither)
    // The output thread has waited for the room (where a command could cut the wait short); a
    // reader running late blocks this write until its next read.
    if case .failure(let failure) = POSIXIO.writeAll(
      fileDescriptor, UnsafeRawBufferPointer(rebasing: scratch[0..<byteCount]))
    {
      throw .writeFailed("stdout: \(failure)")
    }
    bytesWritten &+= byteCount
    return taken.count / 2
  }

  /// How long the reader, at the stream's rate, takes to make room for `byteCount` bytes. A reader
  /// frees the pipe in steps (pages, periods), not evenly: the wait is for the whole steps the
  /// room needs, and a quarter step more for a reader a little late. A wait for the bytes alone
  /// ends between two steps whenever the pipe holds part of a page (after a short write at a track
  /// boundary), and the writer has to wait again: a second wake-up per write.
  private func nanosecondsUntilRoom(forBytes byteCount: Int) -> Int {
    guard pipeCapacity > 0 else { return 0 }
    let queued = Int(slimplay_queued_bytes(fileDescriptor))
    let missing = min(byteCount, pipeCapacity) - (pipeCapacity - queued)
    let bytesPerSecond = sampleRate * packer.bytesPerFrame
    guard queued >= 0, missing > 0, bytesPerSecond > 0 else { return 0 }
    let steps = (missing + readerStep - 1) / readerStep
    return (steps * readerStep + readerStep / 4) * 1_000_000_000 / bytesPerSecond
  }

  public func nanosecondsUntilRoom(forFrames frames: Int) -> UInt64 {
    UInt64(nanosecondsUntilRoom(forBytes: min(frames, chunkFrames) * packer.bytesPerFrame))
  }

  /// What sits in the pipe has not been heard yet (0 for a file or a terminal).
  public func delayFrames() -> Int {
    max(0, Int(slimplay_queued_bytes(fileDescriptor))) / packer.bytesPerFrame
  }

  public func handOverQueued() -> Bool {
    drainable = false
    return true
  }

  /// Takes back what the pipe holds, when it can. The reader may have taken part of a frame; it
  /// gets the rest of that frame as zeros, so that what follows starts on a frame boundary.
  public func discardQueued() {
    guard drainable else { return }
    let dropped = slimplay_drain_pipe(fileDescriptor)
    guard dropped > 0 else { return }
    bytesDrained &+= Int(dropped)
    let frameBytes = packer.bytesPerFrame
    let partial = (bytesWritten &- bytesDrained) % frameBytes
    guard partial != 0 else { return }
    let padding = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<(frameBytes - partial)])
    padding.initializeMemory(as: UInt8.self, repeating: 0)
    if case .success = POSIXIO.writeAll(fileDescriptor, UnsafeRawBufferPointer(padding)) {
      bytesWritten &+= padding.count
    }
  }

  /// A pause leaves the pipe to its reader: what it holds (LMS's fade-out among it) is heard
  /// before the pause, and the resume's frames follow it, nothing lost or heard twice.
  public func pauseQueued() {}

  /// Waits until the reader has taken everything (the last track's end must reach it before the
  /// track is reported over), at most the time the queued bytes take to play and a second.
  public func playOutQueued() {
    let bytesPerSecond = sampleRate * packer.bytesPerFrame
    var queued = Int(slimplay_queued_bytes(fileDescriptor))
    guard queued > 0, bytesPerSecond > 0 else { return }
    let deadline =
      MonotonicClock.nanoseconds() + UInt64(queued) * 1_000_000_000 / UInt64(bytesPerSecond) + 1_000_000_000
    while queued > 0 && MonotonicClock.nanoseconds() < deadline {
      var pause = timespec(tv_sec: 0, tv_nsec: 5_000_000)
      nanosleep(&pause, nil)
      queued = Int(slimplay_queued_bytes(fileDescriptor))
    }
  }
}
