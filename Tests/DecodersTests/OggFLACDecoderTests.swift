import AudioBuffers
import Decoders
import Testing

/// FLAC in Ogg (what LMS sends for an Ogg FLAC file, `ogf`), made by Debian's flac, against
/// `flac -d`: whole, and chained streams link by link.
@Suite struct OggFLACDecoderTests {
  @Test(arguments: [UInt64(1), 2], [24 << 10, 700])
  func oggFLACEqualsFlacDecode(seed: UInt64, maxChunk: Int) throws {
    let dir = TempDir()
    dir.run("sox -n -r 44100 -c 2 -b 16 x.wav synth 3 sine 440 pinknoise vol 0.3")
    dir.run(
      "flac -s -f --ogg -o x.oga x.wav && flac -s -f -d --force-raw-format --endian=little --sign=signed -o x.raw x.oga"
    )
    let run = try decodeAll(FLACStreamDecoder(), dir.read("x.oga"), seed: seed, maxChunk: maxChunk)
    #expect(run.finished)
    expectBitExact(run.samples, signedSamples(dir.read("x.raw"), bytes: 2), channels: 2, shift: 16)
    #expect(run.boundaries.map(\.format) == [AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16)])
  }

  @Test func hiResOggFLAC() throws {
    let dir = TempDir()
    dir.run("sox -n -r 96000 -c 2 -b 24 x.wav synth 2 sine 1000 pinknoise vol 0.3")
    dir.run(
      "flac -s -f --ogg -o x.oga x.wav && flac -s -f -d --force-raw-format --endian=little --sign=signed -o x.raw x.oga"
    )
    let run = try decodeAll(FLACStreamDecoder(), dir.read("x.oga"), seed: 3)
    expectBitExact(run.samples, signedSamples(dir.read("x.raw"), bytes: 3), channels: 2, shift: 8)
  }

