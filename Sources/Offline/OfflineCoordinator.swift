import GroupSync
import LMSControl
import Logging
import NIOCore
import Playback
import SlimConnection
import SlimProto
import Support

/// Sits between the protocol session and the streaming engine and carries out what
/// `OfflineStateMachine` decides: online it forwards everything and follows the queue; when
/// the server or the network goes away it hands playback to the cache at the exact next frame;
/// when the server returns it brings LMS to where the player really is and hands back to the
/// server's stream at the next track. Confined to the control event loop.
public final class OfflineCoordinator: PlaybackEngine, @unchecked Sendable {
  public struct Configuration: Sendable {
    public var prefetch: Int
    /// Where the playing state is saved (nil: not saved).
    public var savedPlaybackPath: String?
    /// With no server by then after start, a saved state resumes from the cache.
    public var resumeAfter: TimeAmount
    /// While the server is away, a live stream with no data this long is given up on.
    public var streamStallSeconds: Double
    /// How long the server has to start its stream after the resync jump.
    public var resyncTimeout: TimeAmount
    /// How long a group member waits for the master's resync (the master first waits up to 5 s
    /// for the other members to return).
    public var groupMasterTimeout: TimeAmount
    /// How a sync group's members reach each other while the server is away (nil: they do not).
    public var groupLink: GroupLink.Configuration?
    /// When the server returns while the player plays from its cache: hand back at once (`auto`), or
    /// stay off the server until the listener chooses (`ask`).
    public var returnToServer: ReturnToServer = .auto

    public init(
      prefetch: Int = 5, savedPlaybackPath: String? = nil, returnToServer: ReturnToServer = .auto,
      resumeAfter: TimeAmount = .seconds(5),
      streamStallSeconds: Double = 2, resyncTimeout: TimeAmount = .seconds(5),
      groupMasterTimeout: TimeAmount = .seconds(12), groupLink: GroupLink.Configuration? = nil
    ) {
      self.prefetch = prefetch
      self.savedPlaybackPath = savedPlaybackPath
      self.returnToServer = returnToServer
      self.resumeAfter = resumeAfter
      self.streamStallSeconds = streamStallSeconds
      self.resyncTimeout = resyncTimeout
      self.groupMasterTimeout = groupMasterTimeout
      self.groupLink = groupLink
    }
  }

  /// Where the engine's events go on (the session), those the offline state lets through.
  public var onEvent: ((EngineEvent) -> Void)?
  var machine: OfflineStateMachine
  let engine: any AudioEngine
  let poller: StatusPoller
  public let client: LMSClient
  let store: CacheStore
  let downloads: DownloadManager
  let configuration: Configuration
  let eventLoop: any EventLoop
  let logger: Logger

  /// The server the cache keys belong to (kept while it is away).
  var serverIdentity: String?
  /// Tracks the cache's records were searched for, in vain, while the server was unknown: the
  /// records file is read once a track, not at every plan.
  var unrecordedURLs: Set<String> = []
  var resyncTimeout: Scheduled<Void>?
  var saveTask: AlignedTick?
  var lastSaved: SavedPlayback?
  var lastSavedAt: UInt64 = 0
  var lastSavedShape: SavedShape?
  var wasPlaying = false
  /// How long the server's next track is overdue (the starving rule of `ServerLiveness`).
  var nextTrackWait = NextTrackWait()
  var localVolumeSetting: Int?
  /// Keeps time with the other members of the LMS sync group it was made for.
  var groupSession: (group: SyncGroup, session: GroupSession)?
  /// The addresses LMS has for the group's members, by MAC; and the group they were read for.
  var groupAddresses: [String: String] = [:]
  /// LMS's audio delay for this player (`playDelay`, ms), read while it is in a group.
  var playDelayMilliseconds = 0
  var groupAddressesReadFor: SyncGroup?
  /// The host of the server a saved state names (the group's interface before the server is back).
  var savedServerHost: String?
  /// The engine track started where the group's leader was, and the leader's origin for it.
  var joinedTrack: (track: Int, origin: Int)?
  let groupLogger: Logger
  /// What the listener pinned (`OfflineCoordinator+Pins`).
  var pins = PinnedMusic()
  /// The listener's choice when the server returns (`OfflineCoordinator+Return`).
  public internal(set) var serverReturn = ServerReturn.free
  var returnProbe: AlignedTick?
  /// Keeps the SlimProto connection off the server (true) or lets it connect (false).
  public var holdServerConnection: (@Sendable (Bool) -> Void)?
  private var shuttingDown = false

