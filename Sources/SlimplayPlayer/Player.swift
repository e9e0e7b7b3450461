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

#if canImport(Glibc)
  import Glibc
#endif

/// Why a player cannot be made.
public enum PlayerError: Error, Equatable, CustomStringConvertible {
  /// Another player (in this process or another) holds the state folder of this MAC address.
  case stateFolderHeld(String)
  case unreadablePasswordFile(String)

  public var description: String {
    switch self {
    case .stateFolderHeld(let reason): reason
    case .unreadablePasswordFile(let path): "cannot read the LMS password file \(path)"
    }
  }
}

/// One player, built from its settings: the audio pipeline, the SlimProto session and client, and
/// (as the settings ask) the offline side, the control API, the power hooks and the remote. It
/// owns its event loops and threads: `start()` connects it, `stop()` tears it all down and waits,
/// so several players can live in one process, each with its own state folder and cache.
/// Process-wide matters (logging, signals, daemonizing, the pid file) are the caller's.
public final class Player {
  public let settings: PlayerSettings
  public let mac: MACAddress
  /// `<state>/<MAC>`, when there is a state folder.
  public let stateFolder: String?
  let logger = Logger(label: LogConfiguration.Category.slimproto.rawValue)
  private let stateLock: FolderLock?
  private var running: Running?

  /// What a started player is made of, for `stop()`.
  private struct Running {
    let group: MultiThreadedEventLoopGroup
    let client: SlimProtoClient
    let engine: StreamingEngine
    let coordinator: OfflineCoordinator?
    let control: ControlServer?
    let lmsClient: LMSClient?
  }

  /// Takes the player's state folder (refused while another player holds it: it would overwrite
  /// the other's state); nothing runs until `start()`.
  public init(settings: PlayerSettings, environment: [String: String]) throws(PlayerError) {
    self.settings = settings
    mac = settings.mac ?? MACAddressSource.stableAddress()
    stateFolder = settings.playerStateDirectoryPath(environment: environment, mac: mac)
    var lock: FolderLock?
    if let base = settings.stateDirectoryPath(environment: environment) {
      switch PlayerStateFolder.prepare(base: base, mac: mac, logger: logger) {
      case .success(let held):
        lock = held
      case .failure(.held(let folder, let pid)):
        throw .stateFolderHeld(
          "state: \(FolderLock.Failure.held(folder: folder, pid: pid)) as player \(mac): give each player its own -m")
      case .failure(let failure):
        logger.warning("state: \(failure)")
      }
    }
    stateLock = lock
    nameStore = NameStore(path: settings.nameFilePath(environment: environment, mac: mac))
  }

  private let nameStore: NameStore

  deinit { stop() }

  /// Builds the player and connects it to the server (or starts looking for one).
  public func start() throws(PlayerError) {
    guard running == nil else { return }
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
    let streamingEngine = makeEngine(eventLoop: loop)
    var engine: any PlaybackEngine = streamingEngine
    var powerChanged: ((Bool) -> Void)?
    if let script = settings.powerScript {
      let power = PowerScript(path: script, logger: logger)
      power.started()
      powerChanged = { power.powerChanged(isOn: $0) }
    }
    if let specification = settings.gpioRelay {
      let relay = GPIORelay(specification, logger: logger)
      powerChanged = { relay.powerChanged(isOn: $0) }
    }
    // JSON-RPC to LMS: for the offline side and for the control API.
    let lmsClient: LMSClient?
    do {
      lmsClient =
        settings.offline.enabled || settings.control != nil
        ? try makeLMSClient(loop: loop, location: location) : nil
    } catch {
      try? group.syncShutdownGracefully()
      streamingEngine.shutDown()
      throw error
    }
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
    let releaseCode = releaseCodeOnceUsed(loop: loop)
    var controlServer: ControlServer?
    var onlineView: OnlinePlayerView?
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
        onlineView = view
        player = view
      }
      let artwork = stateFolder.map {
        ArtworkCache(directory: $0 + "/artwork", capacityBytes: 250 << 20, client: lmsClient, logger: logger)
      }
      let target = PlayerControl(
        player: player, client: lmsClient, artwork: artwork,
        snapshotPath: stateFolder.map { $0 + "/nowplaying.json" })
      target.oneOffWorkDone = releaseCode.afterOneOffWork
      // Clients on the network reach the API by the machine's name as well as by address.
      let server = ControlServer(
        eventLoop: loop, token: control.token, ownNames: [control.host, HostName.current()], target: target,
        logger: logger)
      server.start(host: control.host, port: control.port, furtherPorts: control.furtherPorts)
      controlServer = server
    }
    let session = PlayerSession(
      identity: identity, name: name, nameStore: nameStore, engine: engine, location: location, logger: logger)
    if let onlineView { session.onConnectionChange = { onlineView.serverConnectionChanged($0) } }
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
    // Set once the client has made the session's hold (`--return-to-server ask`).
    if let offlineCoordinator, let hold = session.holdConnection {
      loop.execute { offlineCoordinator.holdServerConnection = hold }
    }
    // The engine's events go to the session (through the offline side when there is one); the
    // power hooks and the code release follow them too.

    let downstream = streamingEngine.onEvent
    streamingEngine.onEvent = { event in
      downstream?(event)
      switch event {
      case .powerChanged(let on): powerChanged?(on)
      case .streamRequested, .trackStarted: releaseCode.afterEvent(event)
      default: break
      }
    }
    client.start()
    running = Running(
      group: group, client: client, engine: streamingEngine, coordinator: offlineCoordinator,
      control: controlServer, lmsClient: lmsClient)
  }

  /// Disconnects, stops playback, closes the device and ends the player's threads; waits for all
  /// of it. The state folder stays held until the player is released.
  public func stop() {
    guard let running else { return }
    self.running = nil
    let (coordinator, engine, control, lmsClient, client) = (
      running.coordinator, running.engine, running.control, running.lmsClient, running.client
    )
    running.group.next().execute {
      coordinator?.shutDown()
      engine.shutDown()
      control?.stop()
      lmsClient?.close()
      client.stop()
    }
    do {
      try client.stopped.wait()
    } catch {
      logger.warning("the connection did not close cleanly: \(error)")
    }
    do {
      try running.group.syncShutdownGracefully()
    } catch {
      logger.warning("the event loops did not end cleanly: \(error)")
    }
  }

  /// The kernel maps code in 64 KB blocks around each page used, and much code runs once: all of
  /// start-up (argument parsing, set-up, the libraries' symbol tables), and at each stream and
  /// track start the stream's and decoder's set-up, the status poll and downloads of a new queue
  /// position. Dropping the program's and libraries' code and constants from this process (they
  /// fault back from the page cache when next used) and returning the free heap keeps resident
  /// what playing uses. Start-up's pages go when the server first asks for a stream (2 s after
  /// the start at the latest), before the buffers fill; a stream or track start is followed by
  /// drops 2 s and 10 s later, a new start moving them, so a run of skips costs two; so is work
  /// the control API does once in a while (a library answered, a pass over the pinned covers).
  /// Set before the client starts, so the control loop only ever reads them.
  private func releaseCodeOnceUsed(
    loop: any EventLoop
  ) -> (afterEvent: (EngineEvent) -> Void, afterOneOffWork: @Sendable () -> Void) {
    let logger = logger
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
    loop.scheduleTask(in: .seconds(2)) { releaseStartUp() }
    return (
      afterEvent: { event in
        if event == .streamRequested { releaseStartUp() }
        releaseAfterStarting()
      },
      afterOneOffWork: { loop.execute { releaseAfterStarting() } }
    )
  }
}