  /// Two Ogg FLAC files one after the other (a chained stream, as Ogg radio sends), the second in
  /// another format: each link whole, the second under a boundary of its own.
  @Test(arguments: [UInt64(1), 2])
  func chainedLinksPlayOneAfterTheOther(seed: UInt64) throws {
    let dir = TempDir()
    dir.run("sox -n -r 44100 -c 2 -b 16 a.wav synth 1.3 sine 440 pinknoise vol 0.3")
    dir.run("sox -n -r 48000 -c 1 -b 16 b.wav synth 1.7 sine 660 pinknoise vol 0.3")
    dir.run("flac -s -f --ogg --serial-number=1 -o a.oga a.wav && flac -s -f --ogg --serial-number=2 -o b.oga b.wav")
    dir.run("cat a.oga b.oga > ab.oga")
    let decode = "flac -s -f -d --force-raw-format --endian=little --sign=signed"
    dir.run("\(decode) -o a.raw a.oga && \(decode) -o b.raw b.oga")
    let first = signedSamples(dir.read("a.raw"), bytes: 2)
    let second = signedSamples(dir.read("b.raw"), bytes: 2)
    let run = try decodeAll(FLACStreamDecoder(), dir.read("ab.oga"), seed: seed, maxChunk: 3000)
    #expect(run.finished)
    #expect(
      run.boundaries.map(\.format) == [
        AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16),
        AudioFormat(sampleRate: 48000, channels: 1, bitsPerSample: 16),
      ])
    let split = run.boundaries.last?.frame ?? 0
    #expect(split == first.count / 2)
    expectBitExact(Array(run.samples[..<(2 * split)]), first, channels: 2, shift: 16)
    expectBitExact(Array(run.samples[(2 * split)...]), second, channels: 1, shift: 16)
  }

  /// What LMS 7.9 names a radio stream's format by is its content type: Ogg FLAC may arrive as
  /// `o` (Ogg Vorbis) and Ogg Vorbis as `f`. Each plays by what its first packet holds.
  @Test func anOggStreamPlaysWhateverTheServerCalledIt() throws {
    let dir = TempDir()
    dir.run("sox -n -r 44100 -c 2 -b 16 x.wav synth 1.5 sine 440 pinknoise vol 0.3")
    dir.run("flac -s -f --ogg -o x.oga x.wav && oggenc --quiet -o x.ogg x.wav && oggdec --quiet -R -o v.raw x.ogg")
    let source = signedSamples(wavData(dir.read("x.wav")), bytes: 2)
    let vorbis = try DecoderFactory.make(codec: .vorbis)
    let asVorbis = try decodeAll(vorbis, dir.read("x.oga"), seed: 5)
    expectBitExact(asVorbis.samples, source, channels: 2, shift: 16)
    #expect(vorbis.content == "Ogg FLAC")
    let flac = try DecoderFactory.make(codec: .flac)
    let asFLAC = try decodeAll(flac, dir.read("x.ogg"), seed: 6)
    expectBitExact(asFLAC.samples, signedSamples(dir.read("v.raw"), bytes: 2), channels: 2, shift: 16)
    #expect(flac.content == "Ogg Vorbis")
    // As announced: nothing to add.
    let plain = try DecoderFactory.make(codec: .vorbis)
    _ = try decodeAll(plain, dir.read("x.ogg"), seed: 7)
    #expect(plain.content == nil)
  }

  /// An Ogg stream of a codec this player does not decode (Speex, Theora…): said at once.
  @Test func anOggStreamOfAnotherCodecIsRejected() throws {
    var page = Array("OggS".utf8) + [0, 2] + Array(repeating: 0, count: 20) + [1, 30]
    page += Array("\u{80}theora".utf8) + Array(repeating: 0, count: 23)
    #expect(throws: DecodeError.self) { try decodeAll(FLACStreamDecoder(), page) }
    #expect(throws: DecodeError.self) { try decodeAll(OggStreamDecoder(), page) }
  }

  /// A chained stream whose next link is not FLAC: the FLAC link plays whole, then the stream fails
  /// with the reason.
  @Test func aNextLinkThatIsNotFLACEndsAfterTheLastFLACLinkPlayedWhole() throws {
    let dir = TempDir()
    dir.run("sox -n -r 44100 -c 2 -b 16 a.wav synth 1.2 sine 440 pinknoise vol 0.3")
    dir.run("flac -s -f --ogg --serial-number=1 -o a.oga a.wav && oggenc --quiet -s 2 -o b.ogg a.wav")
    dir.run("cat a.oga b.ogg > ab.oga")
    let decoder = try DecoderFactory.make(codec: .flac)
    let input = DecoderContractTests.feed(dir.read("ab.oga"), end: true)
    let output = FrameOutput(capacityFrames: 1 << 18)
    output.beginTrack(id: 1)
    var samples: [Int32] = []
    var failure: DecodeError?
    do {
      try DecoderContractTests.finish(decoder, input, output, into: &samples)
    } catch let error as DecodeError {
      failure = error
    }
    #expect(failure != nil)
    expectBitExact(samples, signedSamples(wavData(dir.read("a.wav")), bytes: 2), channels: 2, shift: 16)
  }

  /// "OggS" split by the stream ring's wrap (a stream that begins just before it) is still seen.
  @Test func oggIsRecognisedAcrossTheRingsWrap() throws {
    let dir = TempDir()
    dir.run("sox -n -r 44100 -c 2 -b 16 x.wav synth 1 sine 440 pinknoise vol 0.3")
    dir.run("flac -s -f --ogg -o x.oga x.wav")
    let bytes = dir.read("x.oga")
    let input = StreamInput(capacity: 1 << 16)
    let junk = [UInt8](repeating: 0, count: (1 << 16) - 2)
    _ = junk.withUnsafeBytes { input.ring.write($0) }
    _ = input.ring.discardAll()
    let output = FrameOutput(capacityFrames: 1 << 18)
    output.beginTrack(id: 1)
    let decoder = FLACStreamDecoder()
    var fed = 0
    var samples: [Int32] = []
    var buffer = [Int32](repeating: 0, count: 1 << 15)
    for _ in 0..<100_000 {
      if fed < bytes.count {
        let n = min(input.ring.space, bytes.count - fed, 5000)
        fed += bytes.withUnsafeBytes { input.ring.write(UnsafeRawBufferPointer(rebasing: $0[fed..<(fed + n)])) }
        if fed == bytes.count { input.markEnded() }
      }
      let progress = try decoder.decode(from: input, to: output)
      while output.bufferedFrames > 0 {
        let n = buffer.withUnsafeMutableBytes { output.ring.read(into: $0) }
        samples += buffer[0..<(n / 4)]
      }
      if progress == .finished { break }
    }
    expectBitExact(samples, signedSamples(wavData(dir.read("x.wav")), bytes: 2), channels: 2, shift: 16)
  }
}
