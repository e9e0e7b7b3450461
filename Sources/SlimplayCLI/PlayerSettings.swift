import SlimConnection
import SlimProto

/// Everything the command line decided, validated.
public struct PlayerSettings: Equatable, Sendable {
  public var server: ServerAddress?
  public var discoveryTarget = ServerAddress(host: "255.255.255.255")
  public var mac: MACAddress?
  public var name: String?
  public var nameFile: String?
  public var stateDirectory: String?
  public var modelName = "SlimPlay"
  public var output = OutputTarget.alsa("default")
  public var listDevices = false
  public var outputParameters = OutputParameters()
  public var buffers = BufferSizes()
  public var codecs = Codec.defaultOrder
  public var rates: RateSpecification?
  public var idleCloseSeconds: Int?
  public var logging = LogConfiguration()
  public var serverTimeoutSeconds = 35
  public var pidFile: String?

  public init() {}

  /// HELO format tokens in preference order.
  public var formatTokens: [String] { codecs.flatMap(\.formatTokens) }

  /// Where the server-assigned name is kept: `-N`, else the state folder.
  public func nameFilePath(environment: [String: String]) -> String? {
    if let nameFile { return nameFile }
    return stateDirectoryPath(environment: environment).map { $0 + "/name" }
  }

  /// `--state-dir`, else systemd's STATE_DIRECTORY, else the XDG state folder.
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
