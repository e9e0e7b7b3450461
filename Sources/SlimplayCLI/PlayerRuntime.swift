import ArgumentParser
import AudioOutput
import Dispatch
import Logging
import NIOCore
import NIOPosix
import SlimConnection
import SlimProto

#if canImport(Glibc)
  import Glibc
#endif

/// Builds the player from its settings, runs it until SIGINT/SIGTERM, and cleans up.
struct PlayerRuntime {
  let settings: PlayerSettings

  func run() throws {
    let logging = settings.logging
    LoggingSystem.bootstrap { label in
      StderrLogHandler(label: label, level: logging.level(for: label))
    }
    if settings.listDevices {
      listDevices()
      return
    }
    let logger = Logger(label: LogConfiguration.Category.slimproto.rawValue)
    let environment = Environment.current(["STATE_DIRECTORY", "XDG_STATE_HOME", "HOME"])

    if let pidFile = settings.pidFile {
      do {
        try FileIO.writeAtomically(pidFile, Array("\(getpid())\n".utf8))
      } catch {
        logger.error("cannot write pid file: \(error)")
        throw ExitCode.failure
      }
    }
    defer { if let pidFile = settings.pidFile { unlink(pidFile) } }

    let mac = settings.mac ?? MACAddressSource.stableAddress()
    let nameStore = NameStore(path: settings.nameFilePath(environment: environment))
    let name = settings.name ?? nameStore.load()
    let identity = PlayerSession.Identity(
      mac: mac, modelName: settings.modelName, firmware: SlimplayVersion.string,
      formats: settings.formatTokens)
    logger.notice("slimplay \(SlimplayVersion.string) player \(mac) name '\(name ?? "(server's choice)")'")

    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loop = group.next()
    let engine = TransportOnlyEngine(
      maximumSampleRate: maximumSampleRate(),
      logger: Logger(label: LogConfiguration.Category.output.rawValue))
    let session = PlayerSession(
      identity: identity, name: name, nameStore: nameStore, engine: engine, logger: logger)
    let client = SlimProtoClient(
      configuration: .init(
        server: settings.server,
        discovery: ServerDiscovery(target: settings.discoveryTarget),
        serverTimeout: .seconds(Int64(settings.serverTimeoutSeconds))),
      session: session, eventLoop: loop, logger: logger)

    let signals = [SIGINT, SIGTERM].map { number in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler {
        logger.notice("signal \(number): shutting down")
        client.stop()
      }
      source.resume()
      return source
    }
    client.start()
    try client.stopped.wait()
    signals.forEach { $0.cancel() }
    try group.syncShutdownGracefully()
  }

  /// The highest rate the output can play natively: the `-r` list when given; for ALSA the
  /// device's own maximum; stdout and null take any rate.
  private func maximumSampleRate() -> Int {
    if let rates = settings.rates { return rates.maximum }
    switch settings.output {
    case .standardOutput, .null:
      return 384_000
    case .alsa(let device):
      return ALSADevices.maximumRate(of: device) ?? 384_000
    }
  }

  private func listDevices() {
    let devices = ALSADevices.list()
    var text = "Output devices:\n"
    for device in devices {
      text += "  \(device.name)" + (device.description.isEmpty ? "" : " - \(device.description)") + "\n"
    }
    if devices.isEmpty { text += "  (none found)\n" }
    _ = text.utf8CString.withUnsafeBufferPointer { write(1, $0.baseAddress, $0.count - 1) }
  }
}

enum Environment {
  static func current(_ names: [String]) -> [String: String] {
    var values: [String: String] = [:]
    for name in names {
      if let value = getenv(name) { values[name] = String(cString: value) }
    }
    return values
  }
}
