import LMSControl
import NIOCore
import Playback
import SlimConnection
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// Saving the playing state, resuming it at start without a server, and local control while
/// offline (play, pause, next, previous, seek, volume).
extension OfflineCoordinator {
  /// Starts saving the playing state (see `saveState`) and, when no server answers soon after start,
  /// resumes a saved state from the cache.
  public func start() {
    eventLoop.preconditionInEventLoop()
    loadPins()
    let path = configuration.savedPlaybackPath
    if let path { _ = FileIO.makeDirectories(FileIO.directoryName(of: path)) }
    let saved = path.flatMap(SavedPlayback.load(from:))
    saveTask = AlignedTick(on: eventLoop, every: .seconds(1)) { [weak self] in
      guard let self else { return }
      // The second it stops playing, where it stopped is saved.
      let playing = engine.isPlaying
      if playing || wasPlaying { saveState(now: !playing) }
      wasPlaying = playing
      checkStalledStream()
    }
    guard let saved else { return }
    if let group = saved.group, group.contains(machine.player) {
      savedServerHost = saved.server.split(separator: ":").first.map(String.init)
      groupAddresses = saved.groupAddresses
      playDelayMilliseconds = saved.playDelayMilliseconds
      machine.rememberGroup(group)
      groupSessionFollowsState()
      joinWhenTheGroupIsHeard(saved, checks: 0)
    }
    eventLoop.assumeIsolated().scheduleTask(in: configuration.resumeAfter) { [self] in
      guard !machine.isConnected, machine.state == .online, !engine.isPlaying else { return }
      resume(saved)
    }
  }

  /// The queue index and seconds into the track being heard.
  public func heardQueuePosition() -> (index: Int, seconds: Double, sampleRate: Int)? {
    guard let heard = engine.heardPosition(), let placement = machine.ledger.placement(of: heard.trackID) else {
      return nil
    }
    // Exact frames, not the rounded milliseconds: a saved position must not be past what was heard.
    let seconds = Double(heard.frames) / Double(max(1, heard.sampleRate))
    return (placement.queueIndex, placement.startSeconds + seconds, heard.sampleRate)
  }

  /// At shutdown: where it plays, at once and to disk.
  func saveIfPlaying() {
    if engine.isPlaying { saveState(now: true) }
  }

  /// Saves where playback is when it changed: a new track or queue at once; only a later position
  /// at most every `positionSaveInterval`. Neither waits for the disk: the file is replaced whole
  /// (a crashed process leaves the old copy or the new one), and a sync here would hold up the
  /// control loop, and with it the server's messages, for as long as a busy disk or an SD card
  /// takes. `now` (playback stopped, or the player shutting down) saves any change at once, to disk.
  func saveState(now: Bool) {
    guard let path = configuration.savedPlaybackPath, let serverIdentity,
      let position = heardQueuePosition()
    else { return }
    let ledger = machine.ledger
    let clock = MonotonicClock.nanoseconds()
    // Most seconds only the position moved, and that is saved at most every interval: known
    // without building the state to compare.
    let shape = SavedShape(
      server: serverIdentity, playlistTimestamp: ledger.latest?.playlistTimestamp, index: position.index,
      sampleRate: position.sampleRate, ledgerRevision: ledger.revision, listenerEdits: machine.listenerEdits)
    if !now, shape == lastSavedShape, clock - lastSavedAt < Self.positionSaveInterval { return }
    let group = machine.group.flatMap { $0.contains(machine.player) ? $0 : nil }
    // The server's queue is saved from the heard track on (it may be long, and the server keeps it);
    // the listener's whole, being the player's own.
    let owner: SavedPlayback.QueueOwner =
      machine.serverQueueBeforeListenersEdits.map { before in
        .listener(
          serverQueue: before.latest.map {
            SavedPlayback.Queue(
              tracks: before.tracks, current: $0.currentIndex ?? 0, trackCount: before.trackCount,
              playlistTimestamp: $0.playlistTimestamp)
          })
      } ?? .server
    let saved = SavedPlayback(
      server: serverIdentity, playlistTimestamp: ledger.latest?.playlistTimestamp, index: position.index,
      position: position.seconds, sampleRate: position.sampleRate, trackCount: ledger.trackCount,
      queue: owner == .server ? ledger.tracks.filter { $0.index >= position.index } : ledger.tracks, group: group,
      groupAddresses: group == nil ? [:] : groupAddresses,
      playDelayMilliseconds: group == nil ? 0 : playDelayMilliseconds, owner: owner)
    guard saved != lastSaved else { return }
    let onlyMoved = !now && lastSaved.map(saved.differsOnlyInPosition(from:)) == true
    if onlyMoved, clock - lastSavedAt < Self.positionSaveInterval { return }
    do {
      try saved.save(to: path, durable: now)
      lastSaved = saved
      lastSavedShape = shape
      lastSavedAt = clock
    } catch {
      logger.error("offline: cannot save the playing state: \(error)")
    }
  }

  /// Nanoseconds between saves of a position that only moved on.
  static let positionSaveInterval: UInt64 = 15_000_000_000

  /// What a saved state holds besides the position.
  struct SavedShape: Equatable {
    var server: String
    var playlistTimestamp: Double?
    var index: Int
    var sampleRate: Int
    var ledgerRevision: Int
    var listenerEdits: Int
  }

