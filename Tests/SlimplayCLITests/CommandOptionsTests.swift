import Testing

@testable import SlimplayCLI

@Suite struct CommandOptionsTests {
  private func usage(_ words: [String]) -> String? {
    do {
      _ = try SlimplayCommand.parse(words)
      return nil
    } catch {
      guard case .usage(let message) = error else { return "\(error)" }
      return message
    }
  }

  @Test func valuesLandInTheirProperties() throws {
    let command = try SlimplayCommand.parse([
      "-s", "10.0.0.2:3483", "--cache-size=64", "-p", "20", "-C", "5", "-l", "--prefetch", "3", "-n", "Kitchen",
    ])
    #expect(command.server == "10.0.0.2:3483")
    #expect(command.cacheSize == 64)
    #expect(command.priority == 20)
    #expect(command.idleClose == 5)
    #expect(command.listDevices)
    #expect(command.prefetch == 3)
    #expect(command.name == "Kitchen")
  }

  @Test func defaultsStayWhenNotGiven() throws {
    let command = try SlimplayCommand.parse([])
    #expect(command.output == "default")
    #expect(command.priority == 45)
    #expect(command.idleClose == nil)
    #expect(!command.noOffline)
    #expect(command.logLevels.isEmpty)
  }

  @Test func repeatableOptionsKeepEveryValueAndOthersTheLast() throws {
    let command = try SlimplayCommand.parse(["-d", "all=info", "-n", "a", "-d", "cache=debug", "-n", "b"])
    #expect(command.logLevels == ["all=info", "cache=debug"])
    #expect(command.name == "b")
  }

  @Test func oneLetterOptionsTakeTheNextWordWhateverItIs() throws {
    #expect(try SlimplayCommand.parse(["-o", "-"]).output == "-")
    #expect(try SlimplayCommand.parse(["-n", "-x"]).name == "-x")
    #expect(try SlimplayCommand.parse(["-R", ""]).resampling == "")
    #expect(try SlimplayCommand.parse(["-u", "vLE"]).resampling == "vLE")
  }

  @Test func longOptionsDoNotTakeAnOptionAsTheirValue() throws {
    #expect(usage(["--state-dir", "--cache-dir", "x"]) == "Missing value for '--state-dir <dir>'")
    #expect(try SlimplayCommand.parse(["--lms-port", "-1"]).lmsPort == -1)  // a number, not an option
  }

  @Test func mistakesAreNamed() {
    #expect(usage(["-x"]) == "Unknown option '-x'")
    #expect(usage(["--bogus=1"]) == "Unknown option '--bogus=1'")
    #expect(usage(["-s"]) == "Missing value for '-s <host[:port]>'")
    #expect(usage(["-p", "abc"]) == "The value 'abc' is invalid for '-p <priority>'")
    #expect(usage(["-C", "1.5"]) == "The value '1.5' is invalid for '-C <seconds>'")
    #expect(usage(["--no-offline=yes"]) == "'--no-offline' takes no value")
    #expect(usage(["play"]) == "Unexpected argument 'play'")
    #expect(usage(["--", "-l"]) == "Unexpected argument '-l'")
  }

  @Test func helpAndVersionStopParsingWherever() {
    #expect(throws: CommandLineError.helpRequested) { try SlimplayCommand.parse(["-n", "x", "-h"]) }
    #expect(throws: CommandLineError.helpRequested) { try SlimplayCommand.parse(["--help", "-x"]) }
    #expect(throws: CommandLineError.versionRequested) { try SlimplayCommand.parse(["--version"]) }
  }

  @Test func controlCommandPositionals() throws {
    let seek = try ControlClientCommand.parse(["seek", "--json", "30", "--api", "127.0.0.1:9400"])
    #expect(seek.action == "seek")
    #expect(seek.value == "30")
    #expect(seek.json)
    #expect(seek.api == "127.0.0.1:9400")
    #expect(throws: CommandLineError.usage("Missing expected argument '<action>'")) {
      try ControlClientCommand.parse(["--json"])
    }
    #expect(throws: CommandLineError.usage("Unexpected argument 'd'")) {
      try ControlClientCommand.parse(["a", "b", "c", "d"])
    }
    let pin = try ControlClientCommand.parse(["pin", "playlist", "Road"])
    #expect(pin.value == "playlist")
    #expect(pin.target == "Road")
  }

  @Test(arguments: [
    (["pin", "album"], nil), (["pin", "track", "12"], nil), (["pin", "playlist", "Road"], nil),
    (["unpin", "playlist", "4"], nil), (["pins"], nil), (["pin"], "pin needs what: album, playlist or track"),
    (["pin", "artist", "3"], "pin needs what: album, playlist or track"),
    (["pin", "playlist"], "pin playlist needs an id or a name"), (["unpin", "album"], "unpin album needs an id"),
    (["pin", "album", "Alpha"], "pin album: 'Alpha' is not an id"),
  ])
  func pinArguments(arguments: [String], error: String?) throws {
    var command = try ControlClientCommand.parse(arguments)
    if let error {
      let thrown = #expect(throws: UsageError.self) { try command.validate() }
      #expect(thrown?.description == error)
    } else {
      try command.validate()
    }
  }

  @Test func usageErrorsExitWith64AndTheUsage() {
    let outcome = CommandRunner.outcome(of: CommandLineError.usage("Unknown option '-x'"), for: SlimplayCommand.self)
    #expect(outcome.status == 64)
    #expect(
      outcome.message
        == "Error: Unknown option '-x'\nUsage: slimplay <options> <subcommand>\n  See 'slimplay --help' for more information.\n"
    )
    #expect(CommandRunner.outcome(of: ExitStatus(3), for: SlimplayCommand.self) == (3, ""))
  }

  @Test func helpListsEveryVisibleOptionWithinTheTerminalWidth() {
    let text = HelpText.text(for: SlimplayCommand.self)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    #expect(lines.allSatisfy { $0.count <= HelpText.width }, "\(lines.filter { $0.count > HelpText.width })")
    for option in SlimplayCommand.options {
      let listed = lines.contains { $0.hasPrefix("  " + option.label + " ") || $0 == "  " + option.label }
      #expect(listed != option.hidden, "\(option.label)")
    }
    #expect(lines.contains("  -p <priority>           Real-time (SCHED_FIFO) priority of the output thread,"))
    #expect(
      text.split(whereSeparator: \.isWhitespace).joined(separator: " ").contains("when not permitted. (default: 45)"))
    #expect(lines.contains("  -h, --help              Show help information."))
    #expect(lines.contains { $0.hasPrefix("  ctl ") })
  }

  @Test func wrapKeepsWordsWhole() {
    #expect(HelpText.wrap("aa bb cc dd", width: 5) == ["aa bb", "cc dd"])
    #expect(HelpText.wrap("averylongword x", width: 4) == ["averylongword", "x"])
    #expect(HelpText.wrap("", width: 10) == [""])
  }
}
