import AudioBuffers
import Decoders
import TestSupport
import Testing

/// AAC made by Debian's ffmpeg, checked against Debian's faad (the same libfaad, 24-bit raw, as
/// squeezelite asks libfaad for too). In MP4
/// the encoder's priming and padding are trimmed: the decode is exactly as long as the source.
@Suite struct AACDecoderTests {
  /// The MP4's first packet's time (negative: the encoder's priming, which the edit list skips),
  /// from ffprobe.
  private func priming(_ dir: TempDir, _ file: String) -> Int {
    dir.run(
      "ffprobe -v error -select_streams a -show_entries packet=pts -of default=nw=1:nk=1 \(file) | head -1 > pts.txt")
    let text = String(decoding: dir.read("pts.txt"), as: UTF8.self)
    return -(text.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 0)
  }

  /// ffmpeg's AAC-LC in MP4 at 22.05 kHz made HE-AAC as iTunes-style files signal it: the
  /// AudioSpecificConfig's SBR extension (sync 0x2B7, type 5), which ffmpeg writes with its
  /// sbrPresentFlag 0, set to 1 with the extension's rate index 4 (44.1 kHz). Debian has no
  /// encoder that writes SBR data; with this signal libfaad runs its SBR stage all the same.
  private func heAAC(_ dir: TempDir, pns: Bool = true) throws -> [UInt8] {
    dir.run("sox -n -r 22050 -c 2 -b 16 x.wav synth 3.3 sine 440 pinknoise vol 0.3")
    dir.run("ffmpeg -v error -y -i x.wav -c:a aac \(pns ? "" : "-aac_pns 0 ")-b:a 64k -movflags +faststart lc.m4a")
    var file = dir.read("lc.m4a")
    let specific: [UInt8] = [0x05, 0x80, 0x80, 0x80, 0x05, 0x13, 0x90, 0x56, 0xE5, 0x00]
    let at = (0...(file.count - specific.count)).first { Array(file[$0..<$0 + specific.count]) == specific }
    file[try #require(at) + specific.count - 1] = 0xA0
    dir.write("he.m4a", file)
    return file
  }

  @Test(arguments: [UInt64(1), 2])
  func mp4IsFaadTrimmedToTheSourceLength(seed: UInt64) throws {
    let dir = TempDir()
    dir.run("sox -n -r 44100 -c 2 -b 16 x.wav synth 3.3 sine 440 pinknoise vol 0.3")
    dir.run("ffmpeg -v error -y -i x.wav -c:a aac -b:a 160k -movflags +faststart x.m4a")
    dir.run("faad -q -b 2 -f 2 -o ref.raw x.m4a")
    let source = signedSamples(wavData(dir.read("x.wav")), bytes: 2)
    let faad = signedSamples(dir.read("ref.raw"), bytes: 3)
    // faad (libfaad) drops its first frame (1024 frames) itself: the rest of the priming, then
    // the source's length.
    let skip = 2 * (priming(dir, "x.m4a") - 1024)
    #expect(skip >= 0)
    let expected = Array(faad[skip..<(skip + source.count)])
    let decoder = try AACDecoder()
    let run = try decodeAll(decoder, dir.read("x.m4a"), seed: seed, maxChunk: 3000)
    #expect(run.finished)
    expectBitExact(run.samples, expected, channels: 2, shift: 8)
    #expect(run.boundaries.map(\.format) == [AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 24)])
  }

  /// Mono: libfaad (and so faad) gives two equal channels (it decodes mono as possible
  /// Parametric Stereo); both play.
  @Test func monoAt48kHz() throws {
    let dir = TempDir()
    dir.run("sox -n -r 48000 -c 1 -b 16 x.wav synth 2.2 sine 100-8000 vol 0.5")
    dir.run("ffmpeg -v error -y -i x.wav -c:a aac -movflags +faststart x.m4a")
    dir.run("faad -q -b 2 -f 2 -o ref.raw x.m4a")
    let sourceFrames = wavData(dir.read("x.wav")).count / 2
    let faad = signedSamples(dir.read("ref.raw"), bytes: 3)
    let skip = 2 * (priming(dir, "x.m4a") - 1024)
    let expected = Array(faad[skip..<(skip + 2 * sourceFrames)])
    #expect(stride(from: 0, to: expected.count, by: 2).allSatisfy { expected[$0] == expected[$0 + 1] })
    let run = try decodeAll(try AACDecoder(), dir.read("x.m4a"), seed: 8)
    expectBitExact(run.samples, expected, channels: 2, shift: 8)
    #expect(run.boundaries.first?.format.sampleRate == 48000)
  }

  /// A start mid-track (a seek in a cached copy): decoding begins two packets early (the
  /// transform's overlap), then plays from the exact frame, as long as the rest of the track and
  /// equal to the decode from the start, when the encoder substituted no noise (PNS off: with it,
  /// libfaad's noise generator would be in another state than after a decode from the start, and
  /// the substituted bands would hold other noise).
  @Test(arguments: [1, 1023, 1024, 50_000, 140_000])
  func aStartMidTrackBeginsAtItsFrame(startFrame: Int) throws {
    let dir = TempDir()
    dir.run("sox -n -r 44100 -c 2 -b 16 x.wav synth 3.3 sine 440 pinknoise vol 0.3")
    dir.run("ffmpeg -v error -y -i x.wav -c:a aac -aac_pns 0 -b:a 160k -movflags +faststart x.m4a")
    let m4a = dir.read("x.m4a")
    let whole = try decodeAll(try AACDecoder(), m4a, seed: 10, maxChunk: 3000)
    let run = try decodeAll(try AACDecoder(), m4a, seed: 10, maxChunk: 3000, startFrame: startFrame)
    #expect(run.finished)
    #expect(firstDifference(run.samples, Array(whole.samples[(2 * startFrame)...])) == nil)
  }

  /// The same for HE-AAC, whose SBR stage needs frames of its own to settle (about 1500 output
  /// frames after a cold start): two packets early are 4096 output frames, enough.
  @Test(arguments: [1, 2047, 2048, 50_000, 140_000])
  func heAACStartMidTrackBeginsAtItsFrame(startFrame: Int) throws {
    let dir = TempDir()
    let file = try heAAC(dir, pns: false)
    let whole = try decodeAll(try AACDecoder(), file, seed: 11, maxChunk: 3000)
    let run = try decodeAll(try AACDecoder(), file, seed: 11, maxChunk: 3000, startFrame: startFrame)
    #expect(run.finished)
    #expect(whole.samples.count > 2 * 140_000)
    #expect(firstDifference(run.samples, Array(whole.samples[(2 * startFrame)...])) == nil)
  }

  /// ADTS (a `.aac` file, AAC radio): no container, no trim — everything faad decodes, whatever
  /// the network's pieces. At 22.05 kHz, as low-rate AAC radio comes, libfaad takes the stream for
  /// implicitly signalled SBR (HE-AAC's spectral band replication) and runs its SBR stage: twice
  /// the rate, 2048 frames a packet (no HE-AAC encoder in Debian: this is the rate-doubling path
  /// such streams take).
  @Test(arguments: [(44100, UInt64(1)), (44100, 2), (22050, 3), (22050, 4)])
  func adtsStreamEqualsFaad(rate: Int, seed: UInt64) throws {
    let dir = TempDir()
    dir.run("sox -n -r \(rate) -c 2 -b 16 x.wav synth 2.5 sine 440 pinknoise vol 0.3")
    dir.run("ffmpeg -v error -y -i x.wav -c:a aac -b:a \(rate < 32000 ? "64k" : "128k") -f adts x.aac")
    dir.run("faad -q -b 2 -f 2 -o ref.raw x.aac")
    let reference = signedSamples(dir.read("ref.raw"), bytes: 3)
    let outputRate = rate < 32000 ? 2 * rate : rate
    let packetFrames = rate < 32000 ? 2048 : 1024
    // faad's own output: whole packets at the output rate (2.5 s of source).
    #expect(reference.count % (2 * packetFrames) == 0 && reference.count / 2 > outputRate * 2)
    let run = try decodeAll(try AACDecoder(), dir.read("x.aac"), seed: seed, maxChunk: 600)
    #expect(run.finished)
    expectBitExact(run.samples, reference, channels: 2, shift: 8)
    #expect(run.boundaries.first?.format.sampleRate == outputRate)
  }

  /// HE-AAC in MP4 (see `heAAC`): libfaad runs its SBR stage and faad reports "HE AAC,
  /// 44100 Hz". The edit list's priming and padding, in the 22.05 kHz timescale, are trimmed at
  /// twice the rate: the decode equals faad's, whose dropped first packet (2048 frames) is the
  /// priming, for exactly twice the source's length.
  @Test(arguments: [UInt64(5), 6])
  func heAACInMP4IsTrimmedAtTheDoubledRate(seed: UInt64) throws {
    let dir = TempDir()
    let file = try heAAC(dir)
    dir.run("faad -i he.m4a 2> info.txt; faad -q -b 2 -f 2 -o ref.raw he.m4a")
    #expect(String(decoding: dir.read("info.txt"), as: UTF8.self).contains("HE AAC"))
    #expect(priming(dir, "lc.m4a") == 1024)
    let sourceFrames = wavData(dir.read("x.wav")).count / 4
    let faad = signedSamples(dir.read("ref.raw"), bytes: 3)
    let expected = Array(faad[0..<(2 * 2 * sourceFrames)])
    let run = try decodeAll(try AACDecoder(), file, seed: seed, maxChunk: 2500)
    #expect(run.finished)
    expectBitExact(run.samples, expected, channels: 2, shift: 8)
    #expect(run.boundaries.map(\.format) == [AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 24)])
  }

  @Test func notAACIsRejected() throws {
    #expect(throws: DecodeError.self) { try decodeAll(try AACDecoder(), Array(repeating: 0x41, count: 5000)) }
  }
}
