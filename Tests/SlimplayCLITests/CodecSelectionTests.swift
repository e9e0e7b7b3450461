import SlimplayCLI
import SlimplayPlayer
import Support
import Testing

@Suite("-c / -e codecs")
struct CodecSelectionTests {
  @Test func defaultFormatTokens() throws {
    // squeezelite's order: DSD, MP4 and Ogg first, as only they have rules to those formats in LMS.
    let order = ["dsf", "dff", "alc", "aac", "ogg", "ogf", "flc", "ops", "mp3", "aif", "pcm"]
    #expect(try settings([]).formatTokens == order)
    #expect(PlayerSettings().formatTokens == order)
  }

  @Test func includeListSetsOrder() throws {
    let s = try settings(["-c", "mp3,flac"])
    #expect(s.codecs == [.mp3, .flac])
    #expect(s.formatTokens == ["mp3", "ogf", "flc"])
  }

  @Test func pcmBeforeFLACIsPossible() throws {
    #expect(try settings(["-c", "pcm,flac"]).formatTokens == ["aif", "pcm", "ogf", "flc"])
  }

  @Test func squeezeliteSpellingsAndDuplicates() throws {
    #expect(try settings(["-c", "flc,ops,mad,wav,flac,ogg"]).codecs == [.flac, .opus, .mp3, .pcm, .vorbis])
    #expect(Codec(name: "aif") == .pcm)
    #expect(Codec(name: "mpg") == .mp3)
    #expect(Codec(name: "vorbis") == .vorbis)
    #expect(Codec(name: "aac") == .aac)
    #expect(Codec(name: "alac") == .alac)
    #expect(Codec(name: "alc") == .alac)
    #expect(Codec(name: "wma") == nil)
    #expect(Codec(name: "dsd") == .dsd)
    #expect(Codec(name: "dff") == .dsd)
    #expect(Codec(fileType: "dsf") == .dsd)
  }

  /// squeezelite's names for codecs not decoded here: a squeezelite line still starts; `-c` leaves
  /// them out (said once in the log), `-e` has nothing to remove.
  @Test func squeezelitesOtherCodecNamesAreLeftOut() throws {
    let chosen = try settings(["-c", "wma,flac,dsd,mp3"])
    #expect(chosen.codecs == [.flac, .dsd, .mp3])
    #expect(chosen.ignoredOptions.count == 1)
    #expect(chosen.ignoredOptions.allSatisfy { $0.hasPrefix("-c wma") })
    #expect(
      try settings(["-e", "wma,dsd,opus"]).formatTokens == ["alc", "aac", "ogg", "ogf", "flc", "mp3", "aif", "pcm"])
    #expect(try settings(["-e", "wma"]).ignoredOptions.isEmpty)
    #expect(throws: (any Error).self) { try settings(["-c", "wma"]) }  // nothing left to offer
    #expect(try settings(["-c", "aac,flac,alac"]).codecs == [.aac, .flac, .alac])
  }

  @Test func excludeRemovesTokens() throws {
    let s = try settings(["-e", "opus"])
    #expect(s.formatTokens == ["dsf", "dff", "alc", "aac", "ogg", "ogf", "flc", "mp3", "aif", "pcm"])
    #expect(!s.formatTokens.contains("ops"))
    #expect(try settings(["-e", "opus,pcm,ogg,aac,alac,dsd"]).formatTokens == ["ogf", "flc", "mp3"])
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
    #expect(throws: OptionError.self) {
      try Codec.selection(include: nil, exclude: "alac,aac,flac,opus,ogg,mp3,pcm,dsd")
    }
  }
}
