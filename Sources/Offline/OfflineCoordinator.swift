import LMSControl
import Logging
import NIOCore
import Playback
import SlimConnection
import SlimProto

/// Sits between the protocol session and the streaming engine. Online it forwards everything
/// and follows the queue; when the server or the live stream fails it hands playback to the
/// cache at the exact next frame; when the server returns it brings LMS to where the player
/// really is (`playlist jump` with a time offset) and splices the server's stream back in.
///
/// online ──(connection lost)──► disconnected ──(stream fails / track decoded)──► offline
///    ▲                               │ (reconnect: LMS kept the stream)            │ reconnect
///    └───────────────────────────────┘◄──────────(STMs of the spliced stream)── resyncing
public final class OfflineCoordinator: PlaybackEngine, PlaybackReporter, PlaybackObserver, @unchecked Sendable {
  public enum State: Equatable, Sendable {
    case online
    /// The SlimProto connection is down; the live stream still plays from its buffers.
    case disconnected
    /// Playing from the cache.
    case offline
    /// Connected again: waiting for LMS's stream to take over at the splice.
    case resyncing
  }

  public struct Configuration: Sendable {
    public var prefetch: Int
    /// Buffered audio kept at a splice: the time LMS's stream has to arrive.
    public var spliceLeadMilliseconds: Int
    /// Where the playing state is saved every second (nil: not saved).
    public var savedPlaybackPath: String?
    /// With no server by then after start, a saved state resumes from the cache.
    public var resumeAfter: TimeAmount

    public init(
      prefetch: Int = 5, spliceLeadMilliseconds: Int = 500, savedPlaybackPath: String? = nil,
      resumeAfter: TimeAmount = .seconds(5)
    ) {
      self.prefetch = prefetch
      self.spliceLeadMilliseconds = spliceLeadMilliseconds
      self.savedPlaybackPath = savedPlaybackPath
      self.resumeAfter = resumeAfter
    }
  }

  public weak var reporter: (any PlaybackReporter)?
  /// Told first about every connection change (the runtime records the server there).
  public var connectionObserver: ((Bool) -> Void)?
  public internal(set) var state = State.online
  let engine: StreamingEngine
  let poller: StatusPoller
  let client: LMSClient
  let store: CacheStore
  let downloads: DownloadManager
  let configuration: Configuration
  let eventLoop: any EventLoop
  let logger: Logger

  /// The last queue view from the server (current track first).
  var queue: LMSStatus?
  /// Engine track id → queue index.
  var queueIndexOfTrack: [Int: Int] = [:]
  /// Local tracks: where in their track they started (a seek), for the position.
  var startFrameOfTrack: [Int: Int] = [:]
  var heardTrackID: Int?
  var splice: (point: SplicePoint, queueIndex: Int, trackID: Int?)?
  var resyncTimeout: Scheduled<Void>?
  var connected = false
  /// The server the cache keys belong to (kept while it is away).
  var serverIdentity: String?
  /// Seconds into their track at which server streams began (LMS seeks), by engine track id.
  var streamOffsetOfTrack: [Int: Double] = [:]
  var saveTask: RepeatedTask?
  var lastSaved: SavedPlayback?
  var localVolumeSetting: Int?
  private var shuttingDown = false

  public init(
    engine: StreamingEngine, poller: StatusPoller, client: LMSClient, store: CacheStore, downloads: DownloadManager,
    configuration: Configuration, eventLoop: any EventLoop, logger: Logger
  ) {
    self.engine = engine
    self.poller = poller
    self.client = client
    self.store = store
    self.downloads = downloads
    self.configuration = configuration
    self.eventLoop = eventLoop
    self.logger = logger
    engine.reporter = self
    engine.observer = self
    poller.observe { [unowned self] status in statusChanged(status) }
  }

  // MARK: PlaybackEngine (from the session)

  public var maximumSampleRate: Int { engine.maximumSampleRate }

