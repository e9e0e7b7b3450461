import SlimplayCLI
import SlimplayPlayer
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
    // squeezelite keeps a maximum it would not try itself, and tries up to 1.536 MHz.
    #expect(try RateSpecification(parsing: "50000").rates.prefix(3) == [50000, 48000, 44100])
    #expect(try RateSpecification(parsing: "1536000").rates.prefix(2) == [1_536_000, 1_411_200])
  }

  @Test func aTrailingCommaMakesAListOfOne() throws {
    #expect(try RateSpecification(parsing: "48000,").rates == [48000])
  }

  @Test func aRangeKeepsItsMaximumAndMayBeGivenEitherWayRound() throws {
    #expect(try RateSpecification(parsing: "44100-50000").rates == [50000, 48000, 44100])
    #expect(try RateSpecification(parsing: "96000-44100").rates == [96000, 88200, 48000, 44100])
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

  @Test(arguments: ["abc", "44100:-1", "44100:x", "0", "44100,,x", "-", "0-44100", ""])
  func badRatesThrow(_ text: String) {
    #expect(throws: OptionError.self) { try RateSpecification(parsing: text) }
  }

  @Test func badRateOnTheCommandLineThrows() {
    #expect(throws: (any Error).self) { try settings(["-r", "fast"]) }
  }
}