  private func resume(_ saved: SavedPlayback) {
    serverIdentity = saved.server
    let ledger = QueueLedger.restored(
      queue: saved.queue, current: saved.index, trackCount: saved.trackCount,
      playlistTimestamp: saved.playlistTimestamp, time: saved.position)
    switch saved.owner {
    case .server:
      machine.resumeSaved(ledger)
    case .listener(let before):
      let serverQueue = before.map {
        QueueLedger.restored(
          queue: $0.tracks, current: $0.current, trackCount: $0.trackCount, playlistTimestamp: $0.playlistTimestamp,
          time: 0)
      }
      machine.resumeListenersQueue(ledger, serverQueueBefore: serverQueue ?? QueueLedger())
    }
    guard let track = saved.queue.first(where: { $0.index == saved.index }) else { return }
    let whose = saved.owner == .server ? "" : " of the listener's queue"
    logger.notice(
      "offline: no server; resuming track \(saved.index + 1)\(whose) '\(track.title)' at \(saved.position) s")
    playLocal(track, seconds: saved.position, sampleRate: saved.sampleRate)
    followReturnChoice()
  }

  /// A member restarted while the server is away starts where its group's leader is, as soon as
  /// it hears it play (a lone player waits `resumeAfter` for its server; a group that plays says
  /// the server is away). Checked every 250 ms until then.
  private func joinWhenTheGroupIsHeard(_ saved: SavedPlayback, checks: Int) {
    guard checks < 40, !machine.isConnected, machine.state == .online, !engine.isPlaying,
      let session = groupSession?.session
    else { return }
    // The cache's keys belong to the server the state was saved from.
    if serverIdentity == nil { serverIdentity = saved.server }
    guard let point = session.leaderPlayPoint(at: MonotonicClock.nanoseconds()),
      let track = saved.queue.first(where: {
        $0.index == Int(point.queueIndex) && Int32(truncatingIfNeeded: $0.id) == point.trackID
      }),
      hasUsableCopy(track)
    else {
      eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(250)) { [self] in
        joinWhenTheGroupIsHeard(saved, checks: checks + 1)
      }
      return
    }
    // The leader's point is where it would be without its audio delay; this member plays its own
    // that much earlier.
    let ownDelay = UInt64(max(0, playDelayFrames(sampleRate: Int(point.sampleRate))))
    let seconds = Double(point.trackStart + point.frame + ownDelay) / Double(point.sampleRate)
    var joined = saved
    joined.index = track.index
    joined.position = seconds
    joined.sampleRate = Int(point.sampleRate)
    groupLogger.notice("no server; joining the group at track \(track.index + 1), \(seconds) s")
    resume(joined)
    if let id = machine.ledger.lastPlacedTrack { joinedTrack = (id, Int(point.trackStart)) }
    session.beginJoining()
  }

  /// Starts `track` from the cache at `seconds` (dropping what plays now).
  @discardableResult
  func playLocal(_ track: QueueTrack, seconds: Double, sampleRate: Int) -> Bool {
    guard let source = cachedSource(for: track) else {
      logger.warning("offline: track \(track.index + 1) '\(track.title)' is not cached")
      return false
    }
    engine.stopLocal()
    machine.localRestart()
    let startFrame = max(0, Int((seconds * Double(sampleRate)).rounded()))
    guard let id = engine.playLocal(source, startFrame: startFrame) else { return false }
    machine.localTrackQueued(id, queueIndex: track.index, startSeconds: Double(startFrame) / Double(sampleRate))
    return true
  }

  // MARK: Local control (offline only; online, control goes through LMS)

  public var isOffline: Bool { machine.state == .offline }

  /// Where the offline decisions stand (the control API routes commands by it).
  public var offlineState: OfflineStateMachine.State { machine.state }

  /// The last queue view (from LMS, or the saved one when resumed offline).
  public var queueSnapshot: LMSStatus? { machine.ledger.latest }

  public var isPlaying: Bool { engine.isPlaying }

  /// 0…100: LMS's volume online, the local one once set offline.
  public var volumePercent: Int? {
    let server = machine.ledger.latest?.volume
    return isOffline ? localVolumeSetting ?? server : server
  }

  /// Whether a complete, indexed copy of `track` is in the cache.
  public func isCached(_ track: QueueTrack) -> Bool {
    key(for: track).map { store.entry($0) != nil } ?? false
  }

  public func localPause() {
    guard isOffline else { return }
    engine.pauseLocal()
  }

  public func localResume() {
    guard isOffline else { return }
    engine.resumeLocal()
  }

  /// `by` +1 = next, -1 = previous; a track that is not cached is skipped over.
  public func localSkip(by step: Int) {
    guard isOffline, let position = heardQueuePosition() else { return }
    var index = position.index + step
    if step < 0, position.seconds > 3 { index = position.index }  // as players do: restart first
    while let track = machine.ledger.track(at: index) {
      if playLocal(track, seconds: 0, sampleRate: position.sampleRate) { return }
      index += step < 0 ? -1 : 1
    }
    logger.notice("offline: no cached track to skip to")
  }

  public func localSeek(to seconds: Double) {
    guard isOffline, let position = heardQueuePosition(), let track = machine.ledger.track(at: position.index)
    else { return }
    playLocal(track, seconds: max(0, seconds), sampleRate: position.sampleRate)
  }

  /// 0…100 on LMS's scale, mapped to a 50 dB range (0 mutes).
  public func localVolume(_ percent: Int) {
    let clamped = min(100, max(0, percent))
    localVolumeSetting = clamped
    let gain: UInt32
    if clamped == 0 {
      gain = 0
    } else {
      let decibels = Double(clamped - 100) * 0.5
      gain = UInt32((Double(0x10000) * pow(10, decibels / 20)).rounded())
    }
    engine.setVolume(left: gain, right: gain)
  }
}
