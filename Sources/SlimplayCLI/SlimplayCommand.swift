import AudioOutput
import Logging
import Playback
import SlimConnection
import SlimProto
import SlimplayPlayer

#if canImport(Glibc)
  import Glibc
#endif

/// The `slimplay` command line. Flags follow squeezelite's where squeezelite has them.
public struct SlimplayCommand: RunnableCommand {
  public static let name = "slimplay"
  public static let abstract = "A headless Squeezebox player for Lyrion Music Server."
  public static let discussion = """
    Registers with a Lyrion (Logitech) Media Server over SlimProto and plays what it sends.
    Without -s the server is found by UDP discovery. Logs go to standard error.
    `slimplay ctl` controls a running player through its local API.
    """
  public static let usage = "slimplay <options> <subcommand>"
  public static var subcommands: [(name: String, abstract: String)] {
    [(ControlClientCommand.name, ControlClientCommand.abstract)]
  }

  public static var options: [CommandOption<SlimplayCommand>] {
    [
      .value("-s", valueName: "host[:port]", help: "Server address; discovery when omitted.", .optionalText(\.server)),
      .value("-n", valueName: "name", help: "Player name.", .optionalText(\.name)),
      .value(
        "-N", valueName: "file", help: "File that stores the name the server sets, read again at start.",
        .optionalText(\.nameFile)),
      .value("-m", valueName: "ab:cd:ef:12:34:56", help: "MAC address (player id).", .optionalText(\.mac)),
      .value("-M", valueName: "name", help: "Model name reported to the server.", .text(\.modelName)),
      .value(
        "--model", valueName: "model",
        help: "Model reported to the server (Model=); squeezelite's by default, so plugins treat the player as one.",
        .text(\.model)),
      .value(
        "-o", valueName: "device",
        help: "Output: an ALSA PCM name, '-' for raw PCM on stdout, 'null' to discard at real time.", .text(\.output)),
      .flag("-l", help: "List the ALSA output devices and exit.", \.listDevices),
      .value(
        "-a", valueName: "params",
        help:
          "ALSA buffer:period:format:mmap (buffer < 500 = ms, else frames; default 40 ms, 200 ms through PulseAudio/PipeWire; period < 50 = count, else frames; format 16|24|24_3|32; mmap 0|1). With -o - the sample size 16|24|32.",
        .optionalText(\.outputParameters)),
      .value(
        "-V", valueName: "control[,index]",
        help: "Hardware volume: the server's volume sets this ALSA mixer control (in dB); the samples stay bit-exact.",
        .optionalText(\.volumeControl)),
      .value(
        "-U", valueName: "control[,index]",
        help: "Unmute this ALSA mixer control and set it to full when the output opens; the volume stays in software.",
        .optionalText(\.unmuteControl)),
      .value(
        "-O", valueName: "mixer device", help: "Mixer device for -V/-U/-L (default: the card of -o).",
        .optionalText(\.mixerDevice)),
      .flag("-L", help: "List the volume controls of the mixer device and exit.", \.listMixerControls),
      .value(
        "-p", valueName: "priority",
        help: "Real-time (SCHED_FIFO) priority of the output thread, 1-99; normal priority when not permitted.",
        .integer32(\.priority)),
      .value("-b", valueName: "stream:output", help: "Stream and output buffer sizes in KB.", .optionalText(\.buffers)),
      .value(
        "-c", valueName: "codec,…", help: "Codecs to offer, in preference order (alac,aac,ogg,flac,opus,mp3,pcm).",
        .optionalText(\.codecs)),
      .value("-e", valueName: "codec,…", help: "Codecs to exclude.", .optionalText(\.excludedCodecs)),
      .value(
        "-r", valueName: "rates[:delay]",
        help: "Supported sample rates: max, min-max or a list; optional :delay ms on a rate change.",
        .optionalText(\.rates)),
      .value(
        "-S", valueName: "script",
        help:
          "Script run with 2 at start, then 1 / 0 when the server powers the player on / off (an amplifier switch).",
        .optionalText(\.powerScript)),
      .value(
        "-C", valueName: "seconds", help: "Close the output device after this many idle seconds.",
        .optionalInteger(\.idleClose)),
      .value(
        "-Z", valueName: "rate", help: "Highest sample rate reported to the server (it lowers the device's).",
        .optionalInteger(\.maximumRate)),
      .flag(
        "-X", help: "With -V: spread the volume evenly over the control's raw steps instead of its dB scale.",
        \.linearMixer),
      .flag(
        "-W",
        help:
          "Add wav to the formats offered, as squeezelite's -W does (the player reads WAV and AIFF headers itself).",
        \.readWaveHeaders),
      .value(
        "-D", valueName: "[delay][:format]",
        help:
          "The output takes DSD: delay = ms of silence around a PCM/DSD switch; format dop (default), dop24, dop24_3 (DSD over PCM), or u8, u16le, u16be, u32le, u32be (native DSD in ALSA's DSD_U8… formats). Without -D, DSD is converted to PCM.",
        .optionalText(\.dsdOutput)),
      .value(
        "-R", "-u", valueName: "[recipe]",
        help:
          "Resample with libsoxr to a rate the output takes. Recipe: letters (v|h|m|l|q)(L|I|M)(s)(E|X), then :flags :attenuation :precision :passband :stopband :phase; E only rates the output lacks, X to its highest rate.",
        .optionalText(\.resampling)),
      .value(
        "-G", valueName: "chip:line:H|L",
        help: "Amplifier relay on a GPIO line (chip number or path, line, active High or Low), switched like -S.",
        .optionalText(\.gpioRelay)),
      .value(
        "-i", valueName: "[lircrc]",
        help:
          "LIRC remote control: button presses go to the server as the Squeezebox remote's (lircrc entries with prog = squeezelite, default ~/.lircrc; LIRC's KEY_ names without one).",
        .optionalText(\.infrared)),
      .flag(
        "-v",
        help:
          "Visualiser: publish the samples played in shared memory (/dev/shm/squeezelite-<mac>), as squeezelite does, for jivelite's VU meters and spectrum.",
        \.visualiser),
      .value(
        "-f", valueName: "logfile", help: "Log to this file instead of standard error; reopened on SIGHUP.",
        .optionalText(\.logFile)),
      .flag("-z", help: "Run in the background (daemon); use -f for the log.", \.daemonize),
      .flag("-t", help: "Print the licence and exit.", \.printLicence),
      .value(
        "-d", valueName: "category=level",
        help:
          "Log level per category: all|slimproto|stream|decode|output|lms|cache|control = trace|debug|info|notice|warning|error. Repeatable.",
        .texts(\.logLevels)),
      .value("-P", valueName: "file", help: "Write the process id to this file.", .optionalText(\.pidFile)),
      .value(
        "--state-dir", valueName: "dir", help: "Folder for state files (the player name when -N is not given).",
        .optionalText(\.stateDir)),
      .value(
        "--discover-to", valueName: "host[:port]", help: "Where discovery requests go (default: broadcast).",
        .text(\.discoverTo)),
      .value(
        "--server-timeout", valueName: "seconds", help: "Seconds without a message before the server counts as gone.",
        .integer(\.serverTimeout)),
      .value(
        "--server-silence", valueName: "seconds",
        help: "Seconds of server silence after which a stalled stream means the server is gone.",
        .integer(\.serverSilence)),
      .value(
        "--stream-stall", valueName: "seconds",
        help: "Seconds without stream data (with room for it) that count as a stall.", .integer(\.streamStall)),
      .value(
        "--cache-dir", valueName: "dir", help: "Offline cache folder (default: <state dir>/cache).",
        .optionalText(\.cacheDir)),
      .value("--cache-size", valueName: "MB", help: "Offline cache size cap in MB.", .integer(\.cacheSize)),
      .value(
        "--pin-size", valueName: "MB", help: "Cap in MB on pinned music, kept besides the cache (default 4096).",
        .integer(\.pinSize)),
      .value(
        "--return-to-server", valueName: "auto|ask",
        help: "When the server returns while playing offline: back at once (auto), or when the listener says (ask).",
        .text(\.returnToServer)),
      .value(
        "--prefetch", valueName: "N", help: "Upcoming tracks kept in the offline cache besides the current one (0-15).",
        .integer(\.prefetch)),
      .value(
        "--lms-port", valueName: "port",
        help: "LMS's HTTP port, for JSON-RPC and downloads (default: from discovery, else 9000).",
        .optionalInteger(\.lmsPort)),
      .value(
        "--lms-user", valueName: "user", help: "LMS user name, when LMS asks for a password.", .optionalText(\.lmsUser)),
      .value(
        "--lms-password-file", valueName: "file",
        help: "File holding the LMS password (never pass it on the command line).", .optionalText(\.lmsPasswordFile)),
      .flag("--no-offline", help: "Turn off the offline cache, handoff and resync.", \.noOffline),
      .value(
        "--sync-port", valueName: "port",
        help: "UDP port on which a sync group's members keep time with each other (0: off).",
        .integer(\.syncPort)),
      .value(
        "--sync-key", valueName: "key",
        help: "Key every member of a sync group shares: their messages are signed with it.",
        .optionalText(\.syncKey)),
      .value(
        "--control", valueName: "addr:port",
        help: "Where the local control API listens, or 'off'. Beyond loopback it needs --control-token.",
        .text(\.control)),
      .value(
        "--control-token", valueName: "token", help: "Token the control API requires (Bearer header or ?token=).",
        .optionalText(\.controlToken)),
      .value(
        "--config", valueName: "file",
        help:
          "Read settings from this file first (NAME=value lines: SL_NAME, SL_SOUNDCARD, SB_SERVER_IP, SB_EXTRA_ARGS, as in Debian's /etc/default/squeezelite); flags on the command line win.",
        .optionalText(\.config)),
      .flag(
        "--create-service",
        help:
          "Write the systemd unit (/etc/systemd/system/slimplay.service, with --user ~/.config/systemd/user) and a config file if there is none, then exit.",
        \.createService),
      .flag("--print-service", help: "Print the systemd unit --create-service would write, and exit.", \.printService),
      .flag(
        "--user", help: "With --create-service or --print-service: a user service instead of a system one.", \.user),
      .flag(
        "--template",
        help:
          "With --create-service or --print-service: the template unit slimplay@.service, one player per instance (slimplay@kitchen reads /etc/default/slimplay-kitchen).",
        \.template),
      .value(
        "--service-executable", valueName: "path", help: "The binary the unit starts (default: this one).",
        hidden: true, .optionalText(\.serviceExecutable)),
      .flag(
        "--print-config-template", help: "Print the config file template --create-service writes, and exit.",
        hidden: true, \.printConfigTemplate),
    ]
  }
  var server: String?

