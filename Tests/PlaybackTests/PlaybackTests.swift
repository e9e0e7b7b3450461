import AudioBuffers
import Decoders
import Support
import TestSupport
import Testing

@testable import Playback
@testable import SlimProto

/// The engine in this process: cached files through the decoder and output threads into memory,
/// every capture compared with the whole expected track, to the last frame.
@Suite("Playback", .serialized, .timeLimit(.minutes(1)))
struct PlaybackTests {
  let directory = ScratchDirectory()

  /// `track` as a cached WAV file to play.
  private func source(_ track: TestTrack, _ name: String) -> LocalSource {
    LocalSource(path: track.write(to: directory.path, name: name), codec: .pcm)
  }

  /// A server track whose stream connects and brings nothing (its server is going): the server
  /// and the engine's id for the track, once the request reached the server.
  private func streamThatBringsNothing(_ harness: EngineHarness) throws -> (CannedServer, Int) {
    let server = try CannedServer(response: Array("HTTP/1.0 200 OK\r\n\r\n".utf8), holdOpen: true)
    let command = StreamCommand(
      command: .start, autostart: .automatic, format: .pcm, serverPort: UInt16(server.port),
      serverIP: 0x7f00_0001, request: Array("GET /next.wav HTTP/1.0\r\n\r\n".utf8))
    harness.run { $0.handle(.stream(command)) }
    #expect(eventually { !server.requests.isEmpty })
    return (server, harness.run { $0.streamingTrackID }!)
  }

  @Test func queuedTracksPlayBackToBackWithEveryFrame() throws {
    defer { directory.remove() }
    let first = TestTrack(frames: 30_000, seed: 1)
    let second = TestTrack(frames: 20_000, seed: 2)
    let harness = try EngineHarness(allowance: 5000)
    defer { harness.close() }
    let firstFile = source(first, "1.wav")
    let secondFile = source(second, "2.wav")
    let a = harness.run { $0.playLocal(firstFile) }
    #expect(a != nil)
    #expect(eventually { harness.log.contains(.decoded(a!)) })
    let b = harness.run { $0.playLocal(secondFile) }
    harness.sink.allow(nil)
    #expect(eventually { harness.log.contains(.ended) })
    #expect(difference(harness.sink.samples, first.expected + second.expected) == nil)
    let starts = harness.log.all.filter { if case .started = $0 { true } else { false } }
    #expect(starts == [.started(a!), .started(b!)])
    #expect(harness.log.contains(.status(.underrun)))
  }

