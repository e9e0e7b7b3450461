import SlimplayCLI
import Support
import Testing

@Suite("-c / -e codecs")
struct CodecSelectionTests {
  @Test func defaultFormatTokens() throws {
    #expect(try settings([]).formatTokens == ["flc", "ops", "mp3", "aif", "pcm"])
    #expect(PlayerSettings().formatTokens == ["flc", "ops", "mp3", "aif", "pcm"])
  }

  @Test func includeListSetsOrder() throws {
    let s = try settings(["-c", "mp3,flac"])
    #expect(s.codecs == [.mp3, .flac])
    #expect(s.formatTokens == ["mp3", "flc"])
  }

  @Test func pcmBeforeFLACIsPossible() throws {
    #expect(try settings(["-c", "pcm,flac"]).formatTokens == ["aif", "pcm", "flc"])
  }

  @Test func squeezeliteSpellingsAndDuplicates() throws {
    #expect(try settings(["-c", "flc,ops,mad,wav,flac"]).codecs == [.flac, .opus, .mp3, .pcm])
    #expect(Codec(name: "aif") == .pcm)
    #expect(Codec(name: "mpg") == .mp3)
    #expect(Codec(name: "aac") == nil)
  }

  @Test func excludeRemovesTokens() throws {
    let s = try settings(["-e", "opus"])
    #expect(s.formatTokens == ["flc", "mp3", "aif", "pcm"])
    #expect(!s.formatTokens.contains("ops"))
    #expect(try settings(["-e", "opus,pcm"]).formatTokens == ["flc", "mp3"])
  }

  @Test func includeThenExclude() throws {
    #expect(try settings(["-c", "mp3,flac,opus", "-e", "flac"]).formatTokens == ["mp3", "ops"])
  }

  @Test(arguments: [["-c", "aac"], ["-c", "flac,vorbis"], ["-e", "wma"]])
  func unknownCodecThrows(_ arguments: [String]) {
    #expect(throws: (any Error).self) { try settings(arguments) }
    #expect(errorMessage(arguments)?.contains("unknown codec") == true)
  }

  @Test func excludingEverythingThrows() {
    #expect(throws: (any Error).self) { try settings(["-c", "flac", "-e", "flac"]) }
    #expect(throws: OptionError.self) { try Codec.selection(include: nil, exclude: "flac,opus,mp3,pcm") }
  }
}
