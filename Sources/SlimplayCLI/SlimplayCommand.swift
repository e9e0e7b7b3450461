import ArgumentParser
import AudioOutput
import Logging
import Playback
import SlimConnection
import SlimProto

#if canImport(Glibc)
  import Glibc
#endif

/// The `slimplay` command line. Flags follow squeezelite's where squeezelite has them.
public struct SlimplayCommand: ParsableCommand {
  public static let configuration = CommandConfiguration(
    commandName: "slimplay",
    abstract: "A headless Squeezebox player for Lyrion Music Server.",
    discussion: """
      Registers with a Lyrion (Logitech) Media Server over SlimProto and plays what it sends.
      Without -s the server is found by UDP discovery. Logs go to standard error.
      `slimplay ctl` controls a running player through its local API.
      """,
    version: SlimplayVersion.string,
    subcommands: [ControlClientCommand.self])

  @Option(
    name: .customShort("s"), help: ArgumentHelp("Server address; discovery when omitted.", valueName: "host[:port]"))
  var server: String?

  @Option(name: .customShort("n"), help: ArgumentHelp("Player name.", valueName: "name"))
  var name: String?

  @Option(
    name: .customShort("N"),
    help: ArgumentHelp("File that stores the name the server sets, read again at start.", valueName: "file"))
  var nameFile: String?

  @Option(name: .customShort("m"), help: ArgumentHelp("MAC address (player id).", valueName: "ab:cd:ef:12:34:56"))
  var mac: String?

  @Option(name: .customShort("M"), help: ArgumentHelp("Model name reported to the server.", valueName: "name"))
  var modelName: String = "SlimPlay"

  @Option(
    help: ArgumentHelp(
      "Model reported to the server (Model=); squeezelite's by default, so plugins treat the player as one.",
      valueName: "model"))
  var model: String = "squeezelite"

  @Option(
    name: .customShort("o"),
    help: ArgumentHelp(
      "Output: an ALSA PCM name, '-' for raw PCM on stdout, 'null' to discard at real time.", valueName: "device"))
  var output: String = "default"

  @Flag(name: .customShort("l"), help: "List the ALSA output devices and exit.")
  var listDevices = false

  @Option(
    name: .customShort("a"),
    help: ArgumentHelp(
      "ALSA buffer:period:format:mmap (buffer < 500 = ms, else frames; default 40 ms, 200 ms through PulseAudio/PipeWire; period < 50 = count, else frames; format 16|24|24_3|32; mmap 0|1). With -o - the sample size 16|24|32.",
      valueName: "params"))
  var outputParameters: String?

  @Option(
    name: .customShort("V"),
    help: ArgumentHelp(
      "Hardware volume: the server's volume sets this ALSA mixer control (in dB); the samples stay bit-exact.",
      valueName: "control[,index]"))
  var volumeControl: String?

  @Option(
    name: .customShort("U"),
    help: ArgumentHelp(
      "Unmute this ALSA mixer control and set it to full when the output opens; the volume stays in software.",
      valueName: "control[,index]"))
  var unmuteControl: String?

  @Option(
    name: .customShort("O"),
    help: ArgumentHelp("Mixer device for -V/-U/-L (default: the card of -o).", valueName: "mixer device"))
  var mixerDevice: String?

  @Flag(name: .customShort("L"), help: "List the volume controls of the mixer device and exit.")
  var listMixerControls = false

  @Option(
    name: .customShort("p"),
    help: ArgumentHelp(
      "Real-time (SCHED_FIFO) priority of the output thread, 1-99; normal priority when not permitted.",
      valueName: "priority"))
  var priority: Int32 = 45

  @Option(
    name: .customShort("b"), help: ArgumentHelp("Stream and output buffer sizes in KB.", valueName: "stream:output"))
  var buffers: String?

  @Option(
    name: .customShort("c"),
    help: ArgumentHelp("Codecs to offer, in preference order (flac,opus,mp3,pcm).", valueName: "codec,…"))
  var codecs: String?

