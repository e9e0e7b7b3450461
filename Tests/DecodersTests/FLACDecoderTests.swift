import AudioBuffers
import Decoders
import Testing

@Suite struct FLACDecoderTests {
  /// Encodes `synth` (sox synth arguments) to FLAC and decodes the reference raw samples.
  private func media(
    _ dir: TempDir, rate: Int, channels: Int, bits: Int, seconds: Double = 3, synth: String,
    flacOptions: String = ""
  ) -> (flac: [UInt8], reference: [Int32]) {
    dir.run("sox -n -r \(rate) -c \(channels) -b \(bits) x.wav synth \(seconds) \(synth)")
    dir.run("flac -s -f \(flacOptions) -o x.flac x.wav")
    dir.run("flac -s -f -d --force-raw-format --endian=little --sign=signed -o ref.raw x.flac")
    return (dir.read("x.flac"), signedSamples(dir.read("ref.raw"), bytes: bits / 8))
  }

  @Test(arguments: [UInt64(1), 2, 3])
  func cdQualityIsBitExact(seed: UInt64) throws {
    let dir = TempDir()
    let (flac, reference) = media(dir, rate: 44100, channels: 2, bits: 16, synth: "sine 440 whitenoise vol 0.3")
    let decoder = try FLACDecoder()
    let run = try decodeAll(decoder, flac, seed: seed)
    #expect(run.finished)
    #expect(decoder.damage == StreamDamage(), "an intact stream reports no damage")
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
    #expect(
      run.boundaries == [
        TrackBoundary(trackID: 7, frame: 0, format: AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16))
      ])
  }

  @Test func hiRes24BitIsBitExact() throws {
    let dir = TempDir()
    let (flac, reference) = media(
      dir, rate: 96000, channels: 2, bits: 24, seconds: 2, synth: "sine 100-20000 pinknoise vol 0.5")
    let decoder = try FLACDecoder()
    let run = try decodeAll(decoder, flac, seed: 5)
    expectBitExact(run.samples, reference, channels: 2, shift: 8)
    #expect(decoder.format == AudioFormat(sampleRate: 96000, channels: 2, bitsPerSample: 24))
    #expect(run.boundaries.first?.format == AudioFormat(sampleRate: 96000, channels: 2, bitsPerSample: 24))
  }

  @Test func rate384kIsBitExact() throws {
    let dir = TempDir()
    let (flac, reference) = media(
      dir, rate: 384000, channels: 2, bits: 24, seconds: 1, synth: "sine 1000 whitenoise vol 0.2")
    let run = try decodeAll(try FLACDecoder(), flac, seed: 6)
    expectBitExact(run.samples, reference, channels: 2, shift: 8)
    #expect(run.boundaries.first?.format.sampleRate == 384000)
  }

  @Test func thirtyTwoBitIsBitExact() throws {
    let dir = TempDir()
    dir.run("sox -n -r 48000 -c 2 -b 32 -e signed x.wav synth 1 sine 440 whitenoise vol 0.3")
    dir.run("flac -s -f -o x.flac x.wav")
    dir.run("flac -s -f -d --force-raw-format --endian=little --sign=signed -o ref.raw x.flac")
    let run = try decodeAll(try FLACDecoder(), dir.read("x.flac"), seed: 15)
    expectBitExact(run.samples, signedSamples(dir.read("ref.raw"), bytes: 4), channels: 2, shift: 0)
    #expect(run.boundaries.first?.format == AudioFormat(sampleRate: 48000, channels: 2, bitsPerSample: 32))
  }

  @Test func monoIsDuplicated() throws {
    let dir = TempDir()
    let (flac, reference) = media(dir, rate: 48000, channels: 1, bits: 16, synth: "sine 300-3000")
    let run = try decodeAll(try FLACDecoder(), flac, seed: 7)
    expectBitExact(run.samples, reference, channels: 1, shift: 16)
    #expect(run.boundaries.first?.format == AudioFormat(sampleRate: 48000, channels: 1, bitsPerSample: 16))
  }

  @Test func eightBitIsBitExact() throws {
    let dir = TempDir()
    let (flac, reference) = media(
      dir, rate: 22050, channels: 2, bits: 8, seconds: 2, synth: "sine 200 whitenoise vol 0.5")
    let run = try decodeAll(try FLACDecoder(), flac, seed: 8)
    expectBitExact(run.samples, reference, channels: 2, shift: 24)
  }

  @Test func moreThanTwoChannelsKeepsTheFirstTwo() throws {
    let dir = TempDir()
    let (flac, reference) = media(
      dir, rate: 44100, channels: 4, bits: 16, seconds: 1, synth: "sine 200 sine 300 sine 400 sine 500")
    let run = try decodeAll(try FLACDecoder(), flac, seed: 9)
    var firstTwo: [Int32] = []
    for frame in 0..<(reference.count / 4) { firstTwo += [reference[frame * 4], reference[frame * 4 + 1]] }
    expectBitExact(run.samples, firstTwo, channels: 2, shift: 16)
    #expect(run.boundaries.first?.format.channels == 4)
  }

  /// Metadata far larger than the stream ring (here 300 KB of padding) is skipped incrementally.
  @Test func largeMetadataIsSkippedThroughASmallRing() throws {
    let dir = TempDir()
    let (flac, reference) = media(
      dir, rate: 44100, channels: 2, bits: 16, seconds: 2, synth: "sine 440 sine 880", flacOptions: "--padding=300000")
    #expect(flac.count > 300_000)
    let run = try decodeAll(try FLACDecoder(), flac, seed: 10, streamCapacity: 32 << 10, maxChunk: 3000)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
  }

  /// An ID3v2 tag in front of `fLaC` (some taggers write one) is skipped.
  @Test func id3v2TagBeforeTheStreamIsSkipped() throws {
    let dir = TempDir()
    let (flac, reference) = media(dir, rate: 44100, channels: 2, bits: 16, seconds: 1, synth: "sine 440")
    let size = 70_000  // syncsafe: 7 bits per byte
    let tag: [UInt8] =
      Array("ID3".utf8) + [3, 0, 0] + [0, UInt8(size >> 14 & 0x7F), UInt8(size >> 7 & 0x7F), UInt8(size & 0x7F)]
    let run = try decodeAll(
      try FLACDecoder(), tag + [UInt8](repeating: 0, count: size) + flac, seed: 18, streamCapacity: 16 << 10)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
  }

  /// What a transcoding server streams: encoded to a pipe, so STREAMINFO has no frame sizes or length.
  @Test func pipedEncodingIsBitExact() throws {
    let dir = TempDir()
    dir.run("sox -n -r 44100 -c 2 -b 16 x.wav synth 2 sine 500 brownnoise vol 0.4")
    dir.run("cat x.wav | flac -s -c - > x.flac")
    dir.run("flac -s -f -d --force-raw-format --endian=little --sign=signed -o ref.raw x.flac")
    let run = try decodeAll(try FLACDecoder(), dir.read("x.flac"), seed: 11, maxChunk: 700)
    expectBitExact(run.samples, signedSamples(dir.read("ref.raw"), bytes: 2), channels: 2, shift: 16)
  }

  /// After a seek LMS sends the body from a frame boundary: no `fLaC`, no STREAMINFO.
  @Test func bodyStartingAtAFrameBoundary() throws {
    let dir = TempDir()
    let (flac, reference) = media(dir, rate: 44100, channels: 2, bits: 16, synth: "sine 440 whitenoise vol 0.3")
    dir.run("flac -s -f -a -o x.ana x.flac")
    // "frame=N\toffset=X\tbits=…\tblocksize=B…"
    var offsets: [Int] = []
    var blockSizes: [Int] = []
    for line in String(decoding: dir.read("x.ana"), as: UTF8.self).split(separator: "\n") where line.hasPrefix("frame=")
    {
      var fields: [Substring: Int] = [:]
      for field in line.split(separator: "\t") {
        let pair = field.split(separator: "=")
        if pair.count == 2, let value = Int(pair[1]) { fields[pair[0]] = value }
      }
      offsets.append(fields["offset"] ?? -1)
      blockSizes.append(fields["blocksize"] ?? 0)
    }
    try #require(offsets.count > 10)
    let start = offsets[4]
    #expect(flac[start] == 0xFF && flac[start + 1] & 0xFE == 0xF8)
    let skipped = blockSizes[0..<4].reduce(0, +)
    let decoder = try FLACDecoder()
    let run = try decodeAll(decoder, Array(flac[start...]), seed: 12)
    expectBitExact(run.samples, Array(reference[(skipped * 2)...]), channels: 2, shift: 16)
    #expect(run.boundaries.first?.format == AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16))
  }

  @Test func truncatedStreamKeepsTheFramesBeforeTheCut() throws {
    let dir = TempDir()
    let (flac, reference) = media(dir, rate: 44100, channels: 2, bits: 16, synth: "sine 440 whitenoise vol 0.3")
    let cut = Array(flac[0..<(flac.count * 6 / 10)])
    var samples: [Int32] = []
    do {
      let run = try decodeAll(try FLACDecoder(), cut, seed: 13)
      #expect(run.finished)
      samples = run.samples
    } catch {
      Issue.record("truncated FLAC threw \(error) instead of finishing")
    }
    // Everything decoded is the start of the reference; at most the cut frame is missing.
    let frames = samples.count / 2
    #expect(frames > reference.count / 2 / 2)
    #expect(frames <= reference.count / 2 * 6 / 10)
    expectBitExact(samples, Array(reference[0..<min(reference.count, frames * 2)]), channels: 2, shift: 16)
  }

  @Test func corruptMiddleIsSkipped() throws {
    let dir = TempDir()
    let (flac, reference) = media(dir, rate: 44100, channels: 2, bits: 16, synth: "sine 440 whitenoise vol 0.3")
    var damaged = flac
    var rng = SplitMix(99)
    for i in (flac.count / 2)..<(flac.count / 2 + 5000) { damaged[i] = UInt8(truncatingIfNeeded: rng.next()) }
    let decoder = try FLACDecoder()
    let run = try decodeAll(decoder, damaged, seed: 14)
    #expect(run.finished)
    // Reported once the track ends: at least one stretch, however many errors it gave.
    #expect(decoder.damage.stretches >= 1 && decoder.damage.stretches < 20, "\(decoder.damage)")
    #expect(!decoder.damage.last.isEmpty)
    // libFLAC resyncs: damaged frames are dropped or (CRC mismatch) muted, the rest is intact.
    let frames = run.samples.count / 2
    #expect(frames <= reference.count / 2)
    #expect(frames > reference.count / 2 - 4 * 4096)
    let tail = 44100 * 2
    try #require(run.samples.count >= tail)
    expectBitExact(Array(run.samples.suffix(tail)), Array(reference.suffix(tail)), channels: 2, shift: 16)
  }

  /// Junk between two frames makes libFLAC scan ahead of the buffered input; with the ring dry it
  /// is flushed and resyncs at a later frame: a few blocks lost, no hang, the rest intact.
  @Test func junkBetweenFramesIsSkippedWithoutStalling() throws {
    let dir = TempDir()
    let (flac, reference) = media(dir, rate: 44100, channels: 2, bits: 16, synth: "sine 440 whitenoise vol 0.3")
    dir.run("flac -s -f -a -o x.ana x.flac")
    let analysis = String(decoding: dir.read("x.ana"), as: UTF8.self)
    let frameLines = analysis.split(separator: "\n").filter { $0.hasPrefix("frame=") }
    try #require(frameLines.count > 20)
    let field = frameLines[15].split(separator: "\t").first { $0.hasPrefix("offset=") }!
    let offset = Int(field.dropFirst(7))!
    let body = Array(flac[..<offset]) + [UInt8](repeating: 0, count: 100_000) + Array(flac[offset...])
    let decoder = try FLACDecoder()
    let run = try decodeAll(decoder, body, seed: 17, maxChunk: 400)
    #expect(run.finished)
    #expect(decoder.damage.stretches >= 1, "the junk is reported")
    let frames = run.samples.count / 2
    #expect(frames <= reference.count / 2)
    #expect(frames >= reference.count / 2 - 3 * 4096)
    let tail = 44100 * 2
    expectBitExact(Array(run.samples.suffix(tail)), Array(reference.suffix(tail)), channels: 2, shift: 16)
  }

  @Test func htmlBodyThrows() throws {
    #expect(throws: DecodeError.self) { try decodeAll(try FLACDecoder(), htmlBody) }
  }

  @Test func garbageAfterTheHeaderThrows() throws {
    let dir = TempDir()
    let (flac, _) = media(dir, rate: 44100, channels: 2, bits: 16, seconds: 1, synth: "sine 440")
    // Keep fLaC + STREAMINFO (42 bytes), then text instead of frames.
    var body = Array(flac[0..<42])
    body[4] |= 0x80
    body += htmlBody
    #expect(throws: DecodeError.self) { try decodeAll(try FLACDecoder(), body) }
  }

  @Test func emptyBodyThrows() throws {
    #expect(throws: DecodeError.self) { try decodeAll(try FLACDecoder(), []) }
  }
}
