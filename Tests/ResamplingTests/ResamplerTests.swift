import AudioBuffers
import Decoders
import Resampling
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A stereo sine, left-justified 16-bit samples in Int32 (as decoders write them).
func sine(frequency: Double, rate: Int, frames: Int, amplitude: Double = 0.5) -> [Int32] {
  var samples: [Int32] = []
  samples.reserveCapacity(frames * 2)
  for n in 0..<frames {
    let value = Int32((amplitude * 32767 * sin(2 * Double.pi * frequency * Double(n) / Double(rate))).rounded())
    samples += [value << 16, (-value) << 16]
  }
  return samples
}

/// Resamples all of `input`, handing it over in pieces of the sizes `pieces` gives and taking the
/// output in pieces of `room` frames at most.
func resample(
  _ input: [Int32], with resampler: Resampler, pieces: (Int) -> Int = { _ in 1 << 30 },
  room: (Int) -> Int = { _ in 1 << 16 }
) throws -> [Int32] {
  var output: [Int32] = []
  var scratch = [Int32](repeating: 0, count: 2 << 16)
  var offset = 0
  var call = 0
  let frames = input.count / 2
  while offset < frames {
    let piece = min(max(1, pieces(call)), frames - offset)
    let capacity = max(1, min(room(call), 1 << 16))
    let (used, produced) = try input.withUnsafeBufferPointer { source in
      try scratch.withUnsafeMutableBufferPointer { target in
        try resampler.process(
          source.baseAddress! + offset * 2, frames: piece, into: target.baseAddress!, capacity: capacity)
      }
    }
    offset += used
    output += scratch[0..<(produced * 2)]
    call += 1
    #expect(call < 1_000_000)
  }
  while true {
    let capacity = max(1, min(room(call), 1 << 16))
    let produced = try scratch.withUnsafeMutableBufferPointer {
      try resampler.flush(into: $0.baseAddress!, capacity: capacity)
    }
    call += 1
    if produced == 0 { break }
    output += scratch[0..<(produced * 2)]
  }
  return output
}

@Suite struct ResamplerTests {
  @Test func aSineKeepsItsPitchLengthAndLevelAtTheNewRate() throws {
    let input = sine(frequency: 1000, rate: 44100, frames: 44100)
    let output = try resample(input, with: Resampler(from: 44100, to: 48000, recipe: ResampleRecipe()))
    // One second in, one second out (the filter's delay is taken out by libsoxr).
    #expect(abs(output.count / 2 - 48000) <= 1)
    // Against the ideal sine at 48 kHz, 1 dB down, away from the edges: 20-bit quality.
    let gain = 0.891_250_938
    var error = 0.0
    var signal = 0.0
    for n in 1000..<47000 {
      let ideal = gain * (0.5 * 32767 * sin(2 * Double.pi * 1000 * Double(n) / 48000)).rounded() * 65536
      let left = Double(output[n * 2])
      error += (left - ideal) * (left - ideal)
      signal += ideal * ideal
      #expect(output[n * 2 + 1] == -output[n * 2] || abs(Int64(output[n * 2 + 1]) + Int64(output[n * 2])) <= 2)
    }
    let snr = 10 * log10(signal / error)
    #expect(snr > 85, "signal to error \(snr) dB")
  }

  @Test(arguments: [UInt64(1), 2, 3])
  func theOutputDoesNotDependOnHowTheInputIsSplit(seed: UInt64) throws {
    let input = sine(frequency: 997, rate: 44100, frames: 30000) + sine(frequency: 5000, rate: 44100, frames: 20000)
    let whole = try resample(input, with: Resampler(from: 44100, to: 96000, recipe: ResampleRecipe()))
    var state = seed
    func random(_ below: Int) -> Int {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return Int((state >> 33) % UInt64(below)) + 1
    }
    let split = try resample(
      input, with: Resampler(from: 44100, to: 96000, recipe: ResampleRecipe()), pieces: { _ in random(3000) },
      room: { _ in random(5000) })
    #expect(split.count == whole.count)
    #expect(firstDifference(split, whole) == nil)
  }

  @Test func downsamplingAndOtherRecipes() throws {
    let input = sine(frequency: 440, rate: 96000, frames: 96000)
    for text in ["vL", "mI", "lM", "q", "hs:0:0:24:90:100:25"] {
      let recipe = try ResampleRecipe(parsing: text)
      let output = try resample(input, with: Resampler(from: 96000, to: 44100, recipe: recipe))
      #expect(abs(output.count / 2 - 44100) <= 1, "\(text)")
    }
  }
}
