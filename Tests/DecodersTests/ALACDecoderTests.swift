import AudioBuffers
import Decoders
import Testing

/// Apple Lossless in MP4 made by Debian's ffmpeg: lossless, so the decode must equal the source
/// exactly, whole, at the source's depth.
@Suite struct ALACDecoderTests {
  /// Encodes `x.wav` (made by sox from `sox`) to ALAC in MP4 with its index first; returns the
  /// file and the source's samples.
  private func media(
    _ dir: TempDir, sox: String, bytes: Int, ffmpeg: String = ""
  ) -> (m4a: [UInt8], source: [Int32]) {
    dir.run("sox -n \(sox)")
    dir.run("ffmpeg -v error -y -i x.wav \(ffmpeg) -c:a alac -movflags +faststart x.m4a")
    return (dir.read("x.m4a"), signedSamples(wavData(dir.read("x.wav")), bytes: bytes))
  }

  @Test(arguments: [UInt64(1), 2])
  func stereo16BitEqualsItsSource(seed: UInt64) throws {
    let dir = TempDir()
    // 3.3 s: 35 whole packets of 4096 frames and a partial last one.
    let (m4a, source) = media(dir, sox: "-r 44100 -c 2 -b 16 x.wav synth 3.3 sine 440 pinknoise vol 0.4", bytes: 2)
    let decoder = ALACDecoder()
    let run = try decodeAll(decoder, m4a, seed: seed, maxChunk: 5000)
    #expect(run.finished)
    #expect(source.count == 2 * 145_530)
    expectBitExact(run.samples, source, channels: 2, shift: 16)
    #expect(run.boundaries.map(\.format) == [AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16)])
  }

  @Test func stereo24Bit96kHzEqualsItsSource() throws {
    let dir = TempDir()
    let (m4a, source) = media(
      dir, sox: "-r 96000 -c 2 -b 24 x.wav synth 2.5 sine 1000 pinknoise vol 0.5", bytes: 3,
      ffmpeg: "-sample_fmt s32p")
    let run = try decodeAll(ALACDecoder(), m4a, seed: 3)
    expectBitExact(run.samples, source, channels: 2, shift: 8)
    #expect(run.boundaries.first?.format == AudioFormat(sampleRate: 96000, channels: 2, bitsPerSample: 24))
  }

  @Test func monoPlaysOnBothSides() throws {
    let dir = TempDir()
    let (m4a, source) = media(dir, sox: "-r 22050 -c 1 -b 16 x.wav synth 2 sine 100-8000 vol 0.7", bytes: 2)
    let run = try decodeAll(ALACDecoder(), m4a, seed: 4)
    expectBitExact(run.samples, source, channels: 1, shift: 16)
  }

  /// Full-scale white noise does not compress: the encoder stores packets uncompressed (escape).
  @Test(arguments: [(16, 2), (24, 3)])
  func incompressibleNoiseEqualsItsSource(bits: Int, bytes: Int) throws {
    let dir = TempDir()
    let (m4a, source) = media(
      dir, sox: "-r 48000 -c 2 -b \(bits) x.wav synth 1.5 whitenoise", bytes: bytes,
      ffmpeg: bits == 24 ? "-sample_fmt s32p" : "")
    let run = try decodeAll(ALACDecoder(), m4a, seed: 5)
    expectBitExact(run.samples, source, channels: 2, shift: Int32(32 - bits))
  }

  /// The predictor's extremes: first order only, and the longest FIR ffmpeg writes (30 taps).
  @Test(arguments: [
    "-min_prediction_order 1 -max_prediction_order 1", "-min_prediction_order 30 -max_prediction_order 30",
  ])
  func predictionOrdersEqualTheSource(options: String) throws {
    let dir = TempDir()
    let (m4a, source) = media(
      dir, sox: "-r 44100 -c 2 -b 16 x.wav synth 2 sine 440 sine 3000 brownnoise vol 0.5", bytes: 2, ffmpeg: options)
    let run = try decodeAll(ALACDecoder(), m4a, seed: 6)
    expectBitExact(run.samples, source, channels: 2, shift: 16)
  }

