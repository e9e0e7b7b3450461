import AudioBuffers
import Decoders
import Testing

@Suite struct PCMDecoderTests {
  /// Makes `name` with sox and returns it with its samples as signed raw (`bytes` per sample).
  private func media(_ dir: TempDir, _ name: String, sox: String, bytes: Int) -> (file: [UInt8], reference: [Int32]) {
    // `sox`: output format options, then "synth …".
    let synth = sox.firstRange(of: " synth ")!
    dir.run("sox -n \(sox[..<synth.lowerBound]) \(name)\(sox[synth.lowerBound...])")
    dir.run("sox \(name) -t raw -e signed -b \(bytes * 8) -L ref.raw")
    return (dir.read(name), signedSamples(dir.read("ref.raw"), bytes: bytes))
  }

  @Test(arguments: [UInt64(1), 2, 3])
  func wav16IsBitExact(seed: UInt64) throws {
    let dir = TempDir()
    let (wav, reference) = media(dir, "x.wav", sox: "-r 44100 -c 2 -b 16 synth 2 sine 440 whitenoise vol 0.5", bytes: 2)
    let run = try decodeAll(try PCMDecoder(), wav, seed: seed, maxChunk: 777)
    #expect(run.finished)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
    #expect(
      run.boundaries == [
        TrackBoundary(trackID: 7, frame: 0, format: AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16))
      ])
  }

  @Test func wav24ExtensibleIsBitExact() throws {
    let dir = TempDir()
    let (wav, reference) = media(dir, "x.wav", sox: "-r 96000 -c 2 -b 24 synth 1 sine 1000 pinknoise vol 0.5", bytes: 3)
    #expect(wav[20] == 0xFE && wav[21] == 0xFF)  // WAVE_FORMAT_EXTENSIBLE
    let run = try decodeAll(try PCMDecoder(), wav, seed: 4, maxChunk: 1001)
    expectBitExact(run.samples, reference, channels: 2, shift: 8)
    #expect(run.boundaries.first?.format == AudioFormat(sampleRate: 96000, channels: 2, bitsPerSample: 24))
  }

  @Test func wav32IsBitExact() throws {
    let dir = TempDir()
    let (wav, reference) = media(
      dir, "x.wav", sox: "-r 48000 -c 2 -b 32 -e signed synth 1 sine 1000 whitenoise vol 0.5", bytes: 4)
    let run = try decodeAll(try PCMDecoder(), wav, seed: 5)
    expectBitExact(run.samples, reference, channels: 2, shift: 0)
  }

  @Test func wav8BitMonoIsUnsigned() throws {
    let dir = TempDir()
    let (wav, reference) = media(dir, "x.wav", sox: "-r 22050 -c 1 -b 8 synth 1 sine 300 whitenoise vol 0.5", bytes: 1)
    #expect(wav[34] == 8)
    let run = try decodeAll(try PCMDecoder(), wav, seed: 6, maxChunk: 333)
    expectBitExact(run.samples, reference, channels: 1, shift: 24)
    #expect(run.boundaries.first?.format == AudioFormat(sampleRate: 22050, channels: 1, bitsPerSample: 8))
  }

  @Test func threeChannelsKeepTheFirstTwo() throws {
    let dir = TempDir()
    let (wav, reference) = media(dir, "x.wav", sox: "-r 44100 -c 3 -b 16 synth 1 sine 200 sine 300 sine 400", bytes: 2)
    let run = try decodeAll(try PCMDecoder(), wav, seed: 7, maxChunk: 500)
    var firstTwo: [Int32] = []
    for frame in 0..<(reference.count / 3) { firstTwo += [reference[frame * 3], reference[frame * 3 + 1]] }
    expectBitExact(run.samples, firstTwo, channels: 2, shift: 16)
  }

  @Test func aiff16IsBitExact() throws {
    let dir = TempDir()
    let (aiff, reference) = media(
      dir, "x.aiff", sox: "-r 44100 -c 2 -b 16 synth 2 sine 440 whitenoise vol 0.5", bytes: 2)
    let run = try decodeAll(try PCMDecoder(littleEndian: true), aiff, seed: 8, maxChunk: 999)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
    #expect(run.boundaries.first?.format == AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16))
  }

  @Test func aiff24MonoIsBitExact() throws {
    let dir = TempDir()
    let (aiff, reference) = media(
      dir, "x.aiff", sox: "-r 88200 -c 1 -b 24 synth 1 sine 440 pinknoise vol 0.5", bytes: 3)
    let run = try decodeAll(try PCMDecoder(), aiff, seed: 9, maxChunk: 1234)
    expectBitExact(run.samples, reference, channels: 1, shift: 8)
    #expect(run.boundaries.first?.format == AudioFormat(sampleRate: 88200, channels: 1, bitsPerSample: 24))
  }

  @Test func aiff8BitIsSigned() throws {
    let dir = TempDir()
    let (aiff, reference) = media(
      dir, "x.aiff", sox: "-r 11025 -c 2 -b 8 synth 1 sine 440 whitenoise vol 0.5", bytes: 1)
    let run = try decodeAll(try PCMDecoder(), aiff, seed: 10)
    expectBitExact(run.samples, reference, channels: 2, shift: 24)
  }

  @Test func aifcLittleEndianIsBitExact() throws {
    let dir = TempDir()
    dir.run("sox -n -r 48000 -c 2 -b 16 x.wav synth 1 sine 440 whitenoise vol 0.5")
    dir.run("sox x.wav -t raw -e signed -b 16 -L ref.raw")
    let samples = dir.read("ref.raw")
    // AIFF-C with 'sowt' compression: little-endian samples (built by hand).
    func be32(_ v: Int) -> [UInt8] {
      [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
    }
    let frames = samples.count / 4
    var comm: [UInt8] = [0, 2] + be32(frames) + [0, 16]
    comm += [0x40, 0x0E, 0xBB, 0x80, 0, 0, 0, 0, 0, 0]  // 48000 as 80-bit extended
    comm += Array("sowt".utf8) + [0, 0]
    let ssnd: [UInt8] = be32(0) + be32(0) + samples
    var aifc = Array("FORM".utf8) + be32(4 + 8 + comm.count + 8 + ssnd.count) + Array("AIFC".utf8)
    aifc += Array("COMM".utf8) + be32(comm.count) + comm
    aifc += Array("SSND".utf8) + be32(ssnd.count) + ssnd
    let run = try decodeAll(try PCMDecoder(), aifc, seed: 11)
    expectBitExact(run.samples, signedSamples(samples, bytes: 2), channels: 2, shift: 16)
    #expect(run.boundaries.first?.format == AudioFormat(sampleRate: 48000, channels: 2, bitsPerSample: 16))
  }

  @Test func rawPCMUsesTheGivenParameters() throws {
    let dir = TempDir()
    dir.run("sox -n -r 32000 -c 2 -b 24 x.wav synth 1 sine 440 whitenoise vol 0.5")
    dir.run("sox x.wav -t raw -e signed -b 24 -B be.raw")
    dir.run("sox x.wav -t raw -e signed -b 24 -L ref.raw")
    let decoder = try DecoderFactory.make(
      codec: .pcm, pcm: PCMParameters(sampleRate: 32000, channels: 2, bitsPerSample: 24, littleEndian: false))
    let run = try decodeAll(decoder, dir.read("be.raw"), seed: 12, maxChunk: 1000)
    expectBitExact(run.samples, signedSamples(dir.read("ref.raw"), bytes: 3), channels: 2, shift: 8)
    #expect(run.boundaries.first?.format == AudioFormat(sampleRate: 32000, channels: 2, bitsPerSample: 24))
  }

  @Test func rawPCMDefaultsTo44k1Stereo16BitLittleEndian() throws {
    let dir = TempDir()
    dir.run("sox -n -r 44100 -c 2 -b 16 x.wav synth 1 sine 440 whitenoise vol 0.5")
    dir.run("sox x.wav -t raw -e signed -b 16 -L ref.raw")
    let raw = dir.read("ref.raw")
    let run = try decodeAll(
      try DecoderFactory.make(codec: .pcm, pcm: nil), raw + [0x12, 0x34, 0x56], seed: 13, maxChunk: 99)
    // The trailing partial frame is dropped.
    expectBitExact(run.samples, signedSamples(raw, bytes: 2), channels: 2, shift: 16)
    #expect(run.boundaries.first?.format == AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16))
  }

  @Test func rawEightBitIsUnsigned() throws {
    let samples: [UInt8] = [0, 128, 255, 127, 1, 200]
    let decoder = try PCMDecoder(sampleRate: 8000, channels: 1, bitsPerSample: 8)
    let run = try decodeAll(decoder, samples)
    expectBitExact(run.samples, samples.map { Int32($0) - 128 }, channels: 1, shift: 24)
  }

  @Test func unknownDataSizePlaysToTheEnd() throws {
    let dir = TempDir()
    var (wav, reference) = media(dir, "x.wav", sox: "-r 44100 -c 2 -b 16 synth 1 sine 440", bytes: 2)
    #expect(wav[36..<40].elementsEqual(Array("data".utf8)))
    for i in 4..<8 { wav[i] = 0xFF }
    for i in 40..<44 { wav[i] = 0xFF }
    let run = try decodeAll(try PCMDecoder(), wav, seed: 14)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
  }

  @Test func chunksAroundTheDataAreSkipped() throws {
    let dir = TempDir()
    let (wav, reference) = media(dir, "x.wav", sox: "-r 44100 -c 2 -b 16 synth 1 sine 440", bytes: 2)
    // RIFF header + fmt (36 bytes), then an odd-sized chunk (padded), the data, a trailing LIST.
    var body = Array(wav[0..<36])
    body += Array("junk".utf8) + [3, 0, 0, 0] + [1, 2, 3] + [0]
    body += Array(wav[36...])
    body += Array("LIST".utf8) + [8, 0, 0, 0] + Array("INFOabcd".utf8)
    let run = try decodeAll(try PCMDecoder(), body, seed: 15, maxChunk: 5)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
  }

  @Test func largeChunkBeforeTheDataThroughASmallRing() throws {
    let dir = TempDir()
    let (wav, reference) = media(dir, "x.wav", sox: "-r 44100 -c 2 -b 16 synth 1 sine 440", bytes: 2)
    let size = 300_001
    var body = Array(wav[0..<36])
    body += Array("LIST".utf8) + [UInt8(size & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size >> 16), 0]
    body += [UInt8](repeating: 0x41, count: size + 1)
    body += Array(wav[36...])
    let run = try decodeAll(try PCMDecoder(), body, seed: 16, streamCapacity: 16 << 10)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
  }

  @Test func htmlBodyThrows() throws {
    #expect(throws: DecodeError.self) { try decodeAll(try PCMDecoder(), htmlBody) }
  }

  @Test func floatWAVIsRejected() throws {
    let dir = TempDir()
    dir.run("sox -n -r 44100 -c 2 -b 32 -e float x.wav synth 0.1 sine 440")
    #expect(throws: DecodeError.self) { try decodeAll(try PCMDecoder(), dir.read("x.wav")) }
  }

  @Test func truncatedHeaderThrows() throws {
    let dir = TempDir()
    let (wav, _) = media(dir, "x.wav", sox: "-r 44100 -c 2 -b 16 synth 0.1 sine 440", bytes: 2)
    #expect(throws: DecodeError.self) { try decodeAll(try PCMDecoder(), Array(wav[0..<30])) }
  }

  @Test func invalidParametersAreRejected() {
    #expect(throws: DecodeError.self) { try PCMDecoder(bitsPerSample: 12) }
    #expect(throws: DecodeError.self) { try DecoderFactory.make(codec: .pcm, pcm: PCMParameters(channels: 0)) }
  }
}
