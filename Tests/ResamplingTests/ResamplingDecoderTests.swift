import AudioBuffers
import Decoders
import Resampling
import TestSupport
import Testing

/// 16-bit little-endian stereo bytes of left-justified samples.
func rawPCM(_ samples: [Int32]) -> [UInt8] {
  samples.flatMap { sample -> [UInt8] in
    let value = UInt16(bitPattern: Int16(sample >> 16))
    return [UInt8(value & 0xFF), UInt8(value >> 8)]
  }
}

struct Played {
  var samples: [Int32] = []
  var boundaries: [TrackBoundary] = []
}

/// Runs `decoder` over `bytes` (given in pieces, the stream then ended) with an output ring that
/// a consumer drains in uneven amounts, until it reports `.finished`.
func play(_ decoder: any AudioDecoder, _ bytes: [UInt8], outputFrames: Int = 8192, seed: UInt64 = 1) throws -> Played {
  let input = StreamInput(capacity: 64 << 10)
  let output = FrameOutput(capacityFrames: outputFrames)
  output.beginTrack(id: 3)
  var played = Played()
  var fed = 0
  var state = seed
  var buffer = [UInt8](repeating: 0, count: outputFrames * OutputFrames.bytesPerFrame)
  for _ in 0..<2_000_000 {
    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    let chunk = Int((state >> 40) % 9000) + 1
    if fed < bytes.count {
      let n = min(chunk, bytes.count - fed, input.ring.space)
      bytes.withUnsafeBytes { _ = input.ring.write(UnsafeRawBufferPointer(rebasing: $0[fed..<(fed + n)])) }
      fed += n
      if fed == bytes.count { input.markEnded() }
    }
    let take = min(output.ring.fill, (Int(state >> 20) % outputFrames + 1) * OutputFrames.bytesPerFrame)
    let read = buffer.withUnsafeMutableBytes {
      output.ring.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<take]))
    }
    buffer.withUnsafeBytes { raw in
      played.samples += raw[0..<read].withMemoryRebound(to: Int32.self) { Array($0) }
    }
    while let boundary = output.boundaries.peek() {
      played.boundaries.append(boundary)
      output.boundaries.pop()
    }
    guard output.freeFrames >= decoder.minimumFreeFrames else { continue }
    if try decoder.decode(from: input, to: output) == .finished {
      while output.ring.fill > 0 {
        let n = buffer.withUnsafeMutableBytes { output.ring.read(into: $0) }
        buffer.withUnsafeBytes { raw in played.samples += raw[0..<n].withMemoryRebound(to: Int32.self) { Array($0) } }
      }
      while let boundary = output.boundaries.peek() {
        played.boundaries.append(boundary)
        output.boundaries.pop()
      }
      return played
    }
  }
  Issue.record("the decoder did not finish")
  return played
}

@Suite struct ResamplingDecoderTests {
  let track = sine(frequency: 440, rate: 44100, frames: 50000) + sine(frequency: 3000, rate: 44100, frames: 23456)

  private func pcm() throws -> PCMDecoder {
    try PCMDecoder(sampleRate: 44100, channels: 2, bitsPerSample: 16, littleEndian: true)
  }

  @Test func aRateTheOutputTakesPassesBitExact() throws {
    let settings = ResamplingSettings(recipe: try ResampleRecipe(parsing: "E"), supportedRates: [96000, 48000, 44100])
    let played = try play(ResamplingDecoder(wrapping: try pcm(), settings: settings), rawPCM(track))
    #expect(played.samples.count == track.count)
    #expect(firstDifference(played.samples, track) == nil)
    #expect(played.boundaries.map(\.format) == [AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16)])
  }

  @Test(arguments: [UInt64(1), 2])
  func anotherRateIsTheWholeTrackResampledAndFlushed(seed: UInt64) throws {
    let settings = ResamplingSettings(recipe: ResampleRecipe(), supportedRates: [48000])
    let decoder = ResamplingDecoder(wrapping: try pcm(), settings: settings)
    let played = try play(decoder, rawPCM(track), seed: seed)
    let reference = try resample(track, with: Resampler(from: 44100, to: 48000, recipe: ResampleRecipe()))
    #expect(played.samples.count == reference.count)
    #expect(firstDifference(played.samples, reference) == nil)
    // 73456 frames at 44.1 kHz are 79952.2 at 48 kHz.
    #expect(abs(played.samples.count / 2 - 79952) <= 1)
    #expect(
      played.boundaries.map(\.format) == [
        AudioFormat(sampleRate: 48000, channels: 2, bitsPerSample: 16, resampledFrom: 44100)
      ])
    #expect(decoder.format?.sampleRate == 48000)
  }

  @Test func aSkipAfterResamplingLandsOnTheSameFramesAsTheFirstPass() throws {
    // A source switch decodes the track again from its start and drops what was already played:
    // the frames after the cut must be those of the uninterrupted pass.
    let settings = ResamplingSettings(recipe: ResampleRecipe(), supportedRates: [96000])
    let first = try play(ResamplingDecoder(wrapping: try pcm(), settings: settings), rawPCM(track), seed: 5)
    let again = try play(ResamplingDecoder(wrapping: try pcm(), settings: settings), rawPCM(track), seed: 9)
    #expect(firstDifference(first.samples, again.samples) == nil)
  }
}
