import AudioOutput
import CSupport
import Decoders
import GroupSync
import LMSControl
import LocalControl
import Logging
import NIOCore
import NIOPosix
import Offline
import Playback
import Resampling
import SlimConnection
import SlimProto
import StreamFetch
import Support
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Builds the player from its settings, runs it until SIGINT/SIGTERM, and cleans up.
struct PlayerRuntime {
  let settings: PlayerSettings

  func run() throws {
    // Before any thread: the log file takes standard error, then the fork leaves the terminal.
    let logFile = try settings.logFile.map { path in try LogFile(path: path) }
    if settings.daemonize {
      // The working folder is kept: relative paths given with -f (reopened on SIGHUP), -P or
      // --state-dir keep meaning what they meant on the command line.
      guard daemon(1, 1) == 0 else {
        SlimplayCommand.printError("slimplay: cannot run in the background: \(String(cString: strerror(errno)))")
        throw ExitStatus.failure
      }
      // Nothing of the starting terminal is kept but what is used: the audio of `-o -`, the log file.
      detachStandardStreams(keepOutput: settings.output == .standardOutput, keepError: logFile != nil)
    }
    ShutdownSignals.block(hangUp: logFile != nil)
    let logging = settings.logging
    LoggingSystem.bootstrap { label in
      StderrLogHandler(label: label, level: logging.level(for: label))
    }
    ALSADevices.routeLibraryMessages { message in
      guard let message else { return }
      alsaLibraryLogger.debug("alsa-lib: \(String(cString: message))")
    }
    if settings.listDevices {
      listDevices()
      return
    }
    if let device = settings.listMixerDevice {
      listMixerControls(device: device)
      return
    }
    let logger = Logger(label: LogConfiguration.Category.slimproto.rawValue)
    for ignored in settings.ignoredOptions { logger.warning("\(ignored)") }
    let environment = Environment.current(["STATE_DIRECTORY", "XDG_STATE_HOME", "HOME"])

    let mac = settings.mac ?? MACAddressSource.stableAddress()
    let stateFolder = settings.playerStateDirectoryPath(environment: environment, mac: mac)
    var stateLock: FolderLock?
    if let base = settings.stateDirectoryPath(environment: environment) {
      switch PlayerStateFolder.prepare(base: base, mac: mac, logger: logger) {
      case .success(let lock):
        stateLock = lock
      case .failure(let failure):
        guard case .held = failure else {
          logger.warning("state: \(failure)")
          break
        }
        // A second process for the same player would overwrite the first one's state.
        logger.error("state: \(failure) as player \(mac): give each player its own -m")
        throw ExitStatus.failure
      }
    }
    defer { withExtendedLifetime(stateLock) {} }
    // After the lock: a second process refused above leaves the running one's pid file alone.
    if let pidFile = settings.pidFile {
      do {
        try FileIO.writeAtomically(pidFile, Array("\(getpid())\n".utf8))
      } catch {
        logger.error("cannot write pid file: \(error)")
        throw ExitStatus.failure
      }
    }
    defer { if let pidFile = settings.pidFile { unlink(pidFile) } }
    let nameStore = NameStore(path: settings.nameFilePath(environment: environment, mac: mac))
    let name = settings.name ?? nameStore.load()
    // https streams straight from the source need libssl, loaded only when one plays; without it
    // LMS relays them.
    let canHTTPS = TLSLibrary.isInstalled
    if !canHTTPS { logger.info("libssl.so.3 not found: https streams come relayed by LMS (install libssl3)") }
    let identity = PlayerSession.Identity(
      mac: mac, model: settings.model, modelName: settings.modelName, firmware: SlimplayVersion.string,
      formats: settings.formatTokens, canHTTPS: canHTTPS)
    logger.notice("slimplay \(SlimplayVersion.string) player \(mac) name '\(name ?? "(server's choice)")'")

    // One loop for control and streams; a second for cache downloads (blocking file writes).
    let group = MultiThreadedEventLoopGroup(numberOfThreads: settings.offline.enabled ? 2 : 1)
    // Named for what they do (top, /proc/PID/task/*/comm), in the order next() hands them out.
    // Downloads for the cache are background work: they yield the CPU to playback.
    for (loop, (name, nice)) in zip(group.makeIterator(), [("slimplay-net", 0), ("slimplay-cache", 10)]) {
      loop.execute {
        slimplay_set_thread_name(name)
        _ = slimplay_set_thread_nice(Int32(nice))
      }
    }
    let loop = group.next()
    // Where the server is: the session records it, the JSON-RPC side reads it.
    let location = ServerLocation()
    let streamingEngine = makeEngine(eventLoop: loop, mac: mac, logger: logger)
    var engine: any PlaybackEngine = streamingEngine
    if let script = settings.powerScript {
      let power = PowerScript(path: script, logger: logger)
      power.started()
      streamingEngine.powerChanged = { power.powerChanged(isOn: $0) }
    }
    if let specification = settings.gpioRelay {
      let relay = GPIORelay(specification, logger: logger)
      streamingEngine.powerChanged = { relay.powerChanged(isOn: $0) }
    }
    // JSON-RPC to LMS: for the offline side and for the control API.
    let lmsClient =
      settings.offline.enabled || settings.control != nil
      ? try makeLMSClient(mac: mac, loop: loop, location: location) : nil
    var offlineCoordinator: OfflineCoordinator?
    var controlled: (any ControlledPlayer)?
    if settings.offline.enabled, let lmsClient,
      let coordinator = makeOfflineCoordinator(
        engine: streamingEngine, client: lmsClient, downloadLoop: group.next(), stateFolder: stateFolder)
    {
      engine = coordinator
      offlineCoordinator = coordinator
      controlled = coordinator
      loop.execute { coordinator.start() }
    }
    var controlServer: ControlServer?
    if let control = settings.control, let lmsClient {
      let logger = Logger(label: LogConfiguration.Category.control.rawValue)
      let player: any ControlledPlayer
      if let controlled {
        player = controlled
      } else {
        // Offline mode off: the queue comes from LMS's status, polled while connected.
        let view = OnlinePlayerView(
          engine: streamingEngine,
          poller: StatusPoller(client: lmsClient, logger: Logger(label: LogConfiguration.Category.lms.rawValue)))
        engine = view
        player = view
      }
      let artwork = stateFolder.map {
        ArtworkCache(directory: $0 + "/artwork", capacityBytes: 250 << 20, client: lmsClient, logger: logger)
      }
      let target = PlayerControl(
        player: player, client: lmsClient, artwork: artwork,
        snapshotPath: stateFolder.map { $0 + "/nowplaying.json" })
      // Clients on the network reach the API by the machine's name as well as by address.
      let server = ControlServer(
        eventLoop: loop, token: control.token, ownNames: [control.host, ConfigFile.hostName()], target: target,
        logger: logger)
      server.start(host: control.host, port: control.port, furtherPorts: control.furtherPorts)
      controlServer = server
    }
    let session = PlayerSession(
      identity: identity, name: name, nameStore: nameStore, engine: engine, location: location, logger: logger)
    if let lircrc = settings.infrared {
      // Each press goes out on the connection's loop, timed as the status reports are; the session
      // is touched there only.
      nonisolated(unsafe) let sessionOnLoop = session
      _ = InfraredRemote(logger: logger).start(lircrc: lircrc) { code in
        loop.execute {
          let jiffies = UInt32(truncatingIfNeeded: MonotonicClock.milliseconds())
          sessionOnLoop.send(.infrared(jiffies: jiffies, format: 0, bits: 0, code: code))
        }
      }
    }
    let client = SlimProtoClient(
      configuration: .init(
        server: settings.server,
        discovery: ServerDiscovery(target: settings.discoveryTarget),
        serverTimeout: .seconds(Int64(settings.serverTimeoutSeconds)),
        // Playing offline, the player wants to know within a second or two that the server is
        // back, to resync it; a refused connect on the LAN costs next to nothing.
        backoff: offlineCoordinator == nil ? Backoff() : Backoff(maximum: .milliseconds(750)),
        liveness: settings.liveness),
      session: session, eventLoop: loop, logger: logger)
    client.discovered = { reply in location.discoveredHTTPPort = reply.jsonPort }

    let coordinator = offlineCoordinator
    let control = controlServer
    // The kernel maps code in 64 KB blocks around each page used, and much code runs once: all of
    // start-up (argument parsing, set-up, the libraries' symbol tables), and at each stream and
    // track start the stream's and decoder's set-up, the status poll and downloads of a new queue
    // position. Dropping the program's and libraries' code and constants from this process (they
    // fault back from the page cache when next used) and returning the free heap keeps resident
    // what playing uses. Start-up's pages go when the server first asks for a stream (2 s after
    // the start at the latest), before the buffers fill; a stream or track start is followed by
    // drops 2 s and 10 s later, a new start moving them, so a run of skips costs two. Set before
    // the client starts, so the control loop only ever reads them.
    let release: @Sendable (String) -> Void = { what in
      let bytes = slimplay_release_program_pages()
      let heap = slimplay_release_free_heap() != 0 ? ", free heap returned" : ""
      logger.debug("released \(bytes >> 10) KB of code and constants \(what)\(heap)")
    }
    let startUpReleased = NIOLoopBoundBox.makeBoxSendingValue(false, eventLoop: loop)
    let releaseStartUp: @Sendable () -> Void = {
      guard !startUpReleased.value else { return }
      startUpReleased.value = true
      release("of start-up")
    }
    let pendingReleases = NIOLoopBoundBox.makeBoxSendingValue([Scheduled<Void>](), eventLoop: loop)
    let releaseAfterStarting: @Sendable () -> Void = {
      for task in pendingReleases.value { task.cancel() }
      pendingReleases.value = [2, 10].map { seconds in
        loop.scheduleTask(in: .seconds(seconds)) { release("used to start a stream or a track") }
      }
    }
    streamingEngine.streamRequested = {
      releaseStartUp()
      releaseAfterStarting()
    }
    streamingEngine.trackStarted = releaseAfterStarting
    client.start()
    loop.scheduleTask(in: .seconds(2)) { releaseStartUp() }
    var number = ShutdownSignals.next(hangUp: logFile != nil)
    while number == SIGHUP, let logFile {
      // logrotate moved the file away: the log goes on in a new one of the same name.
      logFile.reopen()
      logger.notice("SIGHUP: log file \(logFile.path) reopened")
      number = ShutdownSignals.next(hangUp: true)
    }
    logger.notice("signal \(number): shutting down")
    loop.execute {
      coordinator?.shutDown()
      streamingEngine.shutDown()
      control?.stop()
      lmsClient?.close()
      client.stop()
    }
    try client.stopped.wait()
    try group.syncShutdownGracefully()
  }

  private func detachStandardStreams(keepOutput: Bool, keepError: Bool) {
    let null = open("/dev/null", O_RDWR | O_CLOEXEC)
    guard null >= 0 else { return }
    dup2(null, STDIN_FILENO)
    if !keepOutput { dup2(null, STDOUT_FILENO) }
    if !keepError { dup2(null, STDERR_FILENO) }
    close(null)
  }

  /// The JSON-RPC client of the server the session is connected to.
  private func makeLMSClient(mac: MACAddress, loop: any EventLoop, location: ServerLocation) throws -> LMSClient {
    let offline = settings.offline
    var credentials: LMSEndpoint.Credentials?
    if let user = offline.lmsUser {
      var password = ""
      if let file = offline.lmsPasswordFile {
        guard let text = FileIO.readText(file) else {
          Logger(label: LogConfiguration.Category.lms.rawValue).error("cannot read the LMS password file \(file)")
          throw ExitStatus.failure
        }
        password = String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
      }
      credentials = .init(user: user, password: password)
    }
    let explicitPort = offline.lmsPort
    let login = credentials
    return LMSClient(eventLoop: loop, playerID: mac.description) {
      location.server.map {
        LMSEndpoint(
          host: $0.host, port: explicitPort ?? location.discoveredHTTPPort ?? 9000, credentials: login)
      }
    }
  }

  /// The status poller, cache, downloads and the offline coordinator between them; nil when
  /// there is no folder for the cache.
  private func makeOfflineCoordinator(
    engine: StreamingEngine, client: LMSClient, downloadLoop: any EventLoop, stateFolder: String?
  ) -> OfflineCoordinator? {
    let offline = settings.offline
    let logger = Logger(label: LogConfiguration.Category.cache.rawValue)
    let poller = StatusPoller(
      client: client, configuration: .init(entries: offline.prefetch + 1),
      logger: Logger(label: LogConfiguration.Category.lms.rawValue))
    guard let folder = offline.cacheDirectory ?? stateFolder.map({ $0 + "/cache" }) else {
      logger.warning("offline cache off: no folder for it (give --cache-dir or --state-dir)")
      return nil
    }
    // One player to a cache: its index is rewritten whole by the player that owns it. (A folder
    // that cannot be used at all is the store's to report.)
    var owner: FolderLock?
    switch FolderLock.acquire(folder) {
    case .success(let lock): owner = lock
    case .failure(.held(let folder, let pid)):
      logger.error(
        "offline cache off: \(FolderLock.Failure.held(folder: folder, pid: pid)): give each player its own --cache-dir")
      return nil
    case .failure: owner = nil
    }
    let store = CacheStore(
      directory: folder, capacityBytes: offline.cacheMegabytes << 20, logger: logger, owner: owner)
    store.load()
    let downloads = DownloadManager(
      eventLoop: downloadLoop, store: store, logger: logger, endpoint: { client.endpoint },
      playbackIsFilling: { engine.playbackIsFilling })
    return OfflineCoordinator(
      engine: engine, poller: poller, client: client, store: store, downloads: downloads,
      configuration: .init(
        prefetch: offline.prefetch,
        savedPlaybackPath: stateFolder.map { $0 + "/playback.json" },
        streamStallSeconds: settings.liveness.stallSeconds,
        groupLink: offline.syncPort == 0
          ? nil
          : GroupLink.Configuration(
            port: offline.syncPort, interfaceAddress: nil, key: offline.syncKey.map { GroupKey($0) })),
      eventLoop: client.eventLoop, logger: logger, groupLogger: Logger(label: LogConfiguration.Category.group.rawValue))
  }

  /// The audio pipeline with the output `-o` names.
  private func makeEngine(eventLoop: any EventLoop, mac: MACAddress, logger: Logger) -> StreamingEngine {
    var visualiser: VisualiserExport?
    if settings.visualiser {
      switch VisualiserExport.open(mac: mac.description) {
      case .success(let export):
        visualiser = export
        logger.notice("visualiser: the output's samples in \(export.segmentName)")
      case .failure(let error):
        logger.error("visualiser off: \(error)")
      }
    }
    let device: any OutputDevice
    let format = settings.outputParameters.format?.deviceFormat
    switch settings.output {
    case .standardOutput:
      device = StandardOutput(format: format ?? .s32)
    case .null:
      device = NullOutput()
    case .alsa(let name):
      device = ALSAOutput(
        name: name,
        parameters: .init(
          buffer: settings.outputParameters.buffer, period: settings.outputParameters.period, format: format,
          mmap: settings.outputParameters.mmap))
    }
    let hardwareVolume = settings.mixer.map {
      HardwareVolume(
        device: $0.device, control: $0.control, role: $0.role, linear: $0.linear,
        logger: Logger(label: LogConfiguration.Category.output.rawValue))
    }
    if let hardwareVolume, hardwareVolume.role == .fullScale { hardwareVolume.deviceOpened() }
    let resampling = resamplingSettings()
    let outputBytes =
      resampling.map { settings.buffers.outputBytes(resamplingTo: $0.supportedRates.max() ?? 44100) }
      ?? settings.buffers.outputBytes
    return StreamingEngine(
      configuration: .init(
        pipeline: .init(
          streamBufferBytes: settings.buffers.streamBytes, outputBufferBytes: outputBytes,
          output: .init(
            realtimePriority: settings.realtimePriority, idleCloseSeconds: settings.idleCloseSeconds,
            dopSwitchMilliseconds: settings.dsdOutput?.switchDelayMilliseconds ?? 0,
            visualiser: visualiser),
          resampling: resampling, dsd: dsdOutput()),
        maximumSampleRate: maximumSampleRate()),
      device: device, eventLoop: eventLoop, hardwareVolume: hardwareVolume,
      logger: Logger(label: LogConfiguration.Category.stream.rawValue))
  }

  private func listMixerControls(device: String) {
    let controls = ALSAMixer.controls(device: device)
    var text = "Volume controls of \(device):\n"
    for control in controls { text += "  \(control)\n" }
    if controls.isEmpty { text += "  (none found)\n" }
    SlimplayCommand.printOutput(text)
  }

  private func listDevices() {
    let devices = ALSADevices.list()
    var text = "Output devices:\n"
    for device in devices {
      text += "  \(device.name)" + (device.description.isEmpty ? "" : " - \(device.description)") + "\n"
    }
    if devices.isEmpty { text += "  (none found)\n" }
    SlimplayCommand.printOutput(text)
  }
}

/// alsa-lib's messages: details of failures slimplay reports itself.
private let alsaLibraryLogger = Logger(label: LogConfiguration.Category.output.rawValue)

enum Environment {
  static func current(_ names: [String]) -> [String: String] {
    var values: [String: String] = [:]
    for name in names {
      if let value = getenv(name) { values[name] = String(cString: value) }
    }
    return values
  }
}

extension OutputParameters.SampleFormat {
  var deviceFormat: SampleFormat {
    switch self {
    case .s16: .s16
    case .s24: .s24
    case .s24_3: .s24_3
    case .s32: .s32
    }
  }
}