  public init(
    engine: any AudioEngine, poller: StatusPoller, client: LMSClient, store: CacheStore, downloads: DownloadManager,
    configuration: Configuration, eventLoop: any EventLoop, logger: Logger, groupLogger: Logger? = nil
  ) {
    self.engine = engine
    self.poller = poller
    self.client = client
    self.store = store
    self.downloads = downloads
    self.configuration = configuration
    self.eventLoop = eventLoop
    self.logger = logger
    self.groupLogger = groupLogger ?? logger
    machine = OfflineStateMachine(player: client.playerID)
    engine.onEvent = { [unowned self] event in engineEvent(event) }
    poller.observe { [unowned self] status in
      var facts = facts()
      if let heard = facts.heard, describesTheTrackBefore(status, heard: heard) { facts.heard = nil }
      perform(machine.statusPolled(status, facts: facts))
      if machine.group != groupAddressesReadFor {
        groupAddressesReadFor = machine.group
        readGroupAddresses()
        readPlayDelay()
      }
    }
  }

  // MARK: PlaybackEngine (from the session)

  public var maximumSampleRate: Int { engine.maximumSampleRate }
  public var streamHealth: StreamHealth {
    var health = engine.streamHealth
    // Handing back, the player waits on the server's next track as it does online: a link lost
    // then must not leave the cached queue waiting until the output runs dry.
    switch machine.state {
    case .online, .handingBack: break
    default: return health
    }
    // Looked up only while the player waits on the server: this is asked twice a second.
    if health.stalledSeconds != nil, let source = engine.state().decoding, !source.fromCache,
      let track = machine.queueTrack(of: source.trackID)
    {
      health.cacheCanContinue = hasUsableCopy(track)
    } else if health.playingWithoutStream, let wait = nextTrackWait.overdue(now: MonotonicClock.nanoseconds()),
      let next = machine.queueTrack(after: wait.after)
    {
      health.waitingForNextTrackSeconds = wait.seconds
      health.cacheCanContinue = hasUsableCopy(next)
    }
    return health
  }

  public func handle(_ message: ServerMessage) {
    if case .stream(let command) = message, command.command != .status {
      logger.debug("strm \(command.command) \(command.autostart) value \(command.value) (\(machine.state))")
    }
    let groupKeepsTime = groupSession?.session.keepsTheGroupsTime() ?? false
    perform(machine.serverMessage(message, facts: facts(), groupKeepsTime: groupKeepsTime))
  }

  public func snapshot(at instant: UInt64) -> PlaybackSnapshot {
    var snapshot = engine.snapshot(at: instant)
    snapshot.elapsedMilliseconds = machine.reportedElapsedMilliseconds(
      engineMilliseconds: snapshot.elapsedMilliseconds, heardTrack: engine.heardPosition()?.trackID)
    return snapshot
  }

  public func serverConnectionChanged(_ isConnected: Bool) {
    guard !shuttingDown else { return }
    let facts = isConnected ? facts() : handoffFacts()
    perform(machine.connectionChanged(up: isConnected, facts: facts, isCached: hasUsableCopy))
  }

