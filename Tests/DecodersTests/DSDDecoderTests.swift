import AudioBuffers
import Decoders
import Resampling
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// DSD files made here (no Debian tool writes them): DSF and DSDIFF around bits from a seeded
/// generator or from a 2nd-order sigma-delta modulator of a sine.
@Suite struct DSDDecoderTests {
  typealias Channels = DSDFiles.Channels
  static let dsd64 = DSDFiles.dsd64
  static func dsf(
    _ channels: Channels, rate: Int = dsd64, blockSize: Int = 4096, samples: Int? = nil, tag: [UInt8]? = nil
  ) -> [UInt8] {
    DSDFiles.dsf(channels, rate: rate, blockSize: blockSize, samples: samples, tag: tag)
  }
  static func dff(_ channels: Channels, rate: Int = dsd64, compression: String = "DSD ") -> [UInt8] {
    DSDFiles.dff(channels, rate: rate, compression: compression)
  }
  static func randomChannels(_ count: Int, bytes: Int, seed: UInt64) -> Channels {
    DSDFiles.randomChannels(count, bytes: bytes, seed: seed)
  }
  static func modulatedSine(frequency: Double, amplitude: Double, bytes: Int) -> Channels {
    DSDFiles.modulatedSine(frequency: frequency, amplitude: amplitude, bytes: bytes)
  }
  static func expectedDoP(_ channels: Channels) -> [Int32] { DSDFiles.expectedDoP(channels) }

  static let dop = DSDOutput(delivery: .dop)

  // MARK: DoP

