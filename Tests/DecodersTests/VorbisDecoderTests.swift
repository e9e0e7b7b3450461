import AudioBuffers
import Decoders
import Testing

/// Ogg Vorbis made by Debian's oggenc, checked against Debian's oggdec (16-bit, as `ov_read` gives it).
@Suite struct VorbisDecoderTests {
  private func media(_ dir: TempDir, wav: String, oggenc: String = "") -> (ogg: [UInt8], reference: [Int32]) {
    dir.run("sox -n \(wav)")
    dir.run("oggenc --quiet \(oggenc) -o x.ogg x.wav")
    dir.run("oggdec --quiet -o ref.wav x.ogg")
    return (dir.read("x.ogg"), signedSamples(wavData(dir.read("ref.wav")), bytes: 2))
  }

  @Test(arguments: [UInt64(1), 2])
  func stereoIsBitExactAndTrimmedToItsLength(seed: UInt64) throws {
    let dir = TempDir()
    let (ogg, reference) = media(dir, wav: "-r 44100 -c 2 -b 16 x.wav synth 3 sine 440 pinknoise vol 0.3")
    let decoder = VorbisDecoder()
    let run = try decodeAll(decoder, ogg, seed: seed, maxChunk: 3000)
    #expect(run.finished)
    // oggenc keeps the length: 3 s exactly, the encoder's delay and padding trimmed.
    #expect(reference.count == 2 * 3 * 44100)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
    #expect(
      run.boundaries == [
        TrackBoundary(trackID: 7, frame: 0, format: AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16))
      ])
    #expect(decoder.format == AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16))
  }

  @Test func monoAndOtherRates() throws {
    let dir = TempDir()
    let (ogg, reference) = media(dir, wav: "-r 22050 -c 1 -b 16 x.wav synth 2 sine 100-8000", oggenc: "-q 2")
    let run = try decodeAll(try DecoderFactory.make(codec: .vorbis), ogg, seed: 3)
    expectBitExact(run.samples, reference, channels: 1, shift: 16)
    #expect(run.boundaries.first?.format == AudioFormat(sampleRate: 22050, channels: 1, bitsPerSample: 16))
  }

  /// A stream arriving a little at a time: reads run dry inside pages and resume.
  @Test func highBitrateResumesAfterStarvedReads() throws {
    let dir = TempDir()
    let (ogg, reference) = media(dir, wav: "-r 96000 -c 2 -b 16 x.wav synth 3 whitenoise vol 0.5", oggenc: "-q 10")
    let run = try decodeAll(VorbisDecoder(), ogg, seed: 21, maxChunk: 300)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
  }

  /// Headers bigger than the stream ring (a large comment, as cover art in the tags makes):
  /// opening is retried with the bytes read so far.
  @Test func largeCommentHeaderThroughASmallRing() throws {
    let dir = TempDir()
    var (ogg, reference) = media(dir, wav: "-r 44100 -c 2 -b 16 x.wav synth 2 sine 440 sine 660")
    dir.write("comments.txt", Array(("COMMENT=" + String(repeating: "x", count: 200_000) + "\n").utf8))
    dir.run("vorbiscomment -w -c comments.txt x.ogg")
    ogg = dir.read("x.ogg")
    #expect(ogg.count > 200_000)
    let run = try decodeAll(VorbisDecoder(), ogg, seed: 4, streamCapacity: 40 << 10, maxChunk: 4000)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
  }

  /// Concatenated files (a chained stream, as Ogg radio sends): each link trimmed as oggdec does,
  /// a new format where a link changes it.
  @Test(arguments: [UInt64(1), 2], [3000, 300])
  func chainedStreamIsBitExact(seed: UInt64, maxChunk: Int) throws {
    let dir = TempDir()
    dir.run("sox -n -r 44100 -c 2 -b 16 a.wav synth 1.3 sine 440 pinknoise vol 0.3")
    dir.run("sox -n -r 48000 -c 1 -b 16 b.wav synth 1.7 sine 660 pinknoise vol 0.3")
    dir.run("oggenc --quiet -s 1 -o a.ogg a.wav && oggenc --quiet -s 2 -o b.ogg b.wav && cat a.ogg b.ogg > ab.ogg")
    dir.run("oggdec --quiet -o a.raw -R a.ogg && oggdec --quiet -o b.raw -R b.ogg")
    let first = signedSamples(dir.read("a.raw"), bytes: 2)
    let second = signedSamples(dir.read("b.raw"), bytes: 2)
    let run = try decodeAll(VorbisDecoder(), dir.read("ab.ogg"), seed: seed, maxChunk: maxChunk)
    #expect(run.finished)
    #expect(
      run.boundaries.map(\.format) == [
        AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16),
        AudioFormat(sampleRate: 48000, channels: 1, bitsPerSample: 16),
      ])
    #expect(run.boundaries.map(\.isNewTrack) == [true, false])
    let split = run.boundaries.last?.frame ?? 0
    #expect(split == first.count / 2)
    expectBitExact(Array(run.samples[..<(split * 2)]), first, channels: 2, shift: 16)
    expectBitExact(Array(run.samples[(split * 2)...]), second, channels: 1, shift: 16)
  }

  @Test func truncatedStreamKeepsTheFramesBeforeTheCut() throws {
    let dir = TempDir()
    let (ogg, reference) = media(dir, wav: "-r 44100 -c 2 -b 16 x.wav synth 3 sine 440 pinknoise vol 0.3")
    let run = try decodeAll(VorbisDecoder(), Array(ogg[0..<(ogg.count / 2)]), seed: 5)
    #expect(run.finished)
    let frames = run.samples.count / 2
    #expect(frames > reference.count / 2 / 4)
    #expect(frames < reference.count / 2 * 6 / 10)
    expectBitExact(run.samples, Array(reference[0..<min(reference.count, frames * 2)]), channels: 2, shift: 16)
  }

  @Test func htmlBodyThrows() throws {
    #expect(throws: DecodeError.self) { try decodeAll(VorbisDecoder(), htmlBody) }
  }

  @Test func oggOpusIsNotVorbis() throws {
    let dir = TempDir()
    dir.run("sox -n -r 48000 -c 2 -b 16 x.wav synth 1 sine 440 && opusenc --quiet x.wav x.opus")
    #expect(throws: DecodeError.self) { try decodeAll(VorbisDecoder(), dir.read("x.opus")) }
  }
}