  /// The process is exiting: where playback is gets saved (to resume from after a restart
  /// without a server), polling and downloads stop; partial downloads stay resumable.
  public func shutDown() {
    engine.haltOutput()
    saveIfPlaying()
    shuttingDown = true
    groupSession?.session.stop()
    groupSession = nil
    poller.stop()
    downloads.setPlan([])
  }

  // MARK: The engine's events

  func engineEvent(_ event: EngineEvent) {
    switch event {
    case .status, .message:
      // What the engine says to the server is held back while the player is its own master.
      guard machine.forwardsReports() else { return }
    case .trackCreated(let id):
      machine.trackCreated(id)
    case .trackStarted(let id):
      nextTrackWait.trackStarted(id, at: MonotonicClock.nanoseconds())
      // The listener may change the delay at any time; LMS applies it as a group's track starts.
      readPlayDelay()
      perform(machine.trackStarted(id))
    case .trackDecoded(let id, let frames, let sampleRate):
      nextTrackWait.trackDecoded(id, at: MonotonicClock.nanoseconds())
      let cutShort = sampleRate.map { isCutShort(id, frames: frames, sampleRate: $0) } ?? false
      perform(machine.trackDecoded(id, cutShort: cutShort, isCached: hasUsableCopy))
    case .trackFailed(let id):
      perform(machine.trackFailed(id, isCached: hasUsableCopy))
    case .streamFailed(let id, let reason):
      logger.info("offline: stream of track \(id) ended early (\(reason))")
      perform(machine.streamFailed(id, isCached: hasUsableCopy))
    case .playbackEnded:
      if machine.state == .offline { logger.notice("offline: the cached queue has played out") }
    case .powerChanged, .streamRequested:
      break
    }
    onEvent?(event)
  }

  // MARK: Actions

  func perform(_ actions: [OfflineStateMachine.Action]) {
    for action in actions { perform(action) }
    if !shuttingDown {
      groupSessionFollowsState()
      followReturnChoice()
    }
  }

