import AudioBuffers
import AudioOutput
import Support
import Synchronization
import TestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// An output device in memory: it keeps every sample written and takes frames only as far as
/// the test allows (`allow`), so a test can hold playback at an exact frame.
final class MemorySink: OutputDevice, Sendable {
  let name = "memory"
  private struct State {
    var isOpen = false
    var sampleRate = 44100
    var samples: [Int32] = []
    /// Frames it may still take; nil: no limit.
    var allowance: Int?
    var opens = 0
    var nativeDSD: NativeDSDFormat?
    /// Each open's rate and mode.
    var modes: [Mode] = []
  }
  struct Mode: Equatable {
    var sampleRate: Int
    var nativeDSD: NativeDSDFormat?
  }
  private let state: Mutex<State>

  /// `bufferFrames`: what a push through at the end asks for (a sound card's buffer); 0 for
  /// none, which leaves the capture as written.
  init(allowance: Int? = nil, bufferFrames: Int = 0) {
    state = Mutex(State(allowance: allowance))
    self.bufferFrames = bufferFrames
  }

  let bufferFrames: Int

  var isOpen: Bool { state.withLock { $0.isOpen } }
  var sampleRate: Int { state.withLock { $0.sampleRate } }
  let chunkFrames = 1024

  func open(sampleRate: Int) throws(OutputError) {
    try open(sampleRate: sampleRate, nativeDSD: nil)
  }

  func open(sampleRate: Int, nativeDSD: NativeDSDFormat?) throws(OutputError) {
    state.withLock {
      $0.isOpen = true
      $0.sampleRate = sampleRate
      $0.nativeDSD = nativeDSD
      $0.opens += 1
      $0.modes.append(Mode(sampleRate: sampleRate, nativeDSD: nativeDSD))
    }
  }

  var nativeDSD: NativeDSDFormat? { state.withLock { $0.nativeDSD } }
  var modes: [Mode] { state.withLock { $0.modes } }

  func close() { state.withLock { $0.isOpen = false } }

  func write(_ samples: UnsafeBufferPointer<Int32>, dither: Bool) throws(OutputError) -> Int {
    let taken = state.withLock { state -> Int in
      let frames = min(samples.count / 2, state.allowance ?? Int.max)
      state.samples.append(contentsOf: samples[0..<frames * 2])
      if state.allowance != nil { state.allowance! -= frames }
      return frames
    }
    // Held: a real device would block here; a millisecond keeps the output thread from spinning.
    if taken == 0 { usleep(1000) }
    return taken
  }

  func delayFrames() -> Int { 0 }
  func discardQueued() {}
  /// PCM's push through: a buffer of zeros, as ALSAOutput writes.
  func playOutQueued() {
    state.withLock { $0.samples.append(contentsOf: repeatElement(0, count: 2 * bufferFrames)) }
  }

  /// Lets `frames` more frames through (nil: all from now on).
  func allow(_ frames: Int?) {
    state.withLock { state in
      if let frames { state.allowance = (state.allowance ?? 0) + frames } else { state.allowance = nil }
    }
  }

  var samples: [Int32] { state.withLock { $0.samples } }
  var frameCount: Int { state.withLock { $0.samples.count / 2 } }
}

/// nil when `capture` equals `expected` to the last sample; otherwise where they part, briefly
/// (a whole-array failure message would be megabytes).
func difference(_ capture: [Int32], _ expected: [Int32]) -> String? {
  if capture == expected { return nil }
  let common = zip(capture, expected).prefix { $0 == $1 }.count
  return "captured \(capture.count / 2) frames, expected \(expected.count / 2); first difference at frame \(common / 2)"
}
