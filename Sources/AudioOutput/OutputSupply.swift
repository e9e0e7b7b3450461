/// What the output thread does when its ring is empty. A decoder a few milliseconds late (page
/// faults at a track's start, a busy machine) must not cost the listener a device buffer of
/// silence in the middle of a track; but once the device itself is about to run out, the ring
/// has truly run dry: the device's last frames are pushed through with silence and the dry
/// state is reported (the end of a track, or an underrun).
///
/// Pure: the output thread feeds it the device's queue and the clock, and acts on the answer.
struct OutputSupply: Equatable {
  enum State: Equatable {
    /// Frames flow from the ring.
    case flowing
    /// The ring is empty while the device still holds audio: waiting for the decoder until this
    /// CLOCK_MONOTONIC time (ns), when the device would have played what it held.
    case waitingForDecoder(deadline: UInt64)
    /// Reported dry; stays so until frames arrive.
    case dry
  }

  enum Action: Equatable {
    /// Wait for frames this long, then ask again.
    case wait(milliseconds: Int32)
    /// Push the device's queue through with silence, then report dry unless frames arrived.
    case playOut
    /// Already reported: wait for frames.
    case stayDry
  }

  /// Frames the device must still hold for the output to wait rather than pad: two writes' worth,
  /// so the decoder's late frames are written before the device starves.
  static func margin(chunkFrames: Int) -> Int { 2 * chunkFrames }

  /// The longest single wait, so a device that reports a stale queue is asked again soon.
  static let longestWaitMilliseconds = 20

  private(set) var state = State.flowing

  var isDry: Bool { state == .dry }

  /// The ring is empty; `queuedFrames` is what the device holds (0 when it is closed).
  mutating func ringEmpty(queuedFrames: Int, chunkFrames: Int, sampleRate: Int, now: UInt64) -> Action {
    let deadline: UInt64
    switch state {
    case .dry:
      return .stayDry
    case .waitingForDecoder(let waitingUntil):
      deadline = waitingUntil
    case .flowing:
      let rate = UInt64(max(1, sampleRate))
      deadline = now &+ UInt64(max(0, queuedFrames)) * 1_000_000_000 / rate
    }
    let spare = queuedFrames - Self.margin(chunkFrames: chunkFrames)
    guard spare > 0, now < deadline else { return .playOut }
    state = .waitingForDecoder(deadline: deadline)
    let milliseconds = spare * 1000 / max(1, sampleRate)
    return .wait(milliseconds: Int32(min(max(1, milliseconds), Self.longestWaitMilliseconds)))
  }

  /// The device was padded and the ring is still empty: the dry state is to be reported.
  mutating func ranDry() { state = .dry }

  /// Frames are there again (or everything was flushed).
  mutating func framesArrived() { state = .flowing }
}