  public func handle(_ message: ServerMessage) {
    if state == .resyncing, case .stream(let command) = message {
      switch command.command {
      case .stop, .flush:
        // LMS stops the old stream before the jump's new one: the audio that bridges the
        // splice must keep playing.
        reporter?.report(.flushed)
        return
      default:
        break
      }
    }
    if state == .offline, case .stream = message {
      // LMS still thinks it streams the old track; ignore it until the resync.
      return
    }
    engine.handle(message)
  }

  public func snapshot() -> PlaybackSnapshot {
    var snapshot = engine.snapshot()
    // Until the spliced stream is heard, LMS must not add the local track's time to the new
    // start offset.
    if state == .resyncing { snapshot.elapsedMilliseconds = 0 }
    return snapshot
  }

  public func serverConnectionChanged(_ isConnected: Bool) {
    connected = isConnected
    connectionObserver?(isConnected)
    guard !shuttingDown else { return }
    if isConnected {
      poller.start()
      switch state {
      case .disconnected:
        logger.notice("offline: server back while the live stream still played; nothing to resync")
        state = .online
      case .offline:
        // Give LMS a moment to process the HELO before asking it anything.
        eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(100)) { [self] in beginResync() }
      default:
        break
      }
    } else {
      poller.stop()
      if state == .online {
        state = .disconnected
        logger.warning("offline: connection to the server lost; playing what is buffered")
        if engine.streamingTrackID == nil, engine.isPlaying, let last = engine.lastDecodedTrack() {
          if !repairIfCutShort(last.id) { playNextCached(after: last.id) }
        }
      } else if state == .resyncing {
        abandonResync("connection lost again")
      }
    }
  }

  /// The player is stopping: a lost connection now is no reason to go offline.
  /// The process is exiting: where playback is gets saved (to resume from after a restart
  /// without a server), polling and downloads stop; partial downloads stay resumable.
  public func shutDown() {
    saveIfPlaying()
    shuttingDown = true
    poller.stop()
    downloads.setPlan([])
  }

  // MARK: PlaybackReporter (from the engine)

  public func report(_ event: StatusEvent, errorCode: UInt16) {
    guard state == .online || state == .resyncing else { return }
    reporter?.report(event, errorCode: errorCode)
  }

  public func send(_ message: PlayerMessage) {
    guard state == .online || state == .resyncing else { return }
    reporter?.send(message)
  }

  // MARK: PlaybackObserver

  public func trackCreated(_ id: Int) {
    if state == .resyncing, let splice {
      queueIndexOfTrack[id] = splice.queueIndex
      self.splice?.trackID = id
      return
    }
    // A stream sent while another track plays is its successor in the queue.
    if let last = lastQueuedTrackID, let index = queueIndexOfTrack[last], engine.isPlaying {
      queueIndexOfTrack[id] = index + 1
    } else if let current = queue?.currentIndex {
      queueIndexOfTrack[id] = current
    }
  }

  public func trackStarted(_ id: Int) {
    heardTrackID = id
    queueIndexOfTrack = queueIndexOfTrack.filter { $0.key >= id }
    if state == .resyncing, splice?.trackID == id {
      finishResync()
    }
    if state == .online { poller.pollSoon() }
    planDownloads()
  }

  public func trackDecoded(_ id: Int) {
    switch state {
    case .online, .resyncing:
      poller.pollSoon()
    case .disconnected, .offline:
      if !repairIfCutShort(id) { playNextCached(after: id) }
    }
  }

  public func trackFailed(_ id: Int) {
    if state == .offline || state == .disconnected {
      if !repairIfCutShort(id) { playNextCached(after: id) }
    }
  }

  /// LMS streams without a length, so a dying server looks like the end of the track. A track
  /// that ends well short of its duration while the server is away was cut: it continues from
  /// the cache at the exact next frame.
  private func repairIfCutShort(_ id: Int) -> Bool {
    guard let last = engine.lastDecodedTrack(), last.id == id, let rate = last.sampleRate,
      let index = queueIndexOfTrack[id], let track = queue?.tracks.first(where: { $0.index == index }),
      let duration = track.duration
    else { return false }
    let expected = Int(duration * Double(rate))
    guard last.frames + rate / 10 < expected else { return false }
    guard let source = cachedSource(for: track) else {
      logger.warning("offline: track \(index + 1) was cut short and is not cached")
      return false
    }
    guard engine.continueTrack(id, from: source) else { return false }
    logger.notice(
      "offline: track \(index + 1) was cut at \(Double(last.frames) / Double(rate)) s; it continues from the cache")
    state = .offline
    return true
  }

  public func streamFailed(_ id: Int, reason: DisconnectReason) {
    guard state != .resyncing else { return }
    guard let index = queueIndexOfTrack[id], let track = queue?.tracks.first(where: { $0.index == index }),
      let source = cachedSource(for: track)
    else {
      logger.warning("offline: stream failed (\(reason)) and the track is not cached: playing out the buffer")
      if state == .online { return }
      state = .offline
      return
    }
    if engine.continueTrack(id, from: source) {
      logger.notice("offline: stream failed (\(reason)); track \(index + 1) continues from the cache")
      state = .offline
      if connected { scheduleResyncIfConnected() }
    }
  }

  public func playbackEnded() {
    if state == .offline { logger.notice("offline: the cached queue has played out") }
  }

  // MARK: Queue and cache plan

  private var lastQueuedTrackID: Int? { queueIndexOfTrack.keys.max() }

  private func statusChanged(_ status: LMSStatus) {
    guard state == .online else { return }
    if let previous = queue, previous.playlistTimestamp != status.playlistTimestamp {
      logger.info("queue changed on the server")
    }
    queue = status
    // The track being heard is the server's current one.
    if status.mode == .play, let heard = heardTrackID, let current = status.currentIndex {
      // A stream that began after a seek: LMS's time runs ahead of what the engine counts.
      if let position = engine.heardPosition(), position.trackID == heard {
        let offset = status.time - Double(position.milliseconds) / 1000
        streamOffsetOfTrack[heard] = offset > 0.5 ? offset : 0
      }
      let shift = current - (queueIndexOfTrack[heard] ?? current)
      if shift != 0 {
        for key in queueIndexOfTrack.keys { queueIndexOfTrack[key]! += shift }
      }
      queueIndexOfTrack[heard] = current
    }
    planDownloads()
  }

  func key(for track: QueueTrack) -> CacheKey? {
    if let endpoint = client.endpoint { serverIdentity = endpoint.identity }
    guard let serverIdentity else { return nil }
    return CacheKey(server: serverIdentity, url: track.url, fileSize: track.fileSize)
  }

  func planDownloads() {
    guard let queue else { return }
    let wanted = queue.tracks.filter { $0.index >= (queue.currentIndex ?? 0) }.prefix(configuration.prefetch + 1)
    let plan = wanted.compactMap { track -> PlannedDownload? in
      guard track.isDownloadable, CacheVerifier.codec(forType: track.type) != nil, let key = key(for: track) else {
        return nil
      }
      return PlannedDownload(key: key, track: track)
    }
    downloads.setPlan(plan)
  }

  func cachedSource(for track: QueueTrack) -> LocalSource? {
    guard let key = key(for: track), let codec = CacheVerifier.codec(forType: track.type),
      store.entry(key) != nil, store.verify(key), let path = store.lookUp(key)
    else { return nil }
    return LocalSource(path: path, codec: codec)
  }

  /// Starts the next cached track after engine track `id` (gapless when the output still plays).
  func playNextCached(after id: Int?) {
    guard let queue, let id, let index = queueIndexOfTrack[id] else {
      logger.warning("offline: no queue known: playing out the buffer, then stopping")
      return
    }
    for track in queue.tracks where track.index > index {
      guard let source = cachedSource(for: track) else {
        logger.warning("offline: track \(track.index + 1) '\(track.title)' is not cached: skipped")
        continue
      }
      guard let newID = engine.playLocal(source) else { continue }
      queueIndexOfTrack[newID] = track.index
      if state != .offline {
        logger.notice("offline: playing from the cache from track \(track.index + 1) '\(track.title)'")
      }
      state = .offline
      return
    }
    logger.warning("offline: nothing more is cached: playing out the buffer, then stopping")
    state = .offline
  }
}
