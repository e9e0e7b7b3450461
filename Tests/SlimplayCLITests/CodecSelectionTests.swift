import SlimplayCLI
import Support
import Testing

@Suite("-c / -e codecs")
struct CodecSelectionTests {
  @Test func defaultFormatTokens() throws {
    #expect(try settings([]).formatTokens == ["ogg", "flc", "ops", "mp3", "aif", "pcm"])
    #expect(PlayerSettings().formatTokens == ["ogg", "flc", "ops", "mp3", "aif", "pcm"])
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
    #expect(try settings(["-c", "flc,ops,mad,wav,flac,ogg"]).codecs == [.flac, .opus, .mp3, .pcm, .vorbis])
    #expect(Codec(name: "aif") == .pcm)
    #expect(Codec(name: "mpg") == .mp3)
    #expect(Codec(name: "vorbis") == .vorbis)
    #expect(Codec(name: "aac") == nil)
  }

  /// squeezelite's names for codecs not decoded here: a squeezelite line still starts; `-c` leaves
  /// them out (said once in the log), `-e` has nothing to remove.
  @Test func squeezelitesOtherCodecNamesAreLeftOut() throws {
    let chosen = try settings(["-c", "aac,flac,alac,mp3"])
    #expect(chosen.codecs == [.flac, .mp3])
    #expect(chosen.ignoredOptions.count == 2)
    #expect(chosen.ignoredOptions.allSatisfy { $0.hasPrefix("-c aac") || $0.hasPrefix("-c alac") })
    #expect(try settings(["-e", "wma,dsd,opus"]).formatTokens == ["ogg", "flc", "mp3", "aif", "pcm"])
    #expect(try settings(["-e", "aac"]).ignoredOptions.isEmpty)
    #expect(throws: (any Error).self) { try settings(["-c", "aac"]) }  // nothing left to offer
  }

  @Test func excludeRemovesTokens() throws {
    let s = try settings(["-e", "opus"])
    #expect(s.formatTokens == ["ogg", "flc", "mp3", "aif", "pcm"])
    #expect(!s.formatTokens.contains("ops"))
    #expect(try settings(["-e", "opus,pcm,ogg"]).formatTokens == ["flc", "mp3"])
  }

  @Test func includeThenExclude() throws {
    #expect(try settings(["-c", "mp3,flac,opus", "-e", "flac"]).formatTokens == ["mp3", "ops"])
  }

  @Test(arguments: [["-c", "aacx"], ["-c", "flac,theora"], ["-e", "speex"]])
  func unknownCodecThrows(_ arguments: [String]) {
    #expect(throws: (any Error).self) { try settings(arguments) }
    #expect(errorMessage(arguments)?.contains("unknown codec") == true)
  }

  @Test func excludingEverythingThrows() {
    #expect(throws: (any Error).self) { try settings(["-c", "flac", "-e", "flac"]) }
    #expect(throws: OptionError.self) { try Codec.selection(include: nil, exclude: "flac,opus,ogg,mp3,pcm") }
  }
}