  /// A DoP track reaches the device bit for bit at any volume (the DAC reads the bits back), and a
  /// PCM track after it is played at that volume again.
  @Test func aDoPTrackIsLeftAloneByTheVolumeAndThePCMTrackAfterItIsNot() throws {
    defer { directory.remove() }
    let channels = DSDFiles.randomChannels(2, bytes: 4096 * 6, seed: 3)
    let dsfPath = directory.path + "/t.dsf"
    try FileIO.writeAtomically(dsfPath, DSDFiles.dsf(channels))
    let pcm = TestTrack(frames: 20_000, seed: 6, sampleRate: 176_400)
    let pcmFile = source(pcm, "after.wav")
    let harness = try EngineHarness(allowance: 5000, dsd: DSDOutput(delivery: .dop))
    defer { harness.close() }
    harness.run { $0.setVolume(left: 0x4000, right: 0x4000) }  // a quarter
    let a = harness.run { $0.playLocal(LocalSource(path: dsfPath, codec: .dsd)) }
    #expect(a != nil)
    #expect(eventually { harness.log.contains(.decoded(a!)) })
    _ = harness.run { $0.playLocal(pcmFile) }
    harness.sink.allow(nil)
    #expect(eventually { harness.log.contains(.ended) })
    let captured = harness.sink.samples
    let dop = DSDFiles.expectedDoP(channels)
    #expect(difference(Array(captured.prefix(dop.count)), dop) == nil)
    let after = captured.dropFirst(dop.count)
    #expect(after.count == pcm.expected.count)
    func rms<C: Collection>(_ samples: C) -> Double where C.Element == Int32 {
      (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)).squareRoot()
    }
    #expect(abs(rms(after) / rms(pcm.expected) - 0.25) < 0.01)
  }

  /// Gapless DoP tracks keep the markers alternating across their boundary, whatever the parity of
  /// the first one's frame count (a DAC that sees a marker repeat may drop out of DSD).
  @Test func doPMarkersAlternateAcrossATrackBoundary() throws {
    defer { directory.remove() }
    let first = DSDFiles.randomChannels(2, bytes: 8194, seed: 21)  // 4097 DoP frames: an odd count
    let second = DSDFiles.randomChannels(2, bytes: 4096, seed: 22)
    let paths = [(first, "1.dsf"), (second, "2.dsf")].map { channels, name in
      let path = directory.path + "/" + name
      try? FileIO.writeAtomically(path, DSDFiles.dsf(channels))
      return path
    }
    // An odd allowance: the device takes an odd number of frames in the middle of a write.
    let harness = try EngineHarness(allowance: 2001, dsd: DSDOutput(delivery: .dop))
    defer { harness.close() }
    let a = harness.run { $0.playLocal(LocalSource(path: paths[0], codec: .dsd)) }
    #expect(eventually { harness.log.contains(.decoded(a!)) })
    _ = harness.run { $0.playLocal(LocalSource(path: paths[1], codec: .dsd)) }
    harness.sink.allow(nil)
    #expect(eventually { harness.log.contains(.ended) })
    let whole = DSDFiles.expectedDoP([first[0] + second[0], first[1] + second[1]])
    #expect(difference(harness.sink.samples, whole) == nil)
  }

  /// When the output runs dry after DoP (the end of the last track, or an underrun), what the
  /// device holds is pushed through with DoP silence, markers running on from the track's last
  /// frame, not with zeros a DAC would take for PCM; after PCM it is zeros as before.
  @Test func runningDryAfterDoPPushesThroughDoPSilence() throws {
    defer { directory.remove() }
    let channels = DSDFiles.randomChannels(2, bytes: 8194, seed: 31)  // 4097 frames: ends on the first marker
    let dsfPath = directory.path + "/t.dsf"
    try FileIO.writeAtomically(dsfPath, DSDFiles.dsf(channels))
    let harness = try EngineHarness(allowance: 2001, dsd: DSDOutput(delivery: .dop), sinkBufferFrames: 3000)
    defer { harness.close() }
    let a = harness.run { $0.playLocal(LocalSource(path: dsfPath, codec: .dsd)) }
    #expect(eventually { harness.log.contains(.decoded(a!)) })
    harness.sink.allow(nil)
    #expect(eventually { harness.log.contains(.ended) })
    let dop = DSDFiles.expectedDoP(channels)
    var expected = dop
    for frame in 4097..<(4097 + 3000) {
      let sample = Int32(bitPattern: UInt32(frame % 2 == 0 ? 0x05 : 0xFA) << 24 | 0x69_6900)
      expected += [sample, sample]
    }
    #expect(difference(harness.sink.samples, expected) == nil)

    let pcm = TestTrack(frames: 5000, seed: 32)
    let pcmHarness = try EngineHarness(sinkBufferFrames: 3000)
    defer { pcmHarness.close() }
    _ = pcmHarness.run { $0.playLocal(source(pcm, "pcm.wav")) }
    #expect(eventually { pcmHarness.log.contains(.ended) })
    #expect(difference(pcmHarness.sink.samples, pcm.expected + [Int32](repeating: 0, count: 6000)) == nil)
  }

  /// `-D 3`: between a PCM track and a DoP track, 3 ms of the new mode's silence (DoP's idle
  /// pattern behind its markers, so the DAC switches while muted): 529 frames, an odd count, so the
  /// DoP frames after it begin on the second marker.
  @Test func aSwitchFromPCMToDoPWaitsInDoPSilence() throws {
    defer { directory.remove() }
    let pcm = TestTrack(frames: 10_000, seed: 7, sampleRate: 176_400)
    let pcmFile = source(pcm, "before.wav")
    let channels = DSDFiles.randomChannels(2, bytes: 4096 * 4, seed: 8)
    let dsfPath = directory.path + "/t.dsf"
    try FileIO.writeAtomically(dsfPath, DSDFiles.dsf(channels))
    let harness = try EngineHarness(
      allowance: 2001, dsd: DSDOutput(delivery: .dop), output: .init(dopSwitchMilliseconds: 3))
    defer { harness.close() }
    let a = harness.run { $0.playLocal(pcmFile) }
    #expect(eventually { harness.log.contains(.decoded(a!)) })
    _ = harness.run { $0.playLocal(LocalSource(path: dsfPath, codec: .dsd)) }
    harness.sink.allow(nil)
    #expect(eventually { harness.log.contains(.ended) })
    func marker(_ frame: Int) -> UInt32 { frame % 2 == 0 ? 0x05 : 0xFA }
    var expected = pcm.expected
    for frame in 0..<529 {
      expected += Array(repeating: Int32(bitPattern: marker(frame) << 24 | 0x69_6900), count: 2)
    }
    for (index, sample) in DSDFiles.expectedDoP(channels).enumerated() {
      let payload = UInt32(bitPattern: sample) & 0x00FF_FFFF
      expected.append(Int32(bitPattern: marker(529 + index / 2) << 24 | payload))
    }
    #expect(difference(harness.sink.samples, expected) == nil)
  }

  /// Native DSD (`-D 3:u32be`): after a PCM track the device is opened again in that format at
  /// the DSD rate / 32, 3 ms of DSD silence come first (264 frames), the frames reach it bit for
  /// bit at a quarter volume, and running dry pushes DSD silence through, not zeros.
  @Test func nativeDSDOpensTheDeviceInItsFormatAndKeepsItsBits() throws {
    defer { directory.remove() }
    let pcm = TestTrack(frames: 10_000, seed: 9)
    let pcmFile = source(pcm, "before.wav")
    let channels = DSDFiles.randomChannels(2, bytes: 4096 * 4 + 6, seed: 10)  // a last sample half idle
    let dsfPath = directory.path + "/t.dsf"
    try FileIO.writeAtomically(dsfPath, DSDFiles.dsf(channels, samples: (4096 * 4 + 6) * 8))
    let harness = try EngineHarness(
      allowance: 2001, dsd: DSDOutput(delivery: .native(.u32be)), output: .init(dopSwitchMilliseconds: 3),
      sinkBufferFrames: 3000)
    defer { harness.close() }
    harness.run { $0.setVolume(left: 0x4000, right: 0x4000) }
    let a = harness.run { $0.playLocal(pcmFile) }
    #expect(eventually { harness.log.contains(.decoded(a!)) })
    let b = harness.run { $0.playLocal(LocalSource(path: dsfPath, codec: .dsd)) }
    // Both decoded before the output goes on: a slow decoder would let it run dry in between.
    #expect(eventually { harness.log.contains(.decoded(b!)) })
    harness.sink.allow(nil)
    #expect(eventually { harness.log.contains(.ended) })
    #expect(
      harness.sink.modes == [
        MemorySink.Mode(sampleRate: 44100, nativeDSD: nil), MemorySink.Mode(sampleRate: 88200, nativeDSD: .u32be),
      ])
    let idle = Int32(bitPattern: 0x6969_6969)
    let dsd =
      [Int32](repeating: idle, count: 2 * 264) + DSDFiles.expectedNativeSamples(channels, bytes: 4)
      + [Int32](repeating: idle, count: 2 * 3000)
    let captured = harness.sink.samples
    #expect(captured.count == pcm.expected.count + dsd.count)
    #expect(difference(Array(captured.suffix(dsd.count)), dsd) == nil)
  }

  @Test func pauseAndResumeLoseAndRepeatNothing() throws {
    defer { directory.remove() }
    let track = TestTrack(frames: 40_000, seed: 3)
    let harness = try EngineHarness(allowance: 10_000)
    defer { harness.close() }
    let file = source(track, "t.wav")
    _ = harness.run { $0.playLocal(file) }
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
    let playingFile = source(playing, "p.wav")
    let prefetchedFile = source(prefetched, "n.wav")
    let a = harness.run { $0.playLocal(playingFile) }!
    #expect(eventually { harness.log.contains(.decoded(a)) && harness.log.contains(.started(a)) })
    let b = harness.run { $0.playLocal(prefetchedFile) }!
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
    let stoppedFile = source(stopped, "s.wav")
    let nextFile = source(next, "x.wav")
    _ = harness.run { $0.playLocal(stoppedFile) }
    #expect(eventually { harness.sink.frameCount == 5000 })
    harness.run { $0.stopLocal() }
    harness.sink.allow(nil)
    _ = harness.run { $0.playLocal(nextFile) }
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
    let wholeFile = source(track, "whole.wav")
    let id = harness.run { $0.playLocal(LocalSource(path: partPath, codec: .pcm)) }!
    #expect(eventually { harness.log.contains(.decoded(id)) })
    #expect(harness.run { $0.continueTrack(id, from: wholeFile) })
    harness.sink.allow(nil)
    #expect(eventually { harness.log.contains(.ended) })
    #expect(difference(harness.sink.samples, track.expected) == nil)
  }

  @Test func aTrackCutShortAfterTheNextOneBeganResumesFromItsCopyAndTheNextIsDropped() throws {
    defer { directory.remove() }
    let cut = TestTrack(frames: 30_000, seed: 11)
    let next = TestTrack(frames: 9000, seed: 12)
    let harness = try EngineHarness(allowance: 1000)
    defer { harness.close() }
    // The server's stream of the first track ended cleanly after 12,345 frames; the second was
    // sent and begun before the server was found gone.
    let partPath = cut.write(to: directory.path, name: "cut-part.wav", bytes: 44 + 12_345 * 4)
    let a = harness.run { $0.playLocal(LocalSource(path: partPath, codec: .pcm)) }!
    #expect(eventually { harness.log.contains(.decoded(a)) })
    let nextFile = source(next, "next.wav")
    let b = harness.run { $0.playLocal(nextFile) }!
    #expect(eventually { harness.log.contains(.decoded(b)) })
    let progress = harness.run { $0.trackProgress() }
    #expect(progress.map(\.decodedFrames) == [12_345, 9000])
    let wholeFile = source(cut, "cut-whole.wav")
    #expect(harness.run { $0.continueTrack(a, from: wholeFile) })
    #expect(harness.run { $0.trackProgress().map(\.id) } == [a])
    harness.sink.allow(nil)
    #expect(eventually { harness.log.all.filter { $0 == .decoded(a) }.count == 2 })
    // The cache queues the next track again behind it.
    _ = harness.run { $0.playLocal(nextFile) }
    #expect(eventually { harness.sink.frameCount >= cut.frames + next.frames })
    #expect(difference(harness.sink.samples, cut.expected + next.expected) == nil)
  }

  @Test func aServerTrackNotBegunContinuesFromItsCopyFromItsFirstFrame() throws {
    defer { directory.remove() }
    let first = TestTrack(frames: 8000, seed: 13)
    let second = TestTrack(frames: 7000, seed: 14)
    let harness = try EngineHarness(allowance: 1000)
    defer { harness.close() }
    let a = harness.run { $0.playLocal(source(first, "first.wav")) }!
    #expect(eventually { harness.log.contains(.decoded(a)) })
    // The server sent the next track and went: its stream connects and brings nothing.
    let (server, b) = try streamThatBringsNothing(harness)
    defer { server.close() }
    #expect(b > a)
    let secondFile = source(second, "second.wav")
    #expect(harness.run { $0.continueTrack(b, from: secondFile) })
    harness.sink.allow(nil)
    #expect(eventually { harness.log.contains(.ended) })
    #expect(difference(harness.sink.samples, first.expected + second.expected) == nil)
  }

  @Test func whatACancelledDecoderJobReportedLateDoesNotTouchTheCopyThatReplacedIt() throws {
    defer { directory.remove() }
    let first = TestTrack(frames: 6000, seed: 15)
    let second = TestTrack(frames: 100_000, seed: 16)
    let harness = try EngineHarness(allowance: 1000)
    defer { harness.close() }
    let a = harness.run { $0.playLocal(source(first, "first.wav")) }!
    #expect(eventually { harness.log.contains(.decoded(a)) })
    let (server, b) = try streamThatBringsNothing(harness)
    defer { server.close() }
    let streamJob = harness.run { engine in engine.tracks.first { $0.id == b }?.decodeJob }!
    let secondFile = source(second, "second.wav")
    // The stream's decoder failed just before the handoff; its report reaches the loop after.
    harness.run { engine in
      #expect(engine.continueTrack(b, from: secondFile))
      engine.handle(.failed(job: streamJob, frames: 0, message: "stream ended inside its header"))
    }
    harness.sink.allow(nil)
    #expect(eventually { harness.log.contains(.ended) })
    #expect(!harness.log.contains(.failed(b)))
    #expect(difference(harness.sink.samples, first.expected + second.expected) == nil)
  }

  /// A FLAC whose header is sound and whose audio is noise began as audio: it is over where its
  /// audio ends (STMd, as squeezelite reports it), not refused (STMn), so the server moves on.
  @Test func audioThatBreaksOffIsReportedDecodedNotUnsupported() throws {
    defer { directory.remove() }
    let harness = try EngineHarness()
    defer { harness.close() }
    // fLaC, then STREAMINFO (last block): 4096-sample blocks, 44.1 kHz, 2 channels, 16 bits.
    var bytes = Array("fLaC".utf8) + [0x80, 0, 0, 34, 0x10, 0, 0x10, 0, 0, 0, 0, 0, 0, 0]
    bytes += [0x0A, 0xC4, 0x42, 0xF0, 0, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 16)
    var generator = SystemRandomNumberGenerator()
    bytes += (0..<65536).map { _ in UInt8.random(in: 0...255, using: &generator) & 0xF7 }
    let path = directory.path + "/noise.flac"
    try? Support.FileIO.writeAtomically(path, bytes)
    let id = harness.run { $0.playLocal(LocalSource(path: path, codec: .flac)) }!
    #expect(eventually { harness.log.contains(.failed(id)) })
    #expect(harness.log.contains(.status(.decoderReady)))
    #expect(!harness.log.contains(.status(.notSupported)))
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
    let good = source(track, "good.wav")
    harness.run { $0.stopLocal() }
    _ = harness.run { $0.playLocal(good) }
    #expect(eventually { harness.log.contains(.ended) })
    #expect(difference(harness.sink.samples, track.expected) == nil)
  }
}

