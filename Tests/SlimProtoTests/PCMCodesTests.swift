import SlimProto
import Testing

@Suite("PCM codes")
struct PCMCodesTests {
  static func codes(size: Character = "?", rate: Character = "?", channels: Character = "?", endian: Character = "?")
    -> PCMCodes
  {
    func byte(_ c: Character) -> UInt8 { UInt8(ascii: c.unicodeScalars.first!) }
    return PCMCodes(sampleSize: byte(size), sampleRate: byte(rate), channels: byte(channels), endianness: byte(endian))
  }

  @Test(
    arguments: [
      ("0", 11025), ("1", 22050), ("2", 32000), ("3", 44100), ("4", 48000), ("5", 8000), ("6", 12000),
      ("7", 16000), ("8", 24000), ("9", 96000), (":", 88200), (";", 176400), ("<", 192000), ("=", 352800),
      (">", 384000),
    ] as [(Character, Int)])
  func sampleRateTable(_ code: Character, _ rate: Int) {
    #expect(Self.codes(rate: code).sampleRateHz == rate)
  }

  @Test func unspecifiedAndOutOfTableRatesAreNil() {
    #expect(Self.codes(rate: "?").sampleRateHz == nil)
    #expect(PCMCodes.unspecified.sampleRateHz == nil)
    #expect(Self.codes(rate: "/").sampleRateHz == nil)  // just below '0'
    #expect(PCMCodes(sampleSize: 0, sampleRate: 0, channels: 0, endianness: 0).sampleRateHz == nil)
    #expect(PCMCodes(sampleSize: 0, sampleRate: 0xff, channels: 0, endianness: 0).sampleRateHz == nil)
  }

  @Test func bitsPerSample() {
    #expect(Self.codes(size: "0").bitsPerSample == 8)
    #expect(Self.codes(size: "1").bitsPerSample == 16)
    #expect(Self.codes(size: "2").bitsPerSample == 24)
    #expect(Self.codes(size: "3").bitsPerSample == 32)
    #expect(Self.codes(size: "?").bitsPerSample == nil)
    #expect(Self.codes(size: "4").bitsPerSample == nil)
  }

  @Test func channels() {
    #expect(Self.codes(channels: "1").channelCount == 1)
    #expect(Self.codes(channels: "2").channelCount == 2)
    #expect(Self.codes(channels: "?").channelCount == nil)
    #expect(Self.codes(channels: "0").channelCount == nil)
  }

  @Test func endianness() {
    #expect(Self.codes(endian: "0").isLittleEndian == false)  // aif
    #expect(Self.codes(endian: "1").isLittleEndian == true)  // wav
    #expect(Self.codes(endian: "?").isLittleEndian == nil)
  }

  @Test func oggFLACMarker() {
    #expect(Self.codes(size: "o").isOggFLAC)
    #expect(!Self.codes(size: "1").isOggFLAC)
  }

  @Test func unspecifiedIsAllQuestionMarks() {
    #expect(PCMCodes.unspecified == Self.codes())
    #expect(PCMCodes.unspecified.sampleSize == 0x3f)
  }
}
