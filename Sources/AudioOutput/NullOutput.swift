import AudioBuffers
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// Discards audio, but at real time: each write sleeps until its frames would have been heard,
/// against an absolute clock so rounding never accumulates.
public final class NullOutput: OutputDevice {
  public let name = "null"
  public private(set) var isOpen = false
  public private(set) var sampleRate = 44100
  /// 50 ms per write: fewer wake-ups, and still a prompt reaction to pause and stop.
  public var chunkFrames: Int { max(256, sampleRate / 20) }
  /// Absolute time (CLOCK_MONOTONIC ns) at which everything written so far is heard.
  private var playedUntil: UInt64 = 0

  public init() {}

  public private(set) var nativeDSD: NativeDSDFormat?

  public func open(sampleRate: Int) throws(OutputError) {
    try open(sampleRate: sampleRate, nativeDSD: nil)
  }

  /// Takes native DSD as readily as PCM: nothing is played either way.
  public func open(sampleRate: Int, nativeDSD: NativeDSDFormat?) throws(OutputError) {
    self.nativeDSD = nativeDSD
    self.sampleRate = sampleRate
    isOpen = true
    playedUntil = now()
  }

  public func close() { isOpen = false }

  public func write(_ samples: UnsafeBufferPointer<Int32>, dither: Bool) throws(OutputError) -> Int {
    let frames = samples.count / 2
    let current = now()
    // After a pause or an underrun the device would have run dry: restart the clock.
    if playedUntil < current { playedUntil = current }
    // Keep one chunk queued, like a device buffer, then wait for the oldest to be heard.
    let ahead = UInt64(chunkFrames) * 1_000_000_000 / UInt64(sampleRate)
    if playedUntil > current + ahead { sleep(until: playedUntil - ahead) }
    playedUntil += UInt64(frames) * 1_000_000_000 / UInt64(sampleRate)
    return frames
  }

  public func delayFrames() -> Int {
    let current = now()
    guard playedUntil > current else { return 0 }
    return Int((playedUntil - current) * UInt64(sampleRate) / 1_000_000_000)
  }

  public func discardQueued() { playedUntil = now() }

  public func playOutQueued() {
    if playedUntil > now() { sleep(until: playedUntil) }
  }

  private func now() -> UInt64 { MonotonicClock.nanoseconds() }
  private func sleep(until deadline: UInt64) { MonotonicClock.sleep(until: deadline) }
}
