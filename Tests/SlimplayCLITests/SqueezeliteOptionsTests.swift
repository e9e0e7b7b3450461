import Resampling
import SlimplayCLI
import SlimplayPlayer
import Testing

@Suite("Command line: squeezelite's options")
struct SqueezeliteOptionsTests {
  @Test func optionalArgumentsAreTakenOnlyWhenTheNextWordIsNotAnOption() {
    #expect(SqueezeliteArguments.normalize(["-R", "-n", "x"]) == ["-R", "", "-n", "x"])
    #expect(SqueezeliteArguments.normalize(["-u", "vLE:::28"]) == ["-u", "vLE:::28"])
    #expect(SqueezeliteArguments.normalize(["-D"]) == ["-D", ""])
    #expect(SqueezeliteArguments.normalize(["-D", "500:dop", "-i"]) == ["-D", "500:dop", "-i", ""])
    // A required argument is taken whatever it looks like.
    #expect(SqueezeliteArguments.normalize(["-o", "-", "-n", "-R"]) == ["-o", "-", "-n", "-R"])
    #expect(SqueezeliteArguments.normalize(["-?"]) == ["--help"])
    // The control client's words are its own.
    #expect(SqueezeliteArguments.normalize(["ctl", "-R"]) == ["ctl", "-R"])
  }

  /// Option sets from real /etc/default/squeezelite files (SB_EXTRA_ARGS), as users post them.
  @Test(arguments: [
    ["-W", "-C", "5", "-r", "44100-192000"],
    ["-D", "-R", "-u", "vMs"],
    ["-a", "80:4::", "-b", "500:2000", "-R", "-Z", "192000"],
    ["-X", "-V", "Digital", "-o", "hw:CARD=DAC"],
    ["-f", "/tmp/squeezelite.log", "-d", "all=info", "-z"],
    ["-G", "gpiochip0:17:H"],
    ["-i", "-v", "-D", "3:u32be"],
    ["-R", "hLE:::28:95:105:25", "-r", "96000:500"],
  ])
  func realConfigurationsAreAccepted(_ words: [String]) throws {
    _ = try settings(words)
  }

  @Test func maximumRateLowersWhatIsReported() throws {
    #expect(try settings(["-Z", "96000"]).maximumRateLimit == 96000)
    #expect(try settings([]).maximumRateLimit == nil)
    #expect(throws: (any Error).self) { try settings(["-Z", "12"]) }
  }

  @Test func gpioRelayTakesSqueezelitesSpecification() throws {
    let relay = try settings(["-G", "0:18:H"]).gpioRelay
    #expect(relay?.chipPath == "/dev/gpiochip0" && relay?.line == 18 && relay?.activeLow == false)
    #expect(try settings(["-G", "gpiochip4:17:l"]).gpioRelay?.chipPath == "/dev/gpiochip4")
    #expect(try settings(["-G", "gpiochip4:17:l"]).gpioRelay?.activeLow == true)
    #expect(try settings(["-G", "/dev/gpiochip1:5:L"]).gpioRelay?.chipPath == "/dev/gpiochip1")
    for bad in ["", "0:18", "0:18:X", "chip:1:H", "0:x:H", "0:1:H:2"] {
      #expect(throws: (any Error).self, "\(bad)") { try settings(["-G", bad]) }
    }
  }

  @Test func resamplingTakesSqueezelitesRecipe() throws {
    #expect(try settings([]).resampling == nil)
    #expect(try settings(["-R", ""]).resampling == ResampleRecipe())
    let recipe = try settings(["-u", "vMsE:0:3"]).resampling
    #expect(recipe?.quality == .veryHigh && recipe?.phase == .minimum && recipe?.onlyUnsupportedRates == true)
    #expect(recipe?.attenuationDecibels == 3)
    #expect(try settings(["-R"]).ignoredOptions.isEmpty)
    #expect(throws: (any Error).self) { try settings(["-u", "hZ"]) }
  }

  @Test func linearMixerReachesTheVolumeControl() throws {
    let mixer = try settings(["-o", "hw:0", "-V", "PCM", "-X"]).mixer
    #expect(mixer?.linear == true)
    #expect(try settings(["-o", "hw:0", "-V", "PCM"]).mixer?.linear == false)
    #expect(try settings(["-X"]).ignoredOptions.contains { $0.hasPrefix("-X") })
  }

  @Test func waveFilesAreOfferedWithW() throws {
    #expect(
      try settings(["-W"]).formatTokens == [
        "dsf", "dff", "alc", "aac", "ogg", "ogf", "flc", "ops", "mp3", "wav", "aif", "pcm",
      ])
    #expect(
      try settings([]).formatTokens == ["dsf", "dff", "alc", "aac", "ogg", "ogf", "flc", "ops", "mp3", "aif", "pcm"])
    #expect(try settings(["-W", "-c", "pcm"]).formatTokens == ["wav", "aif", "pcm"])
  }

  @Test func logFileAndDaemon() throws {
    let chosen = try settings(["-f", "/var/log/slimplay.log", "-z"])
    #expect(chosen.logFile == "/var/log/slimplay.log")
    #expect(chosen.daemonize)
    #expect(try settings([]).logFile == nil)
  }

  /// squeezelite's `-D [delay][:format]`: DoP by default; native formats are ALSA's DSD formats;
  /// anything else is refused.
  @Test func dsdOutput() throws {
    #expect(try settings(["-D"]).dsdOutput == DSDOutputOption(format: .dop, switchDelayMilliseconds: 0))
    #expect(try settings(["-D", "500"]).dsdOutput == DSDOutputOption(format: .dop, switchDelayMilliseconds: 500))
    #expect(
      try settings(["-D", ":dop24_3"]).dsdOutput == DSDOutputOption(format: .dop24_3, switchDelayMilliseconds: 0))
    let native = try settings(["-D", "3:u32be"])
    #expect(native.dsdOutput == DSDOutputOption(format: .u32be, switchDelayMilliseconds: 3))
    #expect(native.ignoredOptions.isEmpty)
    #expect(native.dsdOutput?.format.nativeDSD == .u32be)
    #expect(try settings(["-D", ":u8"]).dsdOutput?.format.nativeDSD == .u8)
    #expect(try settings(["-D", ":dop"]).dsdOutput?.format.nativeDSD == nil)
    #expect(try settings([]).dsdOutput == nil)
    for bad in ["x", "5:dsd", "-1", "20000:dop"] {
      #expect(throws: (any Error).self, "\(bad)") { try settings(["-D", bad]) }
    }
  }

  @Test func squeezelitesOptionalArgumentsAndRelays() throws {
    #expect(try settings(["-D", "-i", "-v"]).ignoredOptions.isEmpty)
    let visualised = try settings(["-v"])
    #expect(visualised.visualiser)
    #expect(try settings(["-i"]).infrared == "")
    #expect(try settings(["-i", "/etc/lirc/lircrc"]).infrared == "/etc/lirc/lircrc")
    #expect(try settings([]).infrared == nil)
    #expect(try settings([]).ignoredOptions.isEmpty)
    // As in squeezelite, one relay: a script or a GPIO line.
    #expect(throws: (any Error).self) { try settings(["-G", "gpiochip0:17:H", "-S", "/bin/true"]) }
  }
}