  /// Five channels: the first pair of ALAC's order (front left and right) is played.
  @Test func surroundPlaysTheFrontPair() throws {
    let dir = TempDir()
    dir.run("sox -n -r 48000 -c 5 -b 16 x.wav synth 1 sine 200 sine 300 sine 400 sine 500 sine 600 vol 0.5")
    dir.run("ffmpeg -v error -y -i x.wav -c:a alac -movflags +faststart x.m4a")
    // ffmpeg's own decode, front left and right by name.
    dir.run("ffmpeg -v error -y -i x.m4a -af 'pan=stereo|c0=FL|c1=FR' -f s16le front.raw")
    let run = try decodeAll(ALACDecoder(), dir.read("x.m4a"), seed: 7)
    expectBitExact(run.samples, signedSamples(dir.read("front.raw"), bytes: 2), channels: 2, shift: 16)
  }

  /// A start mid-track (a seek in a cached copy): decoding begins at the packet that holds the
  /// start, exactly there, without decoding the packets before.
  @Test(arguments: [1, 4095, 4096, 100_000, 145_529])
  func aStartMidTrackBeginsAtItsFrame(startFrame: Int) throws {
    let dir = TempDir()
    let (m4a, source) = media(dir, sox: "-r 44100 -c 2 -b 16 x.wav synth 3.3 sine 440 pinknoise vol 0.4", bytes: 2)
    let run = try decodeAll(ALACDecoder(), m4a, seed: 9, maxChunk: 4000, startFrame: startFrame)
    #expect(run.finished)
    expectBitExact(run.samples, Array(source[(2 * startFrame)...]), channels: 2, shift: 16)
  }

  /// The packets before a start mid-track are passed over, not decoded: noise in their place
  /// changes nothing.
  @Test func packetsBeforeAStartMidTrackAreNotDecoded() throws {
    let dir = TempDir()
    var (m4a, source) = media(dir, sox: "-r 44100 -c 2 -b 16 x.wav synth 3.3 sine 440 pinknoise vol 0.4", bytes: 2)
    let audio = m4a.count - (m4a.count - 16) / 2  // the middle of the file: within the audio, index first
    for i in (audio - 60_000)..<audio { m4a[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 7) }
    #expect(throws: DecodeError.self) { try decodeAll(ALACDecoder(), m4a, seed: 11) }
    let start = 120_000
    let run = try decodeAll(ALACDecoder(), m4a, seed: 11, startFrame: start)
    expectBitExact(run.samples, Array(source[(2 * start)...]), channels: 2, shift: 16)
  }

  /// The index after the audio (ffmpeg's default layout): cannot be streamed, said so at once.
  @Test func indexAfterTheAudioIsRejected() throws {
    let dir = TempDir()
    dir.run("sox -n -r 44100 -c 2 -b 16 x.wav synth 1 sine 440")
    dir.run("ffmpeg -v error -y -i x.wav -c:a alac x.m4a")
    #expect(throws: DecodeError.self) { try decodeAll(ALACDecoder(), dir.read("x.m4a")) }
  }

  /// Index fields no real file has, each at its largest: a sample table longer than any track and
  /// a 4 GiB sample are refused with a reason; an edit list, a timescale or a chunk offset beyond
  /// reason leave a track that plays what it can (the trim ignored, or nothing) — never a crash.
  @Test(arguments: [
    ("stts", [16, 20], true), ("stsz", [12], true), ("elst", [12, 16], false), ("mdhd", [20], false),
    ("stco", [16], false),
  ])
  func hostileIndexFieldsAreRefusedOrSurvived(box: String, offsets: [Int], refused: Bool) throws {
    let dir = TempDir()
    var (m4a, _) = media(dir, sox: "-r 44100 -c 2 -b 16 x.wav synth 0.5 sine 440", bytes: 2)
    let type = Array(box.utf8)
    guard let at = (0..<(m4a.count - 4)).first(where: { Array(m4a[$0..<($0 + 4)]) == type }) else {
      Issue.record("no \(box) box")
      return
    }
    for offset in offsets {
      for k in 0..<4 { m4a[at - 4 + offset + k] = 0xFF }
    }
    do {
      let run = try decodeAll(ALACDecoder(), m4a, seed: 13)
      #expect(!refused, "\(box) at its largest was accepted")
      #expect(run.finished)
    } catch {
      #expect(refused, "\(box) at its largest was refused: \(error)")
      #expect(error.description.contains("MP4"))
    }
  }
}