  @Option(name: .customShort("e"), help: ArgumentHelp("Codecs to exclude.", valueName: "codec,…"))
  var excludedCodecs: String?

  @Option(
    name: .customShort("r"),
    help: ArgumentHelp(
      "Supported sample rates: max, min-max or a list; optional :delay ms on a rate change.", valueName: "rates[:delay]"
    ))
  var rates: String?

  @Option(
    name: .customShort("S"),
    help: ArgumentHelp(
      "Script run with 2 at start, then 1 / 0 when the server powers the player on / off (an amplifier switch).",
      valueName: "script"))
  var powerScript: String?

  @Option(
    name: .customShort("C"),
    help: ArgumentHelp("Close the output device after this many idle seconds.", valueName: "seconds"))
  var idleClose: Int?

  @Option(
    name: .customShort("Z"),
    help: ArgumentHelp("Highest sample rate reported to the server (it lowers the device's).", valueName: "rate"))
  var maximumRate: Int?

  @Flag(
    name: .customShort("X"),
    help: "With -V: spread the volume evenly over the control's raw steps instead of its dB scale.")
  var linearMixer = false

  @Flag(
    name: .customShort("W"),
    help: "Add wav to the formats offered, as squeezelite's -W does (the player reads WAV and AIFF headers itself).")
  var readWaveHeaders = false

  @Option(
    name: .customShort("D"),
    help: ArgumentHelp(
      "DSD output (accepted for squeezelite set-ups; DSD is not played yet).", valueName: "[delay][:format]"))
  var dsdOutput: String?

  @Option(
    name: [.customShort("R"), .customShort("u")],
    help: ArgumentHelp(
      "Resampling (accepted for squeezelite set-ups; tracks play at their own rate).", valueName: "[recipe]"))
  var resampling: String?

  @Option(
    name: .customShort("G"),
    help: ArgumentHelp("GPIO amplifier relay (accepted for squeezelite set-ups; use -S).", valueName: "chip:line:H|L"))
  var gpioRelay: String?

  @Option(
    name: .customShort("i"), help: ArgumentHelp("LIRC remote control (not supported; ignored).", valueName: "[lircrc]"))
  var infrared: String?

  @Flag(name: .customShort("v"), help: "Visualiser (not supported; ignored).")
  var visualiser = false

  @Option(
    name: .customShort("f"),
    help: ArgumentHelp("Log to this file instead of standard error; reopened on SIGHUP.", valueName: "logfile"))
  var logFile: String?

  @Flag(name: .customShort("z"), help: "Run in the background (daemon); use -f for the log.")
  var daemonize = false

  @Flag(name: .customShort("t"), help: "Print the licence and exit.")
  var printLicence = false

  @Option(
    name: .customShort("d"),
    help: ArgumentHelp(
      "Log level per category: all|slimproto|stream|decode|output|lms|cache|control = trace|debug|info|notice|warning|error. Repeatable.",
      valueName: "category=level"))
  var logLevels: [String] = []

  @Option(name: .customShort("P"), help: ArgumentHelp("Write the process id to this file.", valueName: "file"))
  var pidFile: String?

  @Option(help: ArgumentHelp("Folder for state files (the player name when -N is not given).", valueName: "dir"))
  var stateDir: String?

  @Option(help: ArgumentHelp("Where discovery requests go (default: broadcast).", valueName: "host[:port]"))
  var discoverTo: String = "255.255.255.255:3483"

  @Option(help: ArgumentHelp("Seconds without a message before the server counts as gone.", valueName: "seconds"))
  var serverTimeout: Int = 12

  @Option(
    help: ArgumentHelp(
      "Seconds of server silence after which a stalled stream means the server is gone.", valueName: "seconds"))
  var serverSilence: Int = 7

