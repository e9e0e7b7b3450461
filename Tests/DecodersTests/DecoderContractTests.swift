import AudioBuffers
import Decoders
import Support
import Testing

/// What every decoder owes its caller, whatever the codec.
@Suite struct DecoderContractTests {
  static let codecs: [Codec] = [.flac, .alac, .aac, .mp3, .opus, .vorbis, .pcm, .dsd]

  /// A stereo 44.1 kHz test signal encoded for `codec`: 4 s, 8 s for Opus (whose decoder keeps
  /// 16 KiB of input in reserve: half of its stream must hold more than that after the headers).
  static func encoded(_ codec: Codec, _ dir: TempDir) -> [UInt8] {
    if codec == .dsd {
      // No Debian tool writes DSD: 1 s of a modulated sine, in DSF (converted to PCM at 352.8 kHz,
      // half of it fits the output of the test below).
      return DSDDecoderTests.dsf(DSDDecoderTests.modulatedSine(frequency: 440, amplitude: 0.3, bytes: 352_800))
    }
    dir.run("sox -n -r 44100 -c 2 -b 16 x.wav synth \(codec == .opus ? 8 : 4) sine 440 pinknoise vol 0.3")
    switch codec {
    case .flac: dir.run("flac -s -f -o x.out x.wav")
    case .alac: dir.run("ffmpeg -v error -y -i x.wav -c:a alac -movflags +faststart -f mp4 x.out")
    case .aac: dir.run("ffmpeg -v error -y -i x.wav -c:a aac -movflags +faststart -f mp4 x.out")
    case .mp3: dir.run("lame --quiet -b 192 x.wav x.out")
    case .opus: dir.run("opusenc --quiet x.wav x.out")
    case .vorbis: dir.run("oggenc --quiet -o x.out x.wav")
    case .pcm: dir.run("cp x.wav x.out")
    case .dsd: break
    }
    return dir.read("x.out")
  }

  static func feed(_ bytes: [UInt8], end: Bool) -> StreamInput {
    let input = StreamInput(capacity: bytes.count + 1)
    _ = bytes.withUnsafeBytes { input.ring.write($0) }
    if end { input.markEnded() }
    return input
  }

  /// Runs to the end on an input that already holds everything, draining the output.
  static func finish(
    _ decoder: any AudioDecoder, _ input: StreamInput, _ output: FrameOutput, into samples: inout [Int32]
  ) throws {
    var buffer = [Int32](repeating: 0, count: 1 << 15)
    for _ in 0..<1_000_000 {
      let progress = try decoder.decode(from: input, to: output)
      while output.bufferedFrames > 0 {
        let n = buffer.withUnsafeMutableBytes { output.ring.read(into: $0) }
        samples += buffer[0..<(n / 4)]
      }
      if progress == .finished { return }
      #expect(progress != .needsInput || !input.isExhausted)
    }
    Issue.record("did not finish")
  }

  @Test(arguments: codecs)
  func fullBoundaryQueueDefersTheFirstCommit(codec: Codec) throws {
    let dir = TempDir()
    let bytes = Self.encoded(codec, dir)
    let expected = try decodeAll(try DecoderFactory.make(codec: codec), bytes).samples

    let decoder = try DecoderFactory.make(codec: codec)
    let input = Self.feed(bytes, end: true)
    let output = FrameOutput(capacityFrames: 1 << 16)
    output.beginTrack(id: 3)
    let dummy = TrackBoundary(
      trackID: 0, frame: 0, format: AudioFormat(sampleRate: 8000, channels: 1, bitsPerSample: 8))
    while output.boundaries.push(dummy) {}
    for _ in 0..<8 {
      #expect(try decoder.decode(from: input, to: output) == .decoded)
      #expect(output.bufferedFrames == 0)
    }
    output.boundaries.removeAll()
    var samples: [Int32] = []
    try Self.finish(decoder, input, output, into: &samples)
    #expect(samples == expected)
    #expect(expected.count > 44100 * 2)
    let first = output.boundaries.peek()
    #expect(first?.trackID == 3 && first?.frame == 0 && first?.isNewTrack == true)
    #expect(first?.format == decoder.format)
  }

