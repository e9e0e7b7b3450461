import SlimConnection
import SlimplayCLI
import Support
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("Config file: /etc/default format, squeezelite's variables")
struct ConfigFileTests {
  func flags(_ text: String) throws -> [String] {
    try ConfigFile.arguments(from: ConfigFile.parse(text, hostName: "pi3.home.lan")).arguments
  }

  @Test func debianSqueezeliteFile() throws {
    let text = """
      # Defaults for squeezelite
      SL_NAME="$(hostname -s)"
      SL_SOUNDCARD="sysdefault:CARD=ALSA"
      #SB_SERVER_IP="192.168.x.y"
      SB_EXTRA_ARGS="-C 5 -V Digital"
      """
    #expect(try flags(text) == ["-n", "pi3", "-o", "sysdefault:CARD=ALSA", "-C", "5", "-V", "Digital"])
  }

  @Test func quotingExportAndExpansion() throws {
    let text = """
      export SL_NAME='Living room'   # a comment
      ROOM=Den
      SB_SERVER_IP=lms.local:3483
      SB_EXTRA_ARGS="-M \\"My $ROOM\\" -m ${ROOM}2"
      SLIMPLAY_ARGS="--prefetch 2"
      """
    #expect(
      try flags(text) == [
        "-n", "Living room", "-s", "lms.local:3483", "-M", "My Den", "-m", "Den2", "--prefetch", "2",
      ])
    let parsed = try ConfigFile.parse(text, hostName: "h")
    #expect(parsed.map(\.0) == ["SL_NAME", "ROOM", "SB_SERVER_IP", "SB_EXTRA_ARGS", "SLIMPLAY_ARGS"])
    #expect(parsed[0].1 == "Living room")
    #expect(parsed[3].1 == "-M \"My Den\" -m Den2")
    #expect(try ConfigFile.arguments(from: parsed).ignored == ["ROOM"])
  }

  @Test func hostnameWithoutDomain() throws {
    #expect(try flags("SL_NAME=$(hostname)") == ["-n", "pi3.home.lan"])
    #expect(try flags("SL_NAME=\"$(hostname -s)-amp\"") == ["-n", "pi3-amp"])
  }

  @Test func emptyValuesGiveNoFlag() throws {
    #expect(try flags("SL_NAME=\nSB_EXTRA_ARGS=\"\"") == [])
  }

  @Test(arguments: [
    ("SL_NAME=a b", 1), ("\nSL_NAME=\"open", 2), ("just words", 1), ("SL_NAME=$(rm -rf /)", 1),
    ("SL_NAME=`id`", 1), ("1X=2", 1),
  ])
  func errorsNameTheLine(_ text: String, _ line: Int) {
    #expect(throws: ConfigFile.ParseError.self) { try ConfigFile.parse(text, hostName: "h") }
    do {
      _ = try ConfigFile.parse(text, hostName: "h")
    } catch {
      #expect(error.line == line)
    }
  }

  @Test func commandLineFlagsWin() throws {
    let path = "/tmp/slimplay-config-test-\(getpid()).conf"
    defer { unlink(path) }
    try FileIO.writeAtomically(path, Array("SL_NAME=Kitchen\nSL_SOUNDCARD=null\nSB_EXTRA_ARGS=\"-C 3\"\n".utf8))
    let expanded = try ConfigFile.expand(["--config", path, "-n", "Den"]) { _ in }
    #expect(expanded == ["-n", "Kitchen", "-o", "null", "-C", "3", "--config", path, "-n", "Den"])
    let s = try settings(expanded)
    #expect(s.name == "Den")
    #expect(s.output == .null)
    #expect(s.idleCloseSeconds == 3)
  }

  @Test func missingFileMeansDefaults() throws {
    var messages: [String] = []
    let expanded = try ConfigFile.expand(["--config=/nonexistent/slimplay"]) { messages.append($0) }
    #expect(expanded == ["--config=/nonexistent/slimplay"])
    #expect(messages.count == 1)
    #expect(messages[0].contains("/nonexistent/slimplay"))
  }

  @Test func controlClientIsLeftAlone() throws {
    #expect(try ConfigFile.expand(["ctl", "pause", "--config", "/x"]) { _ in } == ["ctl", "pause", "--config", "/x"])
  }
}

@Suite("Service unit")
struct ServiceUnitTests {
  @Test func systemUnitRunsAsAnAudioUserWithRealtimeRights() {
    let text = ServiceUnit.text(scope: .system, executable: "/usr/bin/slimplay")
    for line in [
      "ExecStart=/usr/bin/slimplay --config /etc/default/slimplay", "DynamicUser=yes", "SupplementaryGroups=audio",
      "AmbientCapabilities=CAP_SYS_NICE", "LimitRTPRIO=99", "Restart=on-failure", "StateDirectory=slimplay",
      "WantedBy=multi-user.target",
    ] {
      #expect(text.split(separator: "\n").contains(Substring(line)), "\(line)")
    }
  }

  @Test func userUnitInstallsUnderHome() throws {
    let home = "/tmp/slimplay-service-test-\(getpid())"
    defer { _ = system("rm -rf '\(home)'") }
    let written = try ServiceUnit.install(scope: .user, executable: "/opt/slimplay", environment: ["HOME": home])
    #expect(written.unitPath == home + "/.config/systemd/user/slimplay.service")
    #expect(written.configPath == home + "/.config/slimplay/slimplay.conf")
    #expect(FileIO.readText(written.unitPath)?.contains("ExecStart=/opt/slimplay --config %h/") == true)
    // A second run keeps the configuration the user edited.
    try FileIO.writeAtomically(home + "/.config/slimplay/slimplay.conf", Array("SL_NAME=Mine\n".utf8))
    let again = try ServiceUnit.install(scope: .user, executable: "/opt/slimplay", environment: ["HOME": home])
    #expect(again.configPath == nil)
    #expect(FileIO.readText(home + "/.config/slimplay/slimplay.conf") == "SL_NAME=Mine\n")
  }

  /// `slimplay@kitchen`: one player of several on the machine, with a configuration file of its own.
  @Test func theTemplateUnitGivesEachInstanceItsOwnConfiguration() throws {
    let systemUnit = ServiceUnit.text(scope: .system, executable: "/usr/bin/slimplay", template: true).split(
      separator: "\n")
    #expect(systemUnit.contains("ExecStart=/usr/bin/slimplay --config /etc/default/slimplay-%i"))
    #expect(systemUnit.contains("StateDirectory=slimplay"))
    let userUnit = ServiceUnit.text(scope: .user, executable: "/opt/slimplay", template: true).split(separator: "\n")
    #expect(userUnit.contains("ExecStart=/opt/slimplay --config %h/.config/slimplay/%i.conf"))
    let home = "/tmp/slimplay-template-test-\(getpid())"
    defer { _ = system("rm -rf '\(home)'") }
    let written = try ServiceUnit.install(
      scope: .user, executable: "/opt/slimplay", environment: ["HOME": home], template: true)
    #expect(written.unitPath == home + "/.config/systemd/user/slimplay@.service")
    #expect(written.configPath == nil)
  }

  @Test func templateParsesToNoFlags() throws {
    #expect(try ConfigFile.arguments(from: ConfigFile.parse(ServiceUnit.configTemplate, hostName: "h")).arguments == [])
  }
}
