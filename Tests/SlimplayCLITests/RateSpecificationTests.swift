import SlimplayCLI
import Testing

@Suite("-r sample rates")
struct RateSpecificationTests {
  @Test func range() throws {
    let r = try #require(try settings(["-r", "44100-96000"]).rates)
    #expect(r.rates == [96000, 88200, 48000, 44100])
    #expect(r.maximum == 96000)
    #expect(r.changeDelayMilliseconds == 0)
  }

  @Test func singleValueIsAMaximum() throws {
    let r = try #require(try settings(["-r", "48000"]).rates)
    #expect(r.rates == [48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000])
    #expect(r.maximum == 48000)
  }

  @Test func listWithDelay() throws {
    let r = try #require(try settings(["-r", "44100,48000:500"]).rates)
    #expect(r.rates == [48000, 44100])
    #expect(r.changeDelayMilliseconds == 500)
    #expect(r.maximum == 48000)
  }

  @Test func rangeWithDelay() throws {
    let r = try RateSpecification(parsing: "8000-16000:100")
    #expect(r.rates == [16000, 12000, 11025, 8000])
    #expect(r.changeDelayMilliseconds == 100)
  }

  @Test func maximumOfAnEmptySpecificationIsCDRate() {
    #expect(RateSpecification(rates: []).maximum == 44100)
  }

  @Test(arguments: ["96000-44100", "abc", "44100:-1", "44100:x", "0", "44100,,x", "-", "1-2", ""])
  func badRatesThrow(_ text: String) {
    #expect(throws: OptionError.self) { try RateSpecification(parsing: text) }
  }

  @Test func badRateOnTheCommandLineThrows() {
    #expect(throws: (any Error).self) { try settings(["-r", "fast"]) }
  }
}