  @Test(arguments: [UInt64(1), 2])
  func dsfPlaysAsDoPBitForBit(seed: UInt64) throws {
    // 3.5 blocks per channel: the padding of the last block is not played.
    let channels = Self.randomChannels(2, bytes: 4096 * 3 + 2048, seed: seed)
    let run = try decodeAll(DSDDecoder(output: Self.dop), Self.dsf(channels), seed: seed, maxChunk: 5000)
    #expect(run.finished)
    #expect(run.samples == Self.expectedDoP(channels))
    #expect(
      run.boundaries.map(\.format) == [AudioFormat(sampleRate: 176_400, channels: 2, bitsPerSample: 24, encoding: .dop)]
    )
  }

  @Test func dsdiffPlaysAsDoPBitForBit() throws {
    let channels = Self.randomChannels(2, bytes: 10000, seed: 9)
    let file = Self.dff(channels, rate: 2 * Self.dsd64)
    let run = try decodeAll(DSDDecoder(output: Self.dop), file, seed: 3, maxChunk: 3001)
    #expect(run.samples == Self.expectedDoP(channels))
    #expect(run.boundaries.first?.format.sampleRate == 352_800)
  }

  @Test func anOddLastByteIsCompletedWithSilenceAndMonoPlaysOnBothSides() throws {
    let channels = Self.randomChannels(1, bytes: 4096 + 7, seed: 5)
    let run = try decodeAll(DSDDecoder(output: Self.dop), Self.dsf(channels, samples: (4096 + 7) * 8), seed: 2)
    #expect(run.samples == Self.expectedDoP(channels))
    let runDFF = try decodeAll(DSDDecoder(output: Self.dop), Self.dff(channels), seed: 2)
    #expect(runDFF.samples == Self.expectedDoP(channels))
  }

  /// A DSF writer that could not seek back leaves the sample count 0: the data chunk's size counts.
  @Test func aSampleCountOfZeroPlaysTheWholeDataChunk() throws {
    let channels = Self.randomChannels(2, bytes: 4096 * 2, seed: 14)
    let run = try decodeAll(DSDDecoder(output: Self.dop), Self.dsf(channels, samples: 0), seed: 6)
    #expect(run.samples == Self.expectedDoP(channels))
  }

  @Test func ofMoreChannelsTheFirstTwoPlay() throws {
    let channels = Self.randomChannels(4, bytes: 6000, seed: 11)
    let run = try decodeAll(DSDDecoder(output: Self.dop), Self.dsf(channels), seed: 4)
    #expect(run.samples == Self.expectedDoP(Array(channels[0..<2])))
    let runDFF = try decodeAll(DSDDecoder(output: Self.dop), Self.dff(channels), seed: 4)
    #expect(runDFF.samples == Self.expectedDoP(Array(channels[0..<2])))
  }

  /// After a seek LMS sends the file's header, then the data from a block further on: the header
  /// counts more than follows, and the stream simply ends.
  @Test func aStreamShorterThanItsHeaderSaysPlaysWhatCame() throws {
    let channels = Self.randomChannels(2, bytes: 4096 * 4, seed: 6)
    let file = Self.dsf(channels)
    let headerBytes = file.count - 4096 * 4 * 2
    let seeked = Array(file[0..<headerBytes]) + Array(file[(headerBytes + 2 * 4096 * 2)...])
    let run = try decodeAll(DSDDecoder(output: Self.dop), seeked, seed: 8)
    #expect(run.finished)
    let rest = channels.map { Array($0[(2 * 4096)...]) }
    #expect(run.samples == Self.expectedDoP(rest))
  }

  /// A group read whole while nothing follows it yet waits for the look ahead at what comes next;
  /// when the rest of the stream then arrives and ends before the decoder runs again, the rest
  /// still plays (it was once dropped as if that group had been the last).
  @Test func theRestArrivingWithTheEndAfterAWholeGroupStillPlays() throws {
    let channels = Self.randomChannels(2, bytes: 4096 * 4, seed: 21)
    let file = Self.dsf(channels)
    let firstGroupEnd = file.count - 4096 * 3 * 2
    let input = StreamInput(capacity: file.count)
    let output = FrameOutput(capacityFrames: 4096 * 4)
    output.beginTrack(id: 1)
    let decoder = DSDDecoder(output: Self.dop)
    func feed(_ range: Range<Int>) {
      file.withUnsafeBytes { _ = input.ring.write(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }
    feed(0..<firstGroupEnd)
    var progress = DecodeProgress.decoded
    for _ in 0..<100 where progress != .needsInput { progress = try decoder.decode(from: input, to: output) }
    #expect(progress == .needsInput)
    #expect(output.bufferedFrames == 0)  // the first group waits for the look ahead
    feed(firstGroupEnd..<file.count)
    input.markEnded()
    for _ in 0..<100 where progress != .finished { progress = try decoder.decode(from: input, to: output) }
    #expect(progress == .finished)
    var samples = [Int32](repeating: 0, count: output.bufferedFrames * 2)
    _ = samples.withUnsafeMutableBytes { output.ring.read(into: $0) }
    let expected = Self.expectedDoP(channels)
    #expect(samples.count == expected.count)
    #expect(firstDifference(samples, expected) == nil)
  }

  /// `-R` never touches DoP: the frames pass a resampler that would take any other track to 96 kHz.
  @Test func doPPassesTheResamplerUntouched() throws {
    let channels = Self.randomChannels(2, bytes: 9000, seed: 12)
    let decoder = ResamplingDecoder(
      wrapping: DSDDecoder(output: Self.dop),
      settings: ResamplingSettings(recipe: try ResampleRecipe(parsing: "vX"), supportedRates: [96000]))
    let run = try decodeAll(decoder, Self.dsf(channels), seed: 2)
    #expect(run.samples == Self.expectedDoP(channels))
    #expect(run.boundaries.first?.format.sampleRate == 176_400)
  }

  /// The same after a seek in a file whose last block is padded and which ends in an ID3 chunk:
  /// the stream's last group is the one the tag follows, and only its audio plays (the padding is
  /// full-scale negative DSD, the tag noise).
  @Test(arguments: [true, false])
  func afterASeekThePaddingAndTheTagDoNotPlay(withTag: Bool) throws {
    let channels = Self.randomChannels(2, bytes: 4096 * 3 + 1000, seed: 16)
    let tag: [UInt8]? =
      withTag ? Array("ID3".utf8) + [4, 0, 0, 0, 0, 0, 120] + Array(repeating: 0xAB, count: 120) : nil
    let file = Self.dsf(channels, tag: tag)
    let audioStart = 28 + 52 + 12
    let seeked = Array(file[0..<audioStart]) + Array(file[(audioStart + 4096 * 2)...])
    let run = try decodeAll(DSDDecoder(output: Self.dop), seeked, seed: 9, maxChunk: 1500)
    #expect(run.finished)
    #expect(run.samples == Self.expectedDoP(channels.map { Array($0[4096...]) }))
    // Played whole, the same file ends where its samples do too.
    let whole = try decodeAll(DSDDecoder(output: Self.dop), file, seed: 3)
    #expect(whole.samples == Self.expectedDoP(channels))
  }

  /// The same for DSDIFF: after a seek (LMS resends the header, then the file from a frame further
  /// on to its end) the chunks after the audio come sooner than the header says, inside a group
  /// and at any frame; they do not play. Read whole, byte by byte at the boundary or in odd
  /// pieces, the audio ends where the stream's does; played whole, the file ends where its
  /// samples do.
  @Test(arguments: [("ID3 ", 1), ("DIIN", 7), ("COMT", 4096)])
  func afterASeekTheChunksAfterDSDIFFAudioDoNotPlay(name: String, maxChunk: Int) throws {
    let channels = Self.randomChannels(2, bytes: 4096 * 3 + 1001, seed: 18)
    let tag = Array(name.utf8) == Array("ID3 ".utf8) ? Array("ID3".utf8) + [4, 0, 0, 0, 0, 0, 40] : []
    let trailing: [(String, [UInt8])] = [(name, tag + Array(repeating: 0x4D, count: 77)), ("MANF", [1, 2, 3, 4])]
    let file = DSDFiles.dff(channels, trailing: trailing)
    let whole = try decodeAll(DSDDecoder(output: Self.dop), file, seed: 2, maxChunk: maxChunk)
    #expect(whole.samples == Self.expectedDoP(channels))
    var trailingBytes = 0
    for (_, body) in trailing { trailingBytes += 12 + body.count + body.count % 2 }
    let audioStart = file.count - (4096 * 3 + 1001) * 2 - trailingBytes
    let skippedFrames = 1234
    let seeked = Array(file[0..<audioStart]) + Array(file[(audioStart + 2 * skippedFrames)...])
    let run = try decodeAll(DSDDecoder(output: Self.dop), seeked, seed: 3, maxChunk: maxChunk)
    #expect(run.finished)
    #expect(run.samples == Self.expectedDoP(channels.map { Array($0[skippedFrames...]) }))
  }

  /// Header fields at the edges of what the guards allow: each refused with its reason.
  @Test func hostileHeaderFieldsAreRefused() throws {
    let channels = Self.randomChannels(2, bytes: 512, seed: 17)
    func patched(_ file: [UInt8], at offset: Int, _ bytes: [UInt8]) -> [UInt8] {
      var copy = file
      copy.replaceSubrange(offset..<offset + bytes.count, with: bytes)
      return copy
    }
    let dsf = Self.dsf(channels, blockSize: 256)
    let fmt = 28  // the fmt chunk's offset
    let cases: [([UInt8], DecodeError)] = [
      (patched(dsf, at: 4, DSDFiles.le(1 << 62, 8)), .corrupt("DSF header chunk of 4611686018427387904 bytes")),
      (
        patched(dsf, at: fmt + 4, DSDFiles.le(UInt64.max, 8)),
        .corrupt("DSF chunk 'fmt ' of 18446744073709551615 bytes")
      ),
      (patched(dsf, at: fmt + 24, DSDFiles.le(9, 4)), .unsupportedStream("DSD with 9 channels")),
      (patched(dsf, at: fmt + 24, DSDFiles.le(0, 4)), .unsupportedStream("DSD with 0 channels")),
      (patched(dsf, at: fmt + 28, DSDFiles.le(0, 4)), .unsupportedStream("DSD at 0 Hz")),
      (patched(dsf, at: fmt + 44, DSDFiles.le(255, 4)), .corrupt("DSF block size 255")),
      (patched(dsf, at: fmt + 44, DSDFiles.le(65538, 4)), .corrupt("DSF block size 65538")),
      (patched(dsf, at: fmt + 44, DSDFiles.le(0, 4)), .corrupt("DSF block size 0")),
      (patched(dsf, at: fmt + 36, DSDFiles.le(UInt64.max, 8)), .corrupt("DSF sample count 18446744073709551615")),
      (patched(dsf, at: fmt + 16, DSDFiles.le(1, 4)), .unsupportedStream("DSF format 1 (only raw DSD plays)")),
    ]
    for (file, error) in cases {
      #expect(throws: error) { try decodeAll(DSDDecoder(output: Self.dop), file) }
    }
    let dff = Self.dff(channels)
    // FRM8 (12) + form type (4) + FVER (16) + PROP header (12) + SND (4): the FS chunk.
    let fs = 48
    #expect(throws: DecodeError.corrupt("DSDIFF chunk 'FS  ' of 18446744073709551615 bytes")) {
      try decodeAll(DSDDecoder(output: Self.dop), patched(dff, at: fs + 4, DSDFiles.be(UInt64.max, 8)))
    }
    #expect(throws: DecodeError.corrupt("DSDIFF FS   chunk of 2 bytes")) {
      try decodeAll(DSDDecoder(output: Self.dop), patched(dff, at: fs + 4, DSDFiles.be(2, 8)))
    }
    #expect(throws: DecodeError.unsupportedStream("DSD with 9 channels")) {
      try decodeAll(DSDDecoder(output: Self.dop), patched(dff, at: fs + 16 + 12, DSDFiles.be(9, 2)))
    }
  }

  /// DSD256 as DoP needs 705.6 kHz: on an output that takes 192 kHz it is converted to PCM at
  /// 176.4 kHz (not at an eighth of its rate, which no output takes): 4096 bytes, 512 frames.
  @Test func aDoPRateAboveTheOutputsIsConvertedToPCM() throws {
    let channels = Self.randomChannels(2, bytes: 4096, seed: 1)
    let decoder = DSDDecoder(output: DSDOutput(delivery: .dop, maximumRate: 176_400, maximumPCMRate: 192_000))
    let run = try decodeAll(decoder, Self.dsf(channels, rate: 4 * Self.dsd64), seed: 1)
    #expect(run.boundaries.map(\.format) == [AudioFormat(sampleRate: 176_400, channels: 2, bitsPerSample: 24)])
    #expect(run.samples.count == 2 * 512)
    #expect(decoder.content == "DSF DSD256, converted to PCM")
  }

  // MARK: Native DSD

  /// Every native format, from DSF (LSB-first blocks) and DSDIFF (interleaved bytes): the bits in
  /// time order, at the DSD rate / (8 × bytes per sample); a last sample short of bytes (3 bytes
  /// per channel over a whole number of words) completed with DSD silence.
  @Test(arguments: NativeDSDFormat.allCases)
  func dsfAndDsdiffPlayAsNativeDSDBitForBit(format: NativeDSDFormat) throws {
    let bytes = 4096 * 3 + 1027
    let channels = Self.randomChannels(2, bytes: bytes, seed: 41)
    let output = DSDOutput(delivery: .native(format))
    let expected = DSDFiles.expectedNativeSamples(channels, bytes: format.bytesPerSample)
    let dsf = try decodeAll(DSDDecoder(output: output), Self.dsf(channels, samples: bytes * 8), seed: 5, maxChunk: 3001)
    #expect(dsf.finished)
    #expect(dsf.samples == expected)
    let rate = Self.dsd64 / (8 * format.bytesPerSample)
    #expect(
      dsf.boundaries.map(\.format) == [
        AudioFormat(
          sampleRate: rate, channels: 2, bitsPerSample: 8 * format.bytesPerSample, encoding: .dsd(format))
      ])
    let dff = try decodeAll(DSDDecoder(output: output), Self.dff(channels), seed: 6, maxChunk: 2999)
    #expect(dff.samples == expected)
  }

  /// Native DSD passes `-R` untouched; mono plays on both sides.
  @Test func nativeDSDPassesTheResamplerAndMonoPlaysOnBothSides() throws {
    let channels = Self.randomChannels(1, bytes: 9001, seed: 42)
    let decoder = ResamplingDecoder(
      wrapping: DSDDecoder(output: DSDOutput(delivery: .native(.u16le))),
      settings: ResamplingSettings(recipe: try ResampleRecipe(parsing: "vX"), supportedRates: [96000]))
    let run = try decodeAll(decoder, Self.dsf(channels, samples: 9001 * 8), seed: 2)
    #expect(run.samples == DSDFiles.expectedNativeSamples(channels, bytes: 2))
    #expect(run.boundaries.first?.format.sampleRate == 176_400)
  }

  /// A frame rate above what the output takes is converted to PCM instead (as squeezelite does):
  /// DSD64 as `u8` needs 352.8 kHz.
  @Test func nativeAboveTheOutputsRateIsConvertedToPCM() throws {
    let channels = Self.randomChannels(2, bytes: 4096, seed: 43)
    let limited = DSDOutput(delivery: .native(.u8), maximumRate: 192_000)
    let run = try decodeAll(DSDDecoder(output: limited), Self.dsf(channels), seed: 1)
    #expect(run.boundaries.map(\.format) == [AudioFormat(sampleRate: 352_800, channels: 2, bitsPerSample: 24)])
    let taken = try decodeAll(
      DSDDecoder(output: DSDOutput(delivery: .native(.u32le), maximumRate: 192_000)), Self.dsf(channels), seed: 1)
    #expect(taken.boundaries.first?.format.encoding == .dsd(.u32le))
  }

  // MARK: PCM

  /// A −6 dB 1 kHz sine through the modulator comes out of the conversion at −6 dBFS, with what
  /// is not the sine (the modulator's noise left by the filter, and what the decimation folds
  /// back) more than 50 dB down: at 352.8 kHz from DSD64, DSD128 and DSD256 alike, and at
  /// 176.4 kHz from DSD64 for an output that takes no more than 192 kHz. The same bits in DSDIFF
  /// give the same samples.
  @Test(arguments: [(1, 384_000, 352_800), (1, 192_000, 176_400), (2, 384_000, 352_800), (4, 384_000, 352_800)])
  func conversionToPCMKeepsTheSignal(multiple: Int, maximumPCMRate: Int, rate: Int) throws {
    let dsdRate = Self.dsd64 * multiple
    let bytesPerSample = dsdRate / 8 / rate
    let channels = DSDFiles.modulatedSine(
      frequency: 1000, amplitude: 0.5, bytes: 60000 * bytesPerSample, rate: dsdRate)
    let output = DSDOutput(delivery: .pcm, maximumPCMRate: maximumPCMRate)
    let run = try decodeAll(DSDDecoder(output: output), Self.dsf(channels, rate: dsdRate), seed: 3)
    #expect(run.boundaries.map(\.format) == [AudioFormat(sampleRate: rate, channels: 2, bitsPerSample: 24)])
    #expect(run.samples.count == 2 * 60000)
    for side in 0..<2 {
      // Past the filter's start (its history begins as silence).
      let y = stride(from: 2 * 1000 + side, to: run.samples.count, by: 2).map {
        Double(run.samples[$0]) / 2_147_483_648
      }
      // Least-squares fit of a sine and cosine at 1 kHz plus an offset, whatever the delay.
      let w = 2 * Double.pi * 1000 / Double(rate)
      var s = [0.0, 0.0, 0.0]
      var m = [[Double]](repeating: [0, 0, 0], count: 3)
      for (n, value) in y.enumerated() {
        let basis = [sin(w * Double(n)), cos(w * Double(n)), 1]
        for i in 0..<3 {
          s[i] += basis[i] * value
          for j in 0..<3 { m[i][j] += basis[i] * basis[j] }
        }
      }
      let fit = solve3(m, s)
      let amplitude = (fit[0] * fit[0] + fit[1] * fit[1]).squareRoot()
      var residual = 0.0
      for (n, value) in y.enumerated() {
        let model = fit[0] * sin(w * Double(n)) + fit[1] * cos(w * Double(n)) + fit[2]
        residual += (value - model) * (value - model)
      }
      let noiseDB = 10 * log10(residual / Double(y.count) / (amplitude * amplitude / 2))
      #expect(abs(20 * log10(amplitude / 0.5)) < 0.1, "amplitude \(amplitude)")
      #expect(noiseDB < -50, "noise \(noiseDB) dB")
    }
    let runDFF = try decodeAll(DSDDecoder(output: output), Self.dff(channels, rate: dsdRate), seed: 5)
    #expect(runDFF.samples == run.samples)
  }

  // MARK: Bad input

  @Test func whatCannotPlayIsRefusedWithTheReason() throws {
    let channels = Self.randomChannels(2, bytes: 100, seed: 1)
    #expect(throws: DecodeError.unsupportedStream("DSDIFF compressed as 'DST ' (only uncompressed DSD plays)")) {
      try decodeAll(DSDDecoder(output: Self.dop), Self.dff(channels, compression: "DST "))
    }
    #expect(throws: DecodeError.unsupportedStream("neither DSF nor DSDIFF (starts with <htm)")) {
      try decodeAll(DSDDecoder(output: Self.dop), Array("<html>nope</html>".utf8))
    }
    #expect(throws: DecodeError.unsupportedStream("DSD at 1234 Hz")) {
      try decodeAll(DSDDecoder(output: Self.dop), Self.dsf(channels, rate: 1234))
    }
    let file = Self.dsf(channels)
    #expect(throws: DecodeError.corrupt("stream ended inside the DSD file's header")) {
      try decodeAll(DSDDecoder(output: Self.dop), Array(file[0..<70]))
    }
  }

  /// Every cut of a real header, and every byte of it replaced by 0xFF or 0x00, ends in frames,
  /// `finished` or a decode error: never a trap or a stall.
  @Test func damagedHeadersEndCleanly() {
    let channels = Self.randomChannels(2, bytes: 600, seed: 2)
    for file in [Self.dsf(channels, blockSize: 256), Self.dff(channels)] {
      let header = min(file.count, 140)
      for index in 0..<header {
        for value: UInt8 in [0x00, 0xFF] {
          var damaged = file
          damaged[index] = value
          _ = try? decodeAll(DSDDecoder(output: Self.dop), damaged, seed: UInt64(index))
        }
        _ = try? decodeAll(DSDDecoder(output: .pcm), Array(file[0..<index]), seed: 1)
      }
    }
  }
}

/// Solves a 3×3 linear system by Cramer's rule.
private func solve3(_ m: [[Double]], _ v: [Double]) -> [Double] {
  func det(_ a: [[Double]]) -> Double {
    a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
      + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0])
  }
  let d = det(m)
  return (0..<3).map { column in
    var a = m
    for row in 0..<3 { a[row][column] = v[row] }
    return det(a) / d
  }
}