  /// `offset`, or past it when it falls inside an Ogg page's header (the 27 bytes and a segment
  /// table of up to 255): the Ogg decoders do not read towards a page whose header is incomplete
  /// (it may begin a chained link's headers), so a stream stalled there decodes nothing more until
  /// it goes on or ends, by design. Where the noise makes the encoder put the pages varies.
  static func cutOutsideOggPageHeaders(_ bytes: [UInt8], near offset: Int) -> Int {
    let capture = Array("OggS".utf8)
    for start in stride(from: offset, through: max(0, offset - 282), by: -1)
    where start + 27 <= bytes.count && Array(bytes[start..<start + 4]) == capture {
      let headerEnd = start + 27 + Int(bytes[start + 26])  // the segment table's length is byte 26
      return max(offset, headerEnd + 1)
    }
    return offset
  }

  /// With the stream open and the ring empty a decoder says so and returns; it never waits.
  @Test(arguments: codecs)
  func partialInputNeedsInputInsteadOfBlocking(codec: Codec) throws {
    let dir = TempDir()
    let bytes = Self.encoded(codec, dir)
    let decoder = try DecoderFactory.make(codec: codec)
    let input = StreamInput(capacity: 1 << 20)
    let output = FrameOutput(capacityFrames: 1 << 18)
    output.beginTrack(id: 1)
    #expect(try decoder.decode(from: input, to: output) == .needsInput)  // nothing at all yet

    let half = Self.cutOutsideOggPageHeaders(bytes, near: bytes.count / 2)
    _ = bytes.withUnsafeBytes { input.ring.write(UnsafeRawBufferPointer(rebasing: $0[0..<half])) }
    var needsInput = 0
    for _ in 0..<100_000 where needsInput < 3 {
      needsInput = try decoder.decode(from: input, to: output) == .needsInput ? needsInput + 1 : 0
    }
    #expect(needsInput == 3)
    let framesAtHalf = output.bufferedFrames
    // The rest arrives; the stream ends; everything is decoded.
    _ = bytes.withUnsafeBytes { input.ring.write(UnsafeRawBufferPointer(rebasing: $0[half...])) }
    input.markEnded()
    var samples: [Int32] = []
    try Self.finish(decoder, input, output, into: &samples)
    let expected = try decodeAll(try DecoderFactory.make(codec: codec), bytes).samples
    #expect(samples == expected)
    #expect(framesAtHalf > 0)
  }

  @Test(arguments: codecs)
  func htmlBodyThrowsADecodeError(codec: Codec) throws {
    let decoder = try DecoderFactory.make(codec: codec)
    #expect(throws: DecodeError.self) { try decodeAll(decoder, htmlBody) }
  }

  @Test(arguments: codecs)
  func randomBytesThrowOrFinishButNeverHang(codec: Codec) throws {
    var rng = SplitMix(42)
    let noise = (0..<300_000).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    do {
      let run = try decodeAll(try DecoderFactory.make(codec: codec), noise)
      // Only raw PCM can take noise as audio.
      #expect(codec == .pcm)
      #expect(run.finished)
    } catch {
      #expect(codec != .pcm)
    }
  }

  /// mpg123 reports a new output format mid-stream: the next commit publishes a boundary for it.
  @Test func formatChangeMidStreamPublishesABoundary() throws {
    let dir = TempDir()
    dir.run("sox -n -r 44100 -c 2 -b 16 a.wav synth 1 sine 440")
    dir.run("sox -n -r 48000 -c 1 -b 16 b.wav synth 1 sine 440")
    dir.run("lame --quiet -b 128 -t a.wav a.mp3 && lame --quiet -b 64 -t b.wav b.mp3 && cat a.mp3 b.mp3 > ab.mp3")
    let run = try decodeAll(try MP3Decoder(), dir.read("ab.mp3"), seed: 3)
    #expect(
      run.boundaries.map(\.format) == [
        AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16),
        AudioFormat(sampleRate: 48000, channels: 1, bitsPerSample: 16),
      ])
    #expect(run.boundaries.map(\.isNewTrack) == [true, false])
    #expect(run.boundaries.first?.frame == 0)
    let second = run.boundaries.last?.frame ?? 0
    #expect(abs(second - 44100) < 3000)
    #expect(run.samples.count / 2 > 44100 + 44100)
  }
}