  @Option(
    help: ArgumentHelp(
      "Seconds without stream data (with room for it) that count as a stall.", valueName: "seconds"))
  var streamStall: Int = 2

  @Option(help: ArgumentHelp("Offline cache folder (default: <state dir>/cache).", valueName: "dir"))
  var cacheDir: String?

  @Option(help: ArgumentHelp("Offline cache size cap in MB.", valueName: "MB"))
  var cacheSize: Int = 1024

  @Option(
    help: ArgumentHelp("Upcoming tracks kept in the offline cache besides the current one (0-15).", valueName: "N"))
  var prefetch: Int = 5

  @Option(
    help: ArgumentHelp(
      "LMS's HTTP port, for JSON-RPC and downloads (default: from discovery, else 9000).", valueName: "port"))
  var lmsPort: Int?

  @Option(help: ArgumentHelp("LMS user name, when LMS asks for a password.", valueName: "user"))
  var lmsUser: String?

  @Option(help: ArgumentHelp("File holding the LMS password (never pass it on the command line).", valueName: "file"))
  var lmsPasswordFile: String?

  @Flag(help: "Turn off the offline cache, handoff and resync.")
  var noOffline = false

  @Option(
    help: ArgumentHelp(
      "Where the local control API listens, or 'off'. Beyond loopback it needs --control-token.",
      valueName: "addr:port"))
  var control: String = "127.0.0.1:9393"

  @Option(help: ArgumentHelp("Token the control API requires (Bearer header or ?token=).", valueName: "token"))
  var controlToken: String?

  @Option(
    help: ArgumentHelp(
      "Read settings from this file first (NAME=value lines: SL_NAME, SL_SOUNDCARD, SB_SERVER_IP, SB_EXTRA_ARGS, as in Debian's /etc/default/squeezelite); flags on the command line win.",
      valueName: "file"))
  var config: String?

  @Flag(
    help:
      "Write the systemd unit (/etc/systemd/system/slimplay.service, with --user ~/.config/systemd/user) and a config file if there is none, then exit."
  )
  var createService = false

  @Flag(help: "Print the systemd unit --create-service would write, and exit.")
  var printService = false

  @Flag(help: "With --create-service or --print-service: a user service instead of a system one.")
  var user = false

  @Option(help: ArgumentHelp("The binary the unit starts (default: this one).", visibility: .hidden))
  var serviceExecutable: String?

  @Flag(help: ArgumentHelp("Print the config file template --create-service writes, and exit.", visibility: .hidden))
  var printConfigTemplate = false

  public init() {}

  /// Entry point: `--config` expanded into flags, then parsed as usual.
  public static func runFromCommandLine() -> Never {
    let arguments = Array(CommandLine.arguments.dropFirst())
    do {
      let expanded = try ConfigFile.expand(arguments) { message in printError("slimplay: \(message)") }
      main(SqueezeliteArguments.normalize(expanded))
    } catch {
      printError("slimplay: \(error)")
      Glibc.exit(64)
    }
    Glibc.exit(0)
  }

  static let licence = """
    slimplay \(SlimplayVersion.string), a headless Squeezebox player.
    Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
    Distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND.

    """

  static func printError(_ message: String) { write(message + "\n", to: 2) }

  /// Text for standard output, written whole (no buffering left behind at `exit`).
  static func printOutput(_ text: String) { write(text, to: 1) }

  private static func write(_ text: String, to descriptor: Int32) {
    _ = text.utf8CString.withUnsafeBufferPointer { Glibc.write(descriptor, $0.baseAddress, $0.count - 1) }
  }

  public mutating func validate() throws {
    _ = try settings()
  }

  public func run() throws {
    if printLicence {
      Self.printOutput(Self.licence)
      return
    }
    if printConfigTemplate {
      Self.printOutput(ServiceUnit.configTemplate)
      return
    }
    if createService || printService {
      try service()
      return
    }
    let settings = try settings()
    try PlayerRuntime(settings: settings).run()
  }
}
