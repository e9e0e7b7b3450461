import Testing

@testable import StreamFetch

@Suite("ReadPacing")
struct ReadPacingTests {
  @Test func aStreamAtPlaySpeedWaitsWhileTheDecoderWaitsPatientlyForAChunk() {
    // A 4 KiB packet, 10 KiB buffered, the decoder asleep until 32 KiB more are there.
    #expect(ReadPacing.next(lastRead: 4096, ringFill: 10_240, wantedFill: 10_240 + 32_768) == .after(milliseconds: 100))
  }

  @Test func aSenderAheadOfUsIsReadAtOnce() {
    #expect(ReadPacing.next(lastRead: 65_536, ringFill: 10_240, wantedFill: 10_240 + 32_768) == .now)
  }

  @Test func aDecoderShortOfAudioGetsEveryByteAtOnce() {
    // Under 200 ms queued the decoder waits for any byte: wanted is one more than buffered.
    #expect(ReadPacing.next(lastRead: 1500, ringFill: 3000, wantedFill: 3001) == .now)
  }

  @Test func aDecoderThatIsNotWaitingForInputDoesNotHoldTheReadBack() {
    #expect(ReadPacing.next(lastRead: 1500, ringFill: 3000, wantedFill: 0) == .now)
  }

  @Test func theChunkAlmostThereIsReadAtOnce() {
    // Less than a small read is missing: the next packet probably completes it.
    #expect(ReadPacing.next(lastRead: 4096, ringFill: 30_000, wantedFill: 40_000) == .now)
  }
}