extension PlaybackTests {
  @Test func anOutputThatRunsDryWhileTheStreamIsOpenReportsAnUnderrunThenTheEnd() throws {
    let track = TestTrack(frames: 22_050, seed: 10)
    var wav = track.wav
    // Data size "to the end of the stream", as a live encoder writes it: the track goes on while
    // the connection does.
    wav.replaceSubrange(40..<44, with: [0xff, 0xff, 0xff, 0xff])
    let server = try CannedServer(response: Array("HTTP/1.0 200 OK\r\n\r\n".utf8) + wav, holdOpen: true)
    let harness = try EngineHarness()
    defer { harness.close() }
    let command = StreamCommand(
      command: .start, autostart: .automatic, format: .pcm, serverPort: UInt16(server.port),
      serverIP: 0x7f00_0001, request: Array("GET /live.wav HTTP/1.0\r\n\r\n".utf8))
    harness.run { $0.handle(.stream(command)) }
    // Every frame sent is played, then the output runs dry with the stream still open: STMo.
    #expect(eventually { harness.sink.frameCount == track.frames })
    #expect(eventually { harness.log.contains(.status(.outputUnderrun)) })
    #expect(harness.log.contains(.status(.connecting)) && harness.log.contains(.status(.trackStarted)))
    #expect(!harness.log.contains(.status(.underrun)))
    // The connection ends: every byte was decoded and played, which is the end of playback (STMu).
    server.close()
    #expect(eventually { harness.log.contains(.status(.underrun)) })
    #expect(difference(harness.sink.samples, track.expected) == nil)
    #expect(harness.log.all.filter { $0 == .status(.outputUnderrun) }.count == 1)
  }
}
