import AudioBuffers
import Decoders
import Testing

@Suite struct MP3DecoderTests {
  private func media(_ dir: TempDir, wav: String, lame: String) -> (mp3: [UInt8], reference: [Int32], sourceFrames: Int)
  {
    dir.run("sox -n \(wav)")
    dir.run("lame --quiet \(lame) x.wav x.mp3")
    dir.run("mpg123 -q -s x.mp3 > ref.raw")
    let sourceFrames =
      Int(String(decoding: readCommandOutput(dir, "soxi -s x.wav"), as: UTF8.self).filter(\.isNumber)) ?? -1
    return (dir.read("x.mp3"), signedSamples(dir.read("ref.raw"), bytes: 2), sourceFrames)
  }

  private func readCommandOutput(_ dir: TempDir, _ command: String) -> [UInt8] {
    dir.run(command + " > out.txt")
    return dir.read("out.txt")
  }

  @Test(arguments: [UInt64(1), 2])
  func cbr320IsBitExactAndGapless(seed: UInt64) throws {
    let dir = TempDir()
    let (mp3, reference, sourceFrames) = media(
      dir, wav: "-r 44100 -c 2 -b 16 x.wav synth 3 sine 440 pinknoise vol 0.3", lame: "-b 320")
    let decoder = try MP3Decoder()
    let run = try decodeAll(decoder, mp3, seed: seed, maxChunk: 5000)
    #expect(run.finished)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
    // Gapless: encoder delay and padding are gone, the length is the source's.
    #expect(run.samples.count / 2 == sourceFrames)
    #expect(
      run.boundaries == [
        TrackBoundary(trackID: 7, frame: 0, format: AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16))
      ])
  }

  @Test func vbrMonoIsBitExact() throws {
    let dir = TempDir()
    let (mp3, reference, sourceFrames) = media(
      dir, wav: "-r 48000 -c 1 -b 16 x.wav synth 2 sine 200-4000", lame: "-V 2")
    let run = try decodeAll(try MP3Decoder(), mp3, seed: 3)
    expectBitExact(run.samples, reference, channels: 1, shift: 16)
    #expect(run.samples.count / 2 == sourceFrames)
    #expect(run.boundaries.first?.format == AudioFormat(sampleRate: 48000, channels: 1, bitsPerSample: 16))
  }

  @Test func mpeg2LowRateIsBitExact() throws {
    let dir = TempDir()
    let (mp3, reference, _) = media(
      dir, wav: "-r 22050 -c 2 -b 16 x.wav synth 2 sine 300 whitenoise vol 0.2", lame: "-b 64")
    let run = try decodeAll(try MP3Decoder(), mp3, seed: 4, maxChunk: 1000)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
    #expect(run.boundaries.first?.format.sampleRate == 22050)
  }

  @Test func largeID3TagIsSkipped() throws {
    let dir = TempDir()
    let (mp3, reference, _) = media(
      dir, wav: "-r 44100 -c 2 -b 16 x.wav synth 2 sine 440", lame: "-b 192 --add-id3v2 --pad-id3v2-size 300000")
    #expect(mp3.count > 150_000)
    let run = try decodeAll(try MP3Decoder(), mp3, seed: 5, streamCapacity: 32 << 10)
    expectBitExact(run.samples, reference, channels: 2, shift: 16)
  }

  @Test func truncatedStreamKeepsTheFramesBeforeTheCut() throws {
    let dir = TempDir()
    let (mp3, reference, _) = media(
      dir, wav: "-r 44100 -c 2 -b 16 x.wav synth 3 sine 440 pinknoise vol 0.3", lame: "-b 128")
    let run = try decodeAll(try MP3Decoder(), Array(mp3[0..<(mp3.count / 2)]), seed: 6)
    #expect(run.finished)
    let frames = run.samples.count / 2
    #expect(frames > reference.count / 2 / 3)
    #expect(frames < reference.count / 2 * 6 / 10)
    expectBitExact(run.samples, Array(reference[0..<min(reference.count, frames * 2)]), channels: 2, shift: 16)
  }

  @Test func htmlBodyThrows() throws {
    #expect(throws: DecodeError.self) { try decodeAll(try MP3Decoder(), htmlBody) }
  }

  @Test func emptyBodyThrows() throws {
    #expect(throws: DecodeError.self) { try decodeAll(try MP3Decoder(), []) }
  }
}
