import AudioBuffers

public enum OutputError: Error, Equatable, CustomStringConvertible {
  case cannotOpen(device: String, reason: String)
  case writeFailed(String)
  /// The device went away (unplugged USB DAC); the output retries opening it.
  case disconnected(String)

  public var description: String {
    switch self {
    case .cannotOpen(let device, let reason): "cannot open \(device): \(reason)"
    case .writeFailed(let reason): "write failed: \(reason)"
    case .disconnected(let reason): "device disconnected: \(reason)"
    }
  }
}

/// A sink for interleaved stereo 32-bit frames. Used by the output thread only.
public protocol OutputDevice: AnyObject {
  var name: String { get }
  var isOpen: Bool { get }
  var sampleRate: Int { get }
  /// Frames per write that suit the device (its period).
  var chunkFrames: Int { get }
  /// Frames to have decoded before playback starts at `sampleRate`, so that the device's buffer
  /// starts full (0, the default: the device has a start threshold of its own).
  func startFrames(sampleRate: Int) -> Int
  /// Opens for PCM at `sampleRate`, or reopens if the rate or the mode changed.
  func open(sampleRate: Int) throws(OutputError)
  /// Opens for native DSD in `nativeDSD` at the frame rate `sampleRate` (nil: PCM), or reopens
  /// if either changed. A device that takes no native DSD (the default) throws for it.
  func open(sampleRate: Int, nativeDSD: NativeDSDFormat?) throws(OutputError)
  /// The native DSD format the device is open for; nil for PCM.
  var nativeDSD: NativeDSDFormat? { get }
  func close()
  /// Writes frames, blocking as a real device paces. Returns frames taken.
  func write(_ samples: UnsafeBufferPointer<Int32>, dither: Bool) throws(OutputError) -> Int
  /// How long until a write of `frames` would not block, for a device paced by the clock rather
  /// than by a wait of its own (0, the default: `write` waits itself). The output thread waits
  /// that long where a command can cut the wait short.
  func nanosecondsUntilRoom(forFrames frames: Int) -> UInt64
  /// Frames written and not yet heard.
  func delayFrames() -> Int
  /// Whether a frame written now is heard `delayFrames` later by the device's own clock (a sound
  /// card), so a timed start can line its first frame up with the time; a pipe has no such clock.
  var isClocked: Bool { get }
  /// Drops what is queued (a flush), so the device is ready to start again.
  func discardQueued()
  /// The process is ending at a halt: true if what is queued now belongs to whoever reads it
  /// and is no longer taken back (a pipe's reader gets every byte written). False, the default:
  /// what the device holds is dropped at its close, unheard (a sound card).
  func handOverQueued() -> Bool
  /// Starts playing what is queued now rather than at the device's start threshold, so that its
  /// delay is what will be heard (a timed start lines up against it).
  func startQueued()
  /// A pause on a device without a clock: what it still holds afterwards plays out before the
  /// pause (a pipe keeps it all for its reader; the default drops it), and the position is final
  /// at once. A clocked device is not asked: what it holds plays out, as on squeezelite, so
  /// nothing is lost or heard twice whatever its delay estimate.
  func pauseQueued()
  /// Blocks until everything queued has been heard (the output ran out of frames), then stays
  /// ready for more.
  func playOutQueued()
  /// Frames the device holds when full (0, the default: it holds nothing of its own).
  var bufferFrames: Int { get }
}

extension OutputDevice {
  public var nativeDSD: NativeDSDFormat? { nil }
  public func open(sampleRate: Int, nativeDSD: NativeDSDFormat?) throws(OutputError) {
    guard let nativeDSD else { return try open(sampleRate: sampleRate) }
    throw .cannotOpen(device: name, reason: "no native DSD output (\(nativeDSD.alsaName))")
  }
  public var bufferFrames: Int { 0 }
  public func pauseQueued() { discardQueued() }
  public func handOverQueued() -> Bool { false }
  public func startQueued() {}
  public var isClocked: Bool { false }
  public func startFrames(sampleRate: Int) -> Int { 0 }
  public func nanosecondsUntilRoom(forFrames frames: Int) -> UInt64 { 0 }
}
