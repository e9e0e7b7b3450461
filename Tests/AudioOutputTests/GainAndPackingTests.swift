import AudioBuffers
import AudioOutput
import TestSupport
import Testing

@Suite struct GainStageTests {
  func applied(_ gains: ChannelGains, _ input: [Int32]) -> [Int32] {
    var samples = input
    samples.withUnsafeMutableBufferPointer { GainStage.apply(gains, to: $0) }
    return samples
  }

  @Test func unityLeavesEverySampleAlone() {
    let input: [Int32] = [Int32.min, Int32.max, 0, -1, 12345 << 16, -(54321 << 16)]
    #expect(applied(.unity, input) == input)
    #expect(!ChannelGains.unity.needsDither)
  }

  @Test func volumeIsExactSixteenSixteen() {
    let gains = ChannelGains(volumeLeft: 3840, volumeRight: 20992, treatment: TrackTreatment())
    let left: Int64 = 1000 << 16
    let right: Int64 = -(2000 << 16)
    let expected: [Int32] = [Int32((left * 3840) >> 16), Int32((right * 20992) >> 16)]
    #expect(applied(gains, [Int32(left), Int32(right)]) == expected)
    #expect(gains.needsDither)
  }

  @Test func replayGainMultipliesTheVolume() {
    let gains = ChannelGains(volumeLeft: 0x8000, volumeRight: 0x8000, treatment: TrackTreatment(replayGain: 0x8000))
    #expect(gains.left == 0x4000 && gains.right == 0x4000)
    let none = ChannelGains(volumeLeft: 0x10000, volumeRight: 0x10000, treatment: TrackTreatment(replayGain: 0))
    #expect(none.isIdentity)
  }

  @Test func polarityAndChannelSelection() {
    let inverted = ChannelGains(
      volumeLeft: 0x10000, volumeRight: 0x10000, treatment: TrackTreatment(invertLeft: true))
    #expect(applied(inverted, [100, 200]) == [-100, 200])
    #expect(!inverted.needsDither)  // negation loses nothing
    let left = ChannelGains(volumeLeft: 0x10000, volumeRight: 0x10000, treatment: TrackTreatment(channels: .leftOnly))
    #expect(applied(left, [100, 200]) == [100, 100])
    let mono = ChannelGains(volumeLeft: 0x10000, volumeRight: 0x10000, treatment: TrackTreatment(channels: .mono))
    #expect(applied(mono, [100, 200, -3, 4]) == [150, 150, 0, 0])
  }

  @Test func saturatesInsteadOfWrapping() {
    let loud = ChannelGains(left: 0x20000, right: 0x20000, channels: .stereo)
    #expect(applied(loud, [Int32.max, Int32.min]) == [Int32.max, Int32.min])
  }
}

@Suite struct SamplePackerTests {
  func pack(_ format: SampleFormat, _ samples: [Int32], dither: Bool = false) -> [UInt8] {
    var packer = SamplePacker(format: format)
    var out = [UInt8](repeating: 0, count: samples.count * format.bytesPerSample)
    let n = samples.withUnsafeBufferPointer { input in
      out.withUnsafeMutableBytes { packer.pack(input, into: $0, dither: dither) }
    }
    #expect(n == out.count)
    return out
  }

  @Test func formatsAreLittleEndianAtTheirWidth() {
    let sample: Int32 = 0x1234_5678
    #expect(pack(.s32, [sample]) == [0x78, 0x56, 0x34, 0x12])
    #expect(pack(.s24, [sample]) == [0x56, 0x34, 0x12, 0x00])
    #expect(pack(.s24_3, [sample]) == [0x56, 0x34, 0x12])
    #expect(pack(.s16, [sample]) == [0x34, 0x12])
    #expect(pack(.s24, [-256]) == [0xff, 0xff, 0xff, 0xff])
  }

  @Test func sixteenBitSourcesSurviveUndithered() {
    let samples: [Int32] = (-300..<300).map { Int32($0 * 97) << 16 }
    let bytes = pack(.s16, samples)
    for (i, sample) in samples.enumerated() {
      #expect(Int16(bitPattern: UInt16(bytes[2 * i]) | UInt16(bytes[2 * i + 1]) << 8) == Int16(sample >> 16))
    }
  }

  @Test func ditherIsTriangularWithinOneLSBAndUnbiased() {
    // A value halfway between two 16-bit steps: dither must spread it over the neighbours.
    let samples = [Int32](repeating: (1000 << 16) + 0x8000, count: 20000)
    let bytes = pack(.s16, samples, dither: true)
    var values: [Int] = []
    for i in stride(from: 0, to: bytes.count, by: 2) {
      values.append(Int(Int16(bitPattern: UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8)))
    }
    #expect(values.allSatisfy { (999...1002).contains($0) })
    let mean = Double(values.reduce(0, +)) / Double(values.count)
    #expect(abs(mean - 1000.5) < 0.05)
    #expect(Set(values).count >= 2)
  }
}

/// Native DSD leaves the packer in ALSA's byte order for each format, whatever the PCM format the
/// device would otherwise take.
@Suite struct NativeDSDPackingTests {
  @Test(arguments: NativeDSDFormat.allCases)
  func everyFormatStoresTheBitsInALSAsOrder(format: NativeDSDFormat) {
    var random: UInt32 = 0x9E37_79B9
    let channels: DSDFiles.Channels = (0..<2).map { _ in
      (0..<4000).map { _ in
        random ^= random << 13
        random ^= random >> 17
        random ^= random << 5
        return UInt8(truncatingIfNeeded: random)
      }
    }
    let bytes = format.bytesPerSample
    // The ring's samples: each sample's bytes, earliest on top, left-justified.
    var samples: [Int32] = []
    for start in stride(from: 0, to: 4000, by: bytes) {
      for side in channels {
        var word: UInt32 = 0
        for k in 0..<bytes { word |= UInt32(side[start + k]) << (24 - 8 * UInt32(k)) }
        samples.append(Int32(bitPattern: word))
      }
    }
    var packer = SamplePacker(format: .s16, nativeDSD: format)
    #expect(packer.bytesPerFrame == 2 * bytes)
    var out = [UInt8](repeating: 0, count: samples.count * bytes)
    let n = samples.withUnsafeBufferPointer { input in
      out.withUnsafeMutableBytes { packer.pack(input, into: $0, dither: true) }
    }
    #expect(n == out.count)
    let littleEndian = format == .u16le || format == .u32le
    #expect(out == DSDFiles.expectedNativeBytes(channels, bytes: bytes, littleEndian: littleEndian))
  }
}
