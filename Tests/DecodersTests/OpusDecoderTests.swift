import AudioBuffers
import Decoders
import Testing

@Suite struct OpusDecoderTests {
  private func media(_ dir: TempDir, wav: String, opusenc: String = "") -> (opus: [UInt8], reference: [Int32]) {
    dir.run("sox -n \(wav)")
    dir.run("opusenc --quiet \(opusenc) x.wav x.opus")
    dir.run("opusdec --quiet --no-dither --rate 48000 x.opus ref.wav")
    return (dir.read("x.opus"), signedSamples(wavData(dir.read("ref.wav")), bytes: 2))
  }

  @Test(arguments: [UInt64(1), 2])
  func stereoIsBitExact(seed: UInt64) throws {
    let dir = TempDir()
    let (opus, reference) = media(dir, wav: "-r 44100 -c 2 -b 16 x.wav synth 3 sine 440 pinknoise vol 0.3")
    let decoder = OpusDecoder()
    let run = try decodeAll(decoder, opus, seed: seed, maxChunk: 3000)
    #expect(run.finished)
    // Same length as opusdec: pre-skip and end trimming applied.
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
    #expect(
      run.boundaries == [
        TrackBoundary(trackID: 7, frame: 0, format: AudioFormat(sampleRate: 48000, channels: 2, bitsPerSample: 16))
      ])
    #expect(decoder.format == AudioFormat(sampleRate: 48000, channels: 2, bitsPerSample: 16))
  }

  /// Pages larger than the read threshold: op_read runs dry mid-page (OP_EREAD) and resumes.
  @Test func highBitrateResumesAfterStarvedReads() throws {
    let dir = TempDir()
    let (opus, reference) = media(
      dir, wav: "-r 48000 -c 2 -b 16 x.wav synth 4 whitenoise vol 0.5", opusenc: "--bitrate 320 --max-delay 1000")
    // Slow arrival: less than a packet's worth per call, so the ring runs dry inside a page.
    let run = try decodeAll(OpusDecoder(), opus, seed: 21, maxChunk: 300)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
  }

  @Test func monoIsBitExact() throws {
    let dir = TempDir()
    let (opus, reference) = media(dir, wav: "-r 48000 -c 1 -b 16 x.wav synth 2 sine 100-8000", opusenc: "--bitrate 48")
    let run = try decodeAll(try DecoderFactory.make(codec: .opus), opus, seed: 3)
    expectBitExact(run.samples, reference, channels: 1, shift: 16)
    #expect(run.boundaries.first?.format.channels == 1)
  }

  /// Headers bigger than the stream ring: opening is retried with the recorded head.
  @Test func largeCommentHeaderThroughASmallRing() throws {
    let dir = TempDir()
    let (opus, reference) = media(
      dir, wav: "-r 48000 -c 2 -b 16 x.wav synth 2 sine 440 sine 660", opusenc: "--padding 300000")
    #expect(opus.count > 300_000)
    let run = try decodeAll(OpusDecoder(), opus, seed: 4, streamCapacity: 40 << 10, maxChunk: 4000)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
  }

  /// Concatenated Ogg Opus files (a chained stream, as Ogg radio sends): opusfile moves on to
  /// the next link, both trimmed exactly as opusdec does.
  @Test(arguments: [UInt64(1), 2], [3000, 300])
  func chainedStreamIsBitExact(seed: UInt64, maxChunk: Int) throws {
    let dir = TempDir()
    dir.run("sox -n -r 48000 -c 2 -b 16 a.wav synth 1.3 sine 440 pinknoise vol 0.3")
    dir.run("sox -n -r 44100 -c 2 -b 16 b.wav synth 1.7 sine 660 pinknoise vol 0.3")
    dir.run("opusenc --quiet --serial 1 a.wav a.opus && opusenc --quiet --serial 2 b.wav b.opus")
    dir.run("cat a.opus b.opus > ab.opus")
    dir.run("opusdec --quiet --no-dither --rate 48000 ab.opus ref.wav")
    let reference = signedSamples(wavData(dir.read("ref.wav")), bytes: 2)
    let run = try decodeAll(OpusDecoder(), dir.read("ab.opus"), seed: seed, maxChunk: maxChunk)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
    #expect(run.boundaries.count == 1)
  }

  /// The next link's headers span many pages (padding in its tags) and arrive a little at a time:
  /// no read starts inside them before they are all there.
  @Test(arguments: [UInt64(1), 2])
  func aLargeHeaderInTheNextLinkArrivingSlowly(seed: UInt64) throws {
    let dir = TempDir()
    dir.run("sox -n -r 48000 -c 2 -b 16 a.wav synth 1.5 sine 440 pinknoise vol 0.3")
    dir.run("sox -n -r 48000 -c 2 -b 16 b.wav synth 1.5 sine 660 pinknoise vol 0.3")
    dir.run("opusenc --quiet --serial 1 a.wav a.opus && opusenc --quiet --serial 2 --padding 150000 b.wav b.opus")
    dir.run("cat a.opus b.opus > ab.opus")
    dir.run("opusdec --quiet --no-dither --rate 48000 ab.opus ref.wav")
    let reference = signedSamples(wavData(dir.read("ref.wav")), bytes: 2)
    let run = try decodeAll(OpusDecoder(), dir.read("ab.opus"), seed: seed, streamCapacity: 256 << 10, maxChunk: 700)
    #expect(run.finished)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
  }

  @Test func chainedStreamWithAChannelChangePublishesABoundary() throws {
    let dir = TempDir()
    dir.run("sox -n -r 48000 -c 2 -b 16 a.wav synth 1 sine 440")
    dir.run("sox -n -r 48000 -c 1 -b 16 b.wav synth 1 sine 660")
    dir.run("opusenc --quiet --serial 1 a.wav a.opus && opusenc --quiet --serial 2 b.wav b.opus")
    dir.run("cat a.opus b.opus > ab.opus")
    let run = try decodeAll(OpusDecoder(), dir.read("ab.opus"), seed: 4)
    #expect(run.boundaries.map(\.format.channels) == [2, 1])
    #expect(run.boundaries.map(\.isNewTrack) == [true, false])
    #expect(run.boundaries.last?.frame == 48000)
    #expect(run.samples.count / 2 == 96000)
  }

  @Test func truncatedStreamKeepsTheFramesBeforeTheCut() throws {
    let dir = TempDir()
    let (opus, reference) = media(dir, wav: "-r 48000 -c 2 -b 16 x.wav synth 3 sine 440 pinknoise vol 0.3")
    var samples: [Int32] = []
    do {
      let run = try decodeAll(OpusDecoder(), Array(opus[0..<(opus.count / 2)]), seed: 5)
      #expect(run.finished)
      samples = run.samples
    } catch {
      Issue.record("truncated Opus threw \(error) instead of finishing")
    }
    let frames = samples.count / 2
    #expect(frames > reference.count / 2 / 4)
    #expect(frames < reference.count / 2 * 6 / 10)
    expectBitExact(samples, Array(reference[0..<min(reference.count, frames * 2)]), channels: 2, shift: 16)
  }

  @Test func htmlBodyThrows() throws {
    #expect(throws: DecodeError.self) { try decodeAll(OpusDecoder(), htmlBody) }
  }

  @Test func oggWithoutOpusThrows() throws {
    // An Ogg page header ("OggS", version 0, BOS) carrying a packet that is not OpusHead.
    var page: [UInt8] = Array("OggS".utf8) + [0, 2] + [UInt8](repeating: 0, count: 8) + [1, 0, 0, 0] + [0, 0, 0, 0]
    page += [0, 0, 0, 0] + [1, 30] + Array("\u{1}vorbis-not-really-opus-at-al".utf8)
    #expect(throws: DecodeError.self) { try decodeAll(OpusDecoder(), page + htmlBody) }
  }
}