@Suite struct VorbisStarvationTests {
  /// A chained stream whose second link carries a large comment (cover art in the tags, as a
  /// station may send): the next link's headers span many pages and arrive a little at a time.
  @Test(arguments: [UInt64(1), 2])
  func aLargeHeaderInTheNextLinkArrivingSlowly(seed: UInt64) throws {
    let dir = TempDir()
    dir.run("sox -n -r 44100 -c 2 -b 16 a.wav synth 1.5 sine 440 pinknoise vol 0.3")
    dir.run("sox -n -r 44100 -c 2 -b 16 b.wav synth 1.5 sine 660 pinknoise vol 0.3")
    dir.write("comments.txt", Array(("COMMENT=" + String(repeating: "y", count: 120_000) + "\n").utf8))
    dir.run("oggenc --quiet -s 1 -o a.ogg a.wav && oggenc --quiet -s 2 -o b.ogg b.wav")
    dir.run("vorbiscomment -w -c comments.txt b.ogg")
    dir.run("cat a.ogg b.ogg > ab.ogg && oggdec --quiet -R -o ab.raw ab.ogg")
    let reference = signedSamples(dir.read("ab.raw"), bytes: 2)
    let run = try decodeAll(VorbisDecoder(), dir.read("ab.ogg"), seed: seed, streamCapacity: 256 << 10, maxChunk: 700)
    #expect(run.finished)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
  }
}
