import AudioBuffers
import Decoders
import Support
import Testing

@testable import Playback
@testable import SlimProto

/// The engine in this process: cached files through the decoder and output threads into memory,
/// every capture compared with the whole expected track, to the last frame.
@Suite("Playback", .serialized, .timeLimit(.minutes(1)))
struct PlaybackTests {
  let directory = ScratchDirectory()

  @Test func queuedTracksPlayBackToBackWithEveryFrame() throws {
    defer { directory.remove() }
    let first = TestTrack(frames: 30_000, seed: 1)
    let second = TestTrack(frames: 20_000, seed: 2)
    let harness = try EngineHarness(allowance: 5000)
    defer { harness.close() }
    let firstPath = first.write(to: directory.path, name: "1.wav")
    let secondPath = second.write(to: directory.path, name: "2.wav")
    let a = harness.run { $0.playLocal(LocalSource(path: firstPath, codec: .pcm)) }
    #expect(a != nil)
    #expect(eventually { harness.log.contains(.decoded(a!)) })
    let b = harness.run { $0.playLocal(LocalSource(path: secondPath, codec: .pcm)) }
    harness.sink.allow(nil)
    #expect(eventually { harness.log.contains(.ended) })
    #expect(difference(harness.sink.samples, first.expected + second.expected) == nil)
    let starts = harness.log.all.filter { if case .started = $0 { true } else { false } }
    #expect(starts == [.started(a!), .started(b!)])
    #expect(harness.log.contains(.status(.underrun)))
  }

  @Test func pauseAndResumeLoseAndRepeatNothing() throws {
    defer { directory.remove() }
    let track = TestTrack(frames: 40_000, seed: 3)
    let harness = try EngineHarness(allowance: 10_000)
    defer { harness.close() }
    let path = track.write(to: directory.path, name: "t.wav")
    _ = harness.run { $0.playLocal(LocalSource(path: path, codec: .pcm)) }
    #expect(eventually { harness.sink.frameCount == 10_000 })
    harness.run { $0.pauseLocal() }
    #expect(harness.run { $0.isPaused })
    harness.sink.allow(nil)
    // Paused, the output takes nothing more even though the device would.
    #expect(!eventually(within: 0.2) { harness.sink.frameCount > 10_000 })
    harness.run { $0.resumeLocal() }
    #expect(eventually { harness.log.contains(.ended) })
    #expect(difference(harness.sink.samples, track.expected) == nil)
  }

  @Test func flushKeepsThePlayingTrackAndDropsThePrefetchedOne() throws {
    defer { directory.remove() }
    let playing = TestTrack(frames: 10_000, seed: 4)
    let prefetched = TestTrack(frames: 8000, seed: 5)
    let harness = try EngineHarness(allowance: 4000)
    defer { harness.close() }
    let playingPath = playing.write(to: directory.path, name: "p.wav")
    let prefetchedPath = prefetched.write(to: directory.path, name: "n.wav")
    let a = harness.run { $0.playLocal(LocalSource(path: playingPath, codec: .pcm)) }!
    #expect(eventually { harness.log.contains(.decoded(a)) && harness.log.contains(.started(a)) })
    let b = harness.run { $0.playLocal(LocalSource(path: prefetchedPath, codec: .pcm)) }!
    #expect(eventually { harness.log.contains(.decoded(b)) })
    // `strm f`: the server dropped what follows the playing track.
    harness.run { $0.handle(.stream(StreamCommand(command: .flush))) }
    harness.sink.allow(nil)
    #expect(eventually { harness.log.contains(.ended) })
    #expect(difference(harness.sink.samples, playing.expected) == nil)
    #expect(!harness.log.contains(.started(b)))
  }

  @Test func stopDropsEverythingAndTheNextTrackStartsClean() throws {
    defer { directory.remove() }
    let stopped = TestTrack(frames: 50_000, seed: 6)
    let next = TestTrack(frames: 12_345, seed: 7)
    let harness = try EngineHarness(allowance: 5000)
    defer { harness.close() }
    let stoppedPath = stopped.write(to: directory.path, name: "s.wav")
    let nextPath = next.write(to: directory.path, name: "x.wav")
    _ = harness.run { $0.playLocal(LocalSource(path: stoppedPath, codec: .pcm)) }
    #expect(eventually { harness.sink.frameCount == 5000 })
    harness.run { $0.stopLocal() }
    harness.sink.allow(nil)
    _ = harness.run { $0.playLocal(LocalSource(path: nextPath, codec: .pcm)) }
    #expect(eventually { harness.log.contains(.ended) })
    #expect(difference(harness.sink.samples, Array(stopped.expected.prefix(10_000)) + next.expected) == nil)
  }

  @Test func aTrackCutShortContinuesFromItsCompleteCopyAtTheExactFrame() throws {
    defer { directory.remove() }
    let track = TestTrack(frames: 44_100, seed: 8)
    let harness = try EngineHarness(allowance: 2000)
    defer { harness.close() }
    // The stream broke after 17,003 frames (not a block boundary of anything).
    let partPath = track.write(to: directory.path, name: "part.wav", bytes: 44 + 17_003 * 4)
    let wholePath = track.write(to: directory.path, name: "whole.wav")
    let id = harness.run { $0.playLocal(LocalSource(path: partPath, codec: .pcm)) }!
    #expect(eventually { harness.log.contains(.decoded(id)) })
    #expect(harness.run { $0.continueTrack(id, from: LocalSource(path: wholePath, codec: .pcm)) })
    harness.sink.allow(nil)
    #expect(eventually { harness.log.contains(.ended) })
    #expect(difference(harness.sink.samples, track.expected) == nil)
  }

  @Test func aDamagedFileIsReportedAndPlaybackGoesOn() throws {
    defer { directory.remove() }
    let harness = try EngineHarness()
    defer { harness.close() }
    let path = directory.path + "/bad.flac"
    try? Support.FileIO.writeAtomically(path, Array("<html>not found</html>".utf8))
    let id = harness.run { $0.playLocal(LocalSource(path: path, codec: .flac)) }!
    #expect(eventually { harness.log.contains(.failed(id)) })
    #expect(harness.log.contains(.status(.notSupported)))
    let track = TestTrack(frames: 5000, seed: 9)
    let good = track.write(to: directory.path, name: "good.wav")
    harness.run { $0.stopLocal() }
    _ = harness.run { $0.playLocal(LocalSource(path: good, codec: .pcm)) }
    #expect(eventually { harness.log.contains(.ended) })
    #expect(difference(harness.sink.samples, track.expected) == nil)
  }
}
