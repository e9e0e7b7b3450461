import Testing

@testable import AudioOutput

@Suite struct OutputSupplyTests {
  let rate = 44100
  let chunk = 1024
  /// 200 ms of audio queued in the device.
  let deviceBuffer = 8820

  @Test func aLateDecoderIsWaitedForWhileTheDeviceHoldsAudio() {
    var supply = OutputSupply()
    let action = supply.ringEmpty(queuedFrames: deviceBuffer, chunkFrames: chunk, sampleRate: rate, now: 0)
    // (8820 − 2 × 1024) frames ≈ 153 ms could be waited; one wait is at most 20 ms.
    #expect(action == .wait(milliseconds: 20))
    #expect(!supply.isDry)
    supply.framesArrived()
    #expect(supply.state == .flowing)
  }

  @Test func waitsShrinkAsTheDeviceEmptiesThenItIsPaddedAndReportedDry() {
    var supply = OutputSupply()
    _ = supply.ringEmpty(queuedFrames: deviceBuffer, chunkFrames: chunk, sampleRate: rate, now: 0)
    // 2048 + 441 frames left: 10 ms to spare.
    let late = supply.ringEmpty(queuedFrames: 2048 + 441, chunkFrames: chunk, sampleRate: rate, now: 150_000_000)
    #expect(late == .wait(milliseconds: 10))
    let starving = supply.ringEmpty(queuedFrames: 2048, chunkFrames: chunk, sampleRate: rate, now: 160_000_000)
    #expect(starving == .playOut)
    supply.ranDry()
    #expect(supply.isDry)
    #expect(supply.ringEmpty(queuedFrames: 0, chunkFrames: chunk, sampleRate: rate, now: 300_000_000) == .stayDry)
  }

  @Test func aDeviceWhoseQueueNeverShrinksIsPaddedOnceItsAudioWouldHaveBeenHeard() {
    // A sound server may keep reporting its tail as queued: the wait ends when that much audio
    // would have played, counted from the moment the ring emptied.
    var supply = OutputSupply()
    let heard: UInt64 = UInt64(deviceBuffer) * 1_000_000_000 / 44100
    _ = supply.ringEmpty(queuedFrames: deviceBuffer, chunkFrames: chunk, sampleRate: rate, now: 1_000)
    #expect(
      supply.ringEmpty(queuedFrames: deviceBuffer, chunkFrames: chunk, sampleRate: rate, now: heard)
        == .wait(milliseconds: 20))
    #expect(
      supply.ringEmpty(queuedFrames: deviceBuffer, chunkFrames: chunk, sampleRate: rate, now: heard + 1_000)
        == .playOut)
  }

  @Test func aClosedOrNearlyEmptyDeviceIsPaddedAtOnce() {
    var closed = OutputSupply()
    #expect(closed.ringEmpty(queuedFrames: 0, chunkFrames: chunk, sampleRate: rate, now: 5) == .playOut)
    var nearlyEmpty = OutputSupply()
    #expect(nearlyEmpty.ringEmpty(queuedFrames: 2 * chunk, chunkFrames: chunk, sampleRate: rate, now: 5) == .playOut)
  }

  @Test func framesArrivingAfterAWaitStartANewDeadlineNextTime() {
    var supply = OutputSupply()
    _ = supply.ringEmpty(queuedFrames: deviceBuffer, chunkFrames: chunk, sampleRate: rate, now: 0)
    supply.framesArrived()
    // A second shortfall half a second later counts from its own start, not the first deadline.
    let again = supply.ringEmpty(queuedFrames: deviceBuffer, chunkFrames: chunk, sampleRate: rate, now: 500_000_000)
    #expect(again == .wait(milliseconds: 20))
    #expect(supply.state == .waitingForDecoder(deadline: 500_000_000 + 200_000_000))
  }
}
