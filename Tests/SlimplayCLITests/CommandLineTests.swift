import SlimConnection
import SlimProto
import SlimplayCLI
import SlimplayPlayer
import Testing

@Suite("Command line: server, identity, output")
struct CommandLineTests {
  @Test func defaults() throws {
    let s = try settings([])
    #expect(s.server == nil)
    #expect(s.discoveryTarget == ServerAddress(host: "255.255.255.255", port: 3483))
    #expect(s.mac == nil)
    #expect(s.name == nil)
    #expect(s.nameFile == nil)
    #expect(s.modelName == "SlimPlay")
    #expect(s.model == "squeezelite")
    #expect(s.output == .alsa("default"))
    #expect(s.outputParameters == OutputParameters())
    #expect(s.buffers == BufferSizes.withCache())
    #expect(s.codecs == [.dsd, .alac, .aac, .vorbis, .flac, .opus, .mp3, .pcm])
    #expect(s.rates == nil)
    #expect(s.idleCloseSeconds == nil)
    // LMS's heartbeat is every 5 s: three missed ones, or a silent one plus a stalled stream.
    #expect(s.serverTimeoutSeconds == 12)
    #expect(s.liveness == ServerLiveness(silenceSeconds: 7, stallSeconds: 2))
    #expect(s == PlayerSettings())
  }

  @Test func livenessThresholds() throws {
    let set = try settings(["--server-timeout", "20", "--server-silence", "9", "--stream-stall", "3"])
    #expect(set.serverTimeoutSeconds == 20)
    #expect(set.liveness == ServerLiveness(silenceSeconds: 9, stallSeconds: 3))
    // A silence past the timeout counts as the timeout.
    #expect(try settings(["--server-timeout", "3"]).liveness.silenceSeconds == 3)
    #expect(throws: (any Error).self) { try settings(["--stream-stall", "0"]) }
  }

  @Test func serverHostAndPort() throws {
    #expect(try settings(["-s", "192.168.1.2:3484"]).server == ServerAddress(host: "192.168.1.2", port: 3484))
    #expect(try settings(["-s", "lms.local"]).server == ServerAddress(host: "lms.local", port: 3483))
  }

  @Test(arguments: ["lms:0", "lms:99999", "lms:", ""])
  func badServerThrows(_ text: String) {
    #expect(throws: (any Error).self) { try settings(["-s", text]) }
    #expect(errorMessage(["-s", text])?.contains("-s") == true)
  }

  @Test func discoverTo() throws {
    #expect(try settings(["--discover-to", "192.168.1.255"]).discoveryTarget == ServerAddress(host: "192.168.1.255"))
    #expect(throws: (any Error).self) { try settings(["--discover-to", "x:y"]) }
  }

  @Test func nameAndNameFile() throws {
    let s = try settings(["-n", "Kitchen", "-N", "/var/lib/slimplay/name"])
    #expect(s.name == "Kitchen")
    #expect(s.nameFile == "/var/lib/slimplay/name")
  }

  @Test func controlOff() throws {
    // At the default address, the next ports are tried when it is taken (several players on one machine).
    #expect(try settings([]).control == ControlSettings(furtherPorts: 9))
    #expect(try settings(["--control", "127.0.0.1:9393"]).control == ControlSettings(furtherPorts: 9))
    #expect(try settings(["--control", "127.0.0.1:9500"]).control == ControlSettings(port: 9500))
    #expect(try settings(["--control", "off"]).control == nil)
  }

  @Test func mixerFlags() throws {
    let volume = try settings(["-o", "hw:CARD=DAC,DEV=0", "-V", "Digital"])
    #expect(volume.mixer == MixerSettings(device: "hw:CARD=DAC", control: "Digital", role: .volume))
    let unmute = try settings(["-o", "pulse", "-U", "Master", "-O", "default"])
    #expect(unmute.mixer == MixerSettings(device: "default", control: "Master", role: .fullScale))
    #expect(throws: (any Error).self) { try settings(["-V", "A", "-U", "B"]) }
    #expect(throws: (any Error).self) { try settings(["-o", "null", "-V", "A"]) }
    #expect(try settings(["-p", "80"]).realtimePriority == 80)
    #expect(throws: (any Error).self) { try settings(["-p", "0"]) }
  }

  @Test func modelName() throws {
    #expect(try settings(["-M", "Den"]).modelName == "Den")
    #expect(try settings(["--model", "slimplay"]).model == "slimplay")
    #expect(throws: (any Error).self) { try settings(["--model", "a,b"]) }
  }

  @Test func validMAC() throws {
    #expect(try settings(["-m", "00:11:22:33:44:55"]).mac == MACAddress("00:11:22:33:44:55"))
    #expect(try settings(["-m", "AA-BB-CC-DD-EE-FF"]).mac?.description == "aa:bb:cc:dd:ee:ff")
  }

  @Test(arguments: ["00:11:22:33:44", "00:11:22:33:44:zz", "001122334455", "nonsense"])
  func invalidMACThrows(_ text: String) {
    #expect(throws: (any Error).self) { try settings(["-m", text]) }
    #expect(errorMessage(["-m", text])?.contains("invalid -m") == true)
  }

  @Test func outputTargets() throws {
    #expect(try settings(["-o", "-"]).output == .standardOutput)
    #expect(try settings(["-o", "null"]).output == .null)
    #expect(try settings(["-o", "hw:0"]).output == .alsa("hw:0"))
    #expect(try settings(["-o", "pulse"]).output == .alsa("pulse"))
    #expect(OutputTarget("-") == .standardOutput)
    #expect(OutputTarget("hw:1,0") == .alsa("hw:1,0"))
  }

  @Test func listDevicesFlag() throws {
    #expect(try settings(["-l"]).listDevices)
    #expect(try !settings([]).listDevices)
  }

  @Test func idleCloseAndServerTimeout() throws {
    let s = try settings(["-C", "30", "--server-timeout", "60", "-P", "/run/slimplay.pid"])
    #expect(s.idleCloseSeconds == 30)
    #expect(s.serverTimeoutSeconds == 60)
    #expect(s.pidFile == "/run/slimplay.pid")
    #expect(throws: (any Error).self) { try settings(["-C", "-1"]) }
    #expect(throws: (any Error).self) { try settings(["--server-timeout", "0"]) }
  }

  @Test func unknownFlagThrows() {
    #expect(throws: (any Error).self) { try settings(["-Z"]) }
  }

  @Test func versionFlag() throws {
    #expect(!SlimplayVersion.string.isEmpty)
    #expect(SlimplayCommand.name == "slimplay")
    // --version ends parsing with a clean exit that prints the version.
    do {
      _ = try SlimplayCommand.parse(["-n", "x", "--version"])
      Issue.record("--version did not stop parsing")
    } catch {
      let outcome = CommandRunner.outcome(of: error, for: SlimplayCommand.self)
      #expect(outcome.status == 0)
      #expect(outcome.message == SlimplayVersion.string + "\n")
    }
  }
}