  var name: String?
  var nameFile: String?

  var mac: String?
  var modelName: String = "SlimPlay"

  var model: String = "squeezelite"
  var output: String = "default"

  var listDevices = false
  var outputParameters: String?

  var volumeControl: String?
  var unmuteControl: String?

  var mixerDevice: String?
  var listMixerControls = false

  var priority: Int32 = 45
  var buffers: String?

  var codecs: String?
  var excludedCodecs: String?

  var rates: String?
  var powerScript: String?

  var idleClose: Int?
  var maximumRate: Int?

  var linearMixer = false
  var readWaveHeaders = false

  var dsdOutput: String?
  var resampling: String?

  var gpioRelay: String?
  var infrared: String?

  var visualiser = false
  var logFile: String?

  var daemonize = false
  var printLicence = false

  var logLevels: [String] = []
  var pidFile: String?

  var stateDir: String?
  var discoverTo: String = "255.255.255.255:3483"

  var serverTimeout: Int = 12
  var serverSilence: Int = 7

  var streamStall: Int = 2
  var cacheDir: String?

  var cacheSize: Int = 1024
  var pinSize: Int = 4096
  var returnToServer = "auto"
  var prefetch: Int = 5

  var lmsPort: Int?
  var lmsUser: String?

  var lmsPasswordFile: String?
  var noOffline = false

