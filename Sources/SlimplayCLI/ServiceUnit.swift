import SlimConnection
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// The systemd unit `--create-service` writes (and the Debian package ships), and the
/// configuration file it reads.
public enum ServiceUnit {
  public enum Scope: Sendable {
    /// A system service: a user of its own (allocated by systemd unless one named `slimplay`
    /// exists) in the `audio` group, allowed real-time priority for the output thread.
    case system
    /// A user service (`systemctl --user`), for a desktop session's sound server.
    case user
  }

  public static let systemConfigPath = "/etc/default/slimplay"
  public static let userConfigPath = "%h/.config/slimplay/slimplay.conf"
  /// The template's instances (`slimplay@kitchen`): one player each, each with its own file.
  public static let systemInstanceConfigPath = "/etc/default/slimplay-%i"
  public static let userInstanceConfigPath = "%h/.config/slimplay/%i.conf"

  /// The unit's file name: `slimplay.service`, or the template `slimplay@.service`, whose instances
  /// are several players on one machine (one per DAC or room, each with its own name, MAC and
  /// output in its own configuration file; their state folders are their own within the shared one).
  public static func unitName(template: Bool) -> String { template ? "slimplay@.service" : "slimplay.service" }

  public static func text(scope: Scope, executable: String, template: Bool = false) -> String {
    let player = template ? " (%i)" : ""
    switch scope {
    case .system:
      return """
        [Unit]
        Description=slimplay Squeezebox player\(player) for Lyrion Music Server
        Documentation=man:slimplay(1)
        Wants=network-online.target
        After=network-online.target sound.target

        [Service]
        Type=exec
        ExecStart=\(executable) --config \(template ? systemInstanceConfigPath : systemConfigPath)
        User=slimplay
        DynamicUser=yes
        SupplementaryGroups=audio
        StateDirectory=slimplay
        # The output thread asks for SCHED_FIFO (-p); without these it runs at normal priority.
        AmbientCapabilities=CAP_SYS_NICE
        LimitRTPRIO=99
        Restart=on-failure
        RestartSec=5
        TimeoutStopSec=15

        [Install]
        WantedBy=multi-user.target

        """
    case .user:
      return """
        [Unit]
        Description=slimplay Squeezebox player\(player) for Lyrion Music Server
        Documentation=man:slimplay(1)
        After=sound.target

        [Service]
        Type=exec
        ExecStart=\(executable) --config \(template ? userInstanceConfigPath : userConfigPath)
        Restart=on-failure
        RestartSec=5
        TimeoutStopSec=15

        [Install]
        WantedBy=default.target

        """
    }
  }

  /// A starting configuration: Debian's squeezelite file, with slimplay's flags besides.
  public static let configTemplate = """
    # slimplay settings, read at start by `slimplay --config <this file>` (the service does).
    # The variables of Debian's /etc/default/squeezelite mean the same here; other flags go in
    # SB_EXTRA_ARGS. See slimplay(1) for every flag.

    # The player's name (the server's choice when unset):
    #SL_NAME="$(hostname -s)"

    # ALSA output device (`slimplay -l` lists them):
    #SL_SOUNDCARD="sysdefault:CARD=ALSA"

    # The server, when discovery does not find it:
    #SB_SERVER_IP="192.168.1.2"

    # Further flags, for example hardware volume and an amplifier switch:
    #SB_EXTRA_ARGS="-V Digital -C 5 -S /usr/local/bin/amplifier"

    """

  public struct Written: Equatable, Sendable {
    public var unitPath: String
    /// nil when a configuration file was already there (it is never overwritten).
    public var configPath: String?
  }

  /// Writes the unit, and the configuration template when there is none yet (for a template
  /// unit, each instance's file is the user's to write).
  public static func install(
    scope: Scope, executable: String, environment: [String: String], template: Bool = false
  ) throws(FileIO.Failure) -> Written {
    let unitDirectory: String
    let configPath: String
    switch scope {
    case .system:
      unitDirectory = "/etc/systemd/system"
      configPath = systemConfigPath
    case .user:
      let home = environment["HOME"] ?? ""
      let config = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.config"
      unitDirectory = config + "/systemd/user"
      configPath = home + "/.config/slimplay/slimplay.conf"
    }
    guard FileIO.makeDirectories(unitDirectory) else { throw .open(path: unitDirectory, errno: errno) }
    let unitPath = unitDirectory + "/" + unitName(template: template)
    try FileIO.writeAtomically(unitPath, Array(text(scope: scope, executable: executable, template: template).utf8))
    var written = Written(unitPath: unitPath, configPath: nil)
    if !template && access(configPath, F_OK) != 0 {
      let folder = FileIO.directoryName(of: configPath)
      guard FileIO.makeDirectories(folder) else { throw .open(path: folder, errno: errno) }
      try FileIO.writeAtomically(configPath, Array(configTemplate.utf8))
      written.configPath = configPath
    }
    return written
  }

  /// The running binary's own path, for ExecStart.
  public static func currentExecutable() -> String {
    var buffer = [CChar](repeating: 0, count: 4096)
    let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard count > 0 else { return "/usr/bin/slimplay" }
    return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
