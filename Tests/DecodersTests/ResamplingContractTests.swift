import AudioBuffers
import Decoders
import Resampling
import Support
import TestSupport
import Testing

/// The decoder contract holds for every codec behind the `-R` stage too, passing a supported rate
/// through and resampling another; and a rate change within a stream flushes one resampler and
/// starts the next.
@Suite struct ResamplingContractTests {
  typealias Contract = DecoderContractTests

  enum Stage: CaseIterable {
    case passThrough
    case resampling
  }

  /// The codec's rate (44.1 kHz, 48 kHz for Opus, 352.8 kHz for DSD converted to PCM) plays as it
  /// is, or goes to 96 kHz.
  private func wrapped(_ codec: Codec, _ stage: Stage) throws -> ResamplingDecoder {
    let rates = stage == .passThrough ? [352_800, 96000, 48000, 44100] : [96000]
    return ResamplingDecoder(
      wrapping: try DecoderFactory.make(codec: codec),
      settings: ResamplingSettings(recipe: try ResampleRecipe(parsing: "E"), supportedRates: rates))
  }

  /// What the stage must deliver for the codec's own decode.
  private func expected(_ codec: Codec, _ bytes: [UInt8], _ stage: Stage) throws -> [Int32] {
    let run = try decodeAll(try DecoderFactory.make(codec: codec), bytes)
    guard stage == .resampling, let rate = run.boundaries.first?.format.sampleRate else { return run.samples }
    return try resampleAll(run.samples, from: rate, to: 96000)
  }

  @Test(arguments: DecoderContractTests.codecs, Stage.allCases)
  func fullBoundaryQueueDefersTheFirstCommit(codec: Codec, stage: Stage) throws {
    let dir = TempDir()
    let bytes = Contract.encoded(codec, dir)
    let decoder = try wrapped(codec, stage)
    let input = Contract.feed(bytes, end: true)
    let output = FrameOutput(capacityFrames: 1 << 17)
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
    try Contract.finish(decoder, input, output, into: &samples)
    #expect(firstDifference(samples, try expected(codec, bytes, stage)) == nil)
    let first = output.boundaries.peek()
    #expect(first?.trackID == 3 && first?.frame == 0 && first?.isNewTrack == true)
    #expect(first?.format == decoder.format)
    #expect(
      first?.format.sampleRate
        == (stage == .resampling ? 96000 : codec == .opus ? 48000 : codec == .dsd ? 352_800 : 44100))
  }

  /// Where to cut a stream in two near `position`: for Ogg, just past the header of the page
  /// that follows. A cut inside a page header rightly stops the Ogg decoders from reading
  /// anything within reach of it (the page might begin a new link's headers), which would make
  /// "some audio comes out of the first part" depend on where the cut falls.
  static func cut(_ bytes: [UInt8], near position: Int) -> Int {
    guard bytes.starts(with: Array("OggS".utf8)) else { return position }
    var page = position
    while page + 27 < bytes.count && !bytes[page..<page + 4].elementsEqual("OggS".utf8) { page += 1 }
    return page + 27 < bytes.count ? page + 27 + Int(bytes[page + 26]) : position
  }

  @Test(arguments: DecoderContractTests.codecs, Stage.allCases)
  func partialInputNeedsInputAndEverythingArrives(codec: Codec, stage: Stage) throws {
    let dir = TempDir()
    let bytes = Contract.encoded(codec, dir)
    let decoder = try wrapped(codec, stage)
    let input = StreamInput(capacity: 1 << 20)
    let output = FrameOutput(capacityFrames: 1 << 19)
    output.beginTrack(id: 1)
    #expect(try decoder.decode(from: input, to: output) == .needsInput)
    // Three quarters: enough audio past the Ogg decoders' reserve of input to fill the resampler's filter.
    let part = Self.cut(bytes, near: bytes.count * 3 / 4)
    _ = bytes.withUnsafeBytes { input.ring.write(UnsafeRawBufferPointer(rebasing: $0[0..<part])) }
    var needsInput = 0
    for _ in 0..<100_000 where needsInput < 3 {
      needsInput = try decoder.decode(from: input, to: output) == .needsInput ? needsInput + 1 : 0
    }
    #expect(needsInput == 3)
    #expect(output.bufferedFrames > 0)
    _ = bytes.withUnsafeBytes { input.ring.write(UnsafeRawBufferPointer(rebasing: $0[part...])) }
    input.markEnded()
    var samples: [Int32] = []
    try Contract.finish(decoder, input, output, into: &samples)
    #expect(firstDifference(samples, try expected(codec, bytes, stage)) == nil)
  }

  /// An MP3 stream that turns from 44.1 kHz stereo to 48 kHz mono: each part is resampled on its
  /// own (the first flushed before the second begins), under a boundary of its own.
  @Test func aRateChangeWithinAStreamFlushesAndStartsAgain() throws {
    let dir = TempDir()
    dir.run("sox -n -r 44100 -c 2 -b 16 a.wav synth 1 sine 440")
    dir.run("sox -n -r 48000 -c 1 -b 16 b.wav synth 1 sine 660")
    dir.run("lame --quiet -b 128 -t a.wav a.mp3 && lame --quiet -b 64 -t b.wav b.mp3 && cat a.mp3 b.mp3 > ab.mp3")
    let bytes = dir.read("ab.mp3")
    let plain = try decodeAll(try MP3Decoder(), bytes)
    let split = 2 * (plain.boundaries.last?.frame ?? 0)
    #expect(plain.boundaries.count == 2 && split > 0)
    let first = try resampleAll(Array(plain.samples[..<split]), from: 44100, to: 96000)
    let reference = try first + resampleAll(Array(plain.samples[split...]), from: 48000, to: 96000)

    let decoder = ResamplingDecoder(
      wrapping: try MP3Decoder(), settings: ResamplingSettings(recipe: ResampleRecipe(), supportedRates: [96000]))
    let run = try decodeAll(decoder, bytes, seed: 5, maxChunk: 3000)
    #expect(run.finished)
    #expect(firstDifference(run.samples, reference) == nil)
    #expect(
      run.boundaries.map(\.format) == [
        AudioFormat(sampleRate: 96000, channels: 2, bitsPerSample: 16, resampledFrom: 44100),
        AudioFormat(sampleRate: 96000, channels: 1, bitsPerSample: 16, resampledFrom: 48000),
      ])
    #expect(run.boundaries.map(\.isNewTrack) == [true, false])
    #expect(run.boundaries.last?.frame == first.count / 2)
  }
}

/// Interleaved stereo frames through one resampler, all at once, then flushed.
func resampleAll(_ samples: [Int32], from input: Int, to output: Int) throws -> [Int32] {
  let resampler = try Resampler(from: input, to: output, recipe: ResampleRecipe())
  let frames = samples.count / 2
  var result = [Int32](repeating: 0, count: (frames * output / input + 16384) * 2)
  var written = 0
  let used = try samples.withUnsafeBufferPointer { source in
    try result.withUnsafeMutableBufferPointer { target in
      let step = try resampler.process(
        source.baseAddress!, frames: frames, into: target.baseAddress!, capacity: target.count / 2)
      written = step.produced
      while true {
        let more = try resampler.flush(into: target.baseAddress! + written * 2, capacity: target.count / 2 - written)
        if more == 0 { break }
        written += more
      }
      return step.used
    }
  }
  #expect(used == frames)
  return Array(result[..<(written * 2)])
}