  private func perform(_ action: OfflineStateMachine.Action) {
    switch action {
    case .forward(let message):
      engine.handle(message)
    case .report(let event):
      onEvent?(.status(event))
    case .reportDecoderReadyLater(let milliseconds):
      eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(milliseconds))) { [self] in
        perform(machine.decoderReadyDue())
      }
    case .continueFromCache(let id, let track):
      guard let source = cachedSource(for: track), engine.continueTrack(id, from: source) else {
        logger.warning("offline: the cached copy of track \(track.index + 1) cannot be opened")
        return
      }
    case .playCached(let candidates):
      playFirstCached(candidates)
    case .abandonLiveStream:
      logger.warning("offline: the live stream stalled with the server away; giving up on it")
      engine.abandonLiveStream()
    case .startPolling:
      poller.start()
    case .stopPolling:
      poller.stop()
    case .pollSoon:
      poller.pollSoon()
    case .planDownloads:
      planDownloads()
    case .readStatusForResync(let index, let delay):
      eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(delay))) { [self] in readStatusForResync(index) }
    case .checkGroupStream(let check, let index):
      poller.fetch(from: index).hop(to: eventLoop).assumeIsolated().whenComplete { [self] result in
        switch result {
        case .failure(let error):
          perform(machine.resyncFailed("cannot read the server's status (\(error))"))
        case .success(let status):
          perform(machine.groupStreamChecked(status, check: check, facts: facts()))
        }
      }
    case .putQueueOnServer(let tracks):
      let ids = tracks.filter { $0.id > 0 }.map { String($0.id) }.joined(separator: ",")
      client.request(["playlist", "clear"]).flatMap { [client] _ in
        client.request(["playlistcontrol", "cmd:add", .string("track_id:" + ids)])
      }.whenComplete { [self] result in
        switch result {
        case .success: perform(machine.queuePutOnServer(facts: facts()))
        case .failure(let error): perform(machine.resyncFailed("the listener's queue was not taken: \(error)"))
        }
      }
    case .jump(let index, let seconds, let thenPause):
      jump(to: index, seconds: seconds, thenPause: thenPause)
    case .restartServerTrack(let index):
      _ = client.request(["playlist", "jump", .number(Double(index))])
    case .stopServer:
      _ = client.request(["stop"])
    case .pauseServer:
      client.request(["pause", "1"]).hop(to: eventLoop).assumeIsolated().whenFailure { [logger] error in
        logger.warning("resync: the server did not take the pause: \(error)")
      }
    case .stopLocal:
      engine.stopLocal()
    case .dropLocalTracks(let id):
      engine.dropTracks(after: id)
    case .armResyncTimeout(let wait):
      resyncTimeout?.cancel()
      let (delay, reason) =
        switch wait {
        case .serverStream: (configuration.resyncTimeout, "the server's stream did not start in time")
        case .groupMaster: (configuration.groupMasterTimeout, "the group's master did not resync the group in time")
        }
      resyncTimeout = eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
        perform(machine.resyncFailed(reason))
      }
    case .cancelResyncTimeout:
      resyncTimeout?.cancel()
      resyncTimeout = nil
    case .log(let level, let message):
      switch level {
      case .info: logger.info("\(message)")
      case .notice: logger.notice("\(message)")
      case .warning: logger.warning("\(message)")
      }
    }
  }

  private func playFirstCached(_ candidates: [QueueTrack]) {
    for track in candidates {
      guard let source = cachedSource(for: track), let id = engine.playLocal(source) else { continue }
      machine.localTrackQueued(id, queueIndex: track.index)
      logger.notice("offline: track \(track.index + 1) '\(track.title)' plays from the cache")
      return
    }
    logger.warning("offline: no cached track could be opened: playing out the buffer, then stopping")
  }

  private func readStatusForResync(_ index: Int) {
    guard machine.state == .offline || machine.state == .checkingServer, machine.isConnected else { return }
    // In a group, also which players the server has back: the resync waits for the others.
    let connected: EventLoopFuture<Set<String>?> =
      machine.groupPeers.isEmpty
      ? eventLoop.makeSucceededFuture(nil)
      : client.request(["players", 0, 100]).map { Optional(Self.connectedPlayers(in: $0)) }
    poller.fetch(from: index).and(connected).hop(to: eventLoop).assumeIsolated().whenComplete { [self] result in
      switch result {
      case .failure(let error):
        perform(machine.resyncFailed("cannot read the server's status (\(error))"))
      case .success(let (status, connected)):
        perform(machine.resyncStatusArrived(status, facts: facts(), connected: connected))
      }
    }
  }

  /// The MACs (lower case) of the players `players 0 N` shows connected.
  static func connectedPlayers(in result: JSONValue) -> Set<String> {
    let players = result["players_loop"]?.array ?? []
    return Set(
      players.compactMap { player in
        guard player["connected"]?.bool ?? false, let id = player["playerid"]?.string else { return nil }
        return id.lowercased()
      })
  }

  private func jump(to index: Int, seconds: Double, thenPause: Bool) {
    // Full precision: LMS adds the elapsed time reported to exactly this offset.
    let seek: JSONValue = ["timeOffset": .number(seconds)]
    var request = client.request(["playlist", "jump", .number(Double(index)), 0, 0, seek])
    if thenPause {
      request = request.flatMap { [client] _ in client.request(["pause", "1"]) }
    }
    request.hop(to: eventLoop).assumeIsolated().whenFailure { [self] error in
      perform(machine.resyncFailed("the server refused the jump: \(error)"))
    }
  }

  /// Called every second: a live stream that stalls while the server is away is given up on,
  /// so the cache can take over.
  func checkStalledStream() {
    guard machine.state == .disconnected, let stalled = engine.streamStalledSeconds,
      stalled >= configuration.streamStallSeconds
    else { return }
    perform(machine.liveStreamStalled())
  }
}