  var syncPort: Int = 3484
  var syncKey: String?

  static let defaultControl = "127.0.0.1:9393"
  var control: String = Self.defaultControl
  var controlToken: String?

  var config: String?
  var createService = false

  var printService = false
  var template = false
  var user = false

  var serviceExecutable: String?

  var printConfigTemplate = false

  public init() {}

  /// Entry point: `--config` expanded into flags, squeezelite's optional arguments made explicit,
  /// then parsed; `ctl` as the first word runs the control client instead.
  public static func runFromCommandLine() -> Never {
    let arguments = Array(CommandLine.arguments.dropFirst())
    let words: [String]
    do {
      words = SqueezeliteArguments.normalize(
        try ConfigFile.expand(arguments) { message in printError("slimplay: \(message)") })
    } catch {
      printError("slimplay: \(error)")
      Glibc.exit(64)
    }
    if words.first == ControlClientCommand.name {
      Glibc.exit(CommandRunner.run(ControlClientCommand.self, Array(words.dropFirst())))
    }
    Glibc.exit(CommandRunner.run(SlimplayCommand.self, words))
  }

  static let licence = """
    slimplay \(SlimplayVersion.string), a headless Squeezebox player.
    Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
    Distributed on an "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND.

    """

  static func printError(_ message: String) { CommandRunner.writeWhole(message + "\n", to: 2) }

  /// Text for standard output, written whole (no buffering left behind at `exit`).
  static func printOutput(_ text: String) { CommandRunner.writeWhole(text, to: 1) }

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
