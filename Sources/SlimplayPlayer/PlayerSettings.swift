import Offline
import Playback
import Resampling
import SlimConnection
import SlimProto
import Support

/// Everything the command line decided, validated.
public struct PlayerSettings: Equatable, Sendable {
  public var server: ServerAddress?
  public var discoveryTarget = ServerAddress(host: "255.255.255.255")
  public var mac: MACAddress?
  public var name: String?
  /// `-v`: the samples played go to squeezelite's visualiser segment.
  public var visualiser = false
  /// `-i [lircrc]`: LIRC presses go to the server as the Squeezebox remote's (empty: ~/.lircrc).
  public var infrared: String?
  public var nameFile: String?
  public var stateDirectory: String?
  /// `Model=` in HELO: squeezelite's, so LMS plugins and conversion rules that key on it apply.
  public var model = "squeezelite"
  public var modelName = "SlimPlay"
  public var output = OutputTarget.alsa("default")
  public var listDevices = false
  public var outputParameters = OutputParameters()
  public var buffers = BufferSizes.withCache()
  public var codecs = Codec.defaultOrder
  /// `-W`: `wav` in HELO, as squeezelite's `-W`; headers are read with or without it.
  public var waveFiles = false
  public var rates: RateSpecification?
  /// `-Z`: the highest rate reported to the server: below what the device plays, or any rate
  /// when resampling.
  public var maximumRateLimit: Int?
  /// `-R`/`-u`: tracks are resampled (libsoxr) to a rate the output takes.
  public var resampling: ResampleRecipe?
  /// `-D`: the output takes DSD; nil: DSD is converted to PCM.
  public var dsdOutput: DSDOutputOption?
  public var idleCloseSeconds: Int?
  /// `-V` or `-U`.
  public var mixer: MixerSettings?
  /// `-L`: the mixer device whose controls to list.
  public var listMixerDevice: String?
  /// `-p`: SCHED_FIFO priority of the output thread.
  public var realtimePriority: Int32 = 45
  public var logging = LogConfiguration()
  public var serverTimeoutSeconds = 12
  /// A server silent this long while the live stream stalls is gone (before the timeout).
  public var liveness = ServerLiveness()
  public var pidFile: String?
  /// `-f`: the log goes here instead of standard error.
  public var logFile: String?
  /// `-z`.
  public var daemonize = false
  /// squeezelite options taken for compatibility that change nothing, one warning line each.
  public var ignoredOptions: [String] = []
  /// `-S`: run with 2 at start, 1/0 on power on/off.
  public var powerScript: String?
  /// `-G`: an amplifier relay on a GPIO line, switched like `-S`'s script.
  public var gpioRelay: GPIORelaySpecification?
  public var offline = OfflineSettings()
  /// The local control API; nil = off.
  public var control: ControlSettings? = ControlSettings(furtherPorts: ControlSettings.defaultFurtherPorts)

  public init() {}

  /// HELO format tokens in preference order.
  public var formatTokens: [String] {
    codecs.flatMap { codec in waveFiles && codec == .pcm ? ["wav"] + codec.capabilityTokens : codec.capabilityTokens }
  }

  /// Where the server-assigned name is kept: `-N`, else the player's state folder.
  public func nameFilePath(environment: [String: String], mac: MACAddress) -> String? {
    if let nameFile { return nameFile }
    return playerStateDirectoryPath(environment: environment, mac: mac).map { $0 + "/name" }
  }

  /// The player's own folder in the state folder (`PlayerStateFolder`).
  public func playerStateDirectoryPath(environment: [String: String], mac: MACAddress) -> String? {
    stateDirectoryPath(environment: environment).map { $0 + "/" + PlayerStateFolder.name(for: mac) }
  }

  /// The state folder every player on the machine shares: `--state-dir`, else systemd's
  /// STATE_DIRECTORY, else the XDG state folder.
  public func stateDirectoryPath(environment: [String: String]) -> String? {
    if let stateDirectory { return stateDirectory }
    if let systemd = environment["STATE_DIRECTORY"], !systemd.isEmpty {
      return String(systemd.split(separator: ":").first ?? "")
    }
    if let xdg = environment["XDG_STATE_HOME"], !xdg.isEmpty { return xdg + "/slimplay" }
    if let home = environment["HOME"], !home.isEmpty { return home + "/.local/state/slimplay" }
    return nil
  }
}

/// The offline cache, handoff and resync (`--cache-dir`, `--cache-size`, `--pin-size`, `--prefetch`, `--lms-*`,
/// `--no-offline`), and a sync group's time while the server is away (`--sync-port`, `--sync-key`).
public struct OfflineSettings: Equatable, Sendable {
  public var enabled = true
  public var cacheDirectory: String?
  public var cacheMegabytes = 1024
  /// The cap on pinned music, besides the cache's.
  public var pinMegabytes = 4096
  /// `--return-to-server`: back to the server at once, or when the listener says.
  public var returnToServer = ReturnToServer.auto
  public var prefetch = 5
  /// nil: the port discovery reported, else 9000.
  public var lmsPort: Int?
  public var lmsUser: String?
  public var lmsPasswordFile: String?
  /// The UDP port a sync group's members keep time on (0: they do not).
  public var syncPort = 3484
  /// Signs the group's messages (nil: unsigned, filtered by sender and address only).
  public var syncKey: String?

  public init(
    enabled: Bool = true, cacheDirectory: String? = nil, cacheMegabytes: Int = 1024, pinMegabytes: Int = 4096,
    prefetch: Int = 5,
    lmsPort: Int? = nil, lmsUser: String? = nil, lmsPasswordFile: String? = nil, syncPort: Int = 3484,
    syncKey: String? = nil
  ) {
    self.enabled = enabled
    self.cacheDirectory = cacheDirectory
    self.cacheMegabytes = cacheMegabytes
    self.pinMegabytes = pinMegabytes
    self.prefetch = prefetch
    self.lmsPort = lmsPort
    self.lmsUser = lmsUser
    self.lmsPasswordFile = lmsPasswordFile
    self.syncPort = syncPort
    self.syncKey = syncKey
  }
}

/// `--control addr:port` and `--control-token`.
public struct ControlSettings: Equatable, Sendable {
  public var host = "127.0.0.1"
  public var port = 9393
  public var token: String?
  /// Ports after `port` tried in turn when it is taken: left at the default address, several
  /// players on one machine each get one (the log says which).
  public var furtherPorts = 0
  /// 9393 to 9402 at the default address.
  public static let defaultFurtherPorts = 9

  public init(host: String = "127.0.0.1", port: Int = 9393, token: String? = nil, furtherPorts: Int = 0) {
    self.host = host
    self.port = port
    self.token = token
    self.furtherPorts = furtherPorts
  }
}

/// `-V`/`-U` with `-O`: which mixer control, and what it is for.
public struct MixerSettings: Equatable, Sendable {
  public var device: String
  public var control: String
  public var role: HardwareVolume.Role
  /// `-X`.
  public var linear: Bool

  public init(device: String, control: String, role: HardwareVolume.Role, linear: Bool = false) {
    self.device = device
    self.control = control
    self.role = role
    self.linear = linear
  }
}
