import LMSControl
import SlimProto

/// Server messages while offline and resyncing, the resync itself, and the elapsed time LMS is
/// told while its stream of the heard track is adopted.
extension OfflineStateMachine {
  // MARK: Server messages

  /// `groupKeepsTime`: the group's clock keeps this player's group in time (`GroupClock.keepsTheGroupsTime`).
  public mutating func serverMessage(_ message: ServerMessage, facts: EngineFacts, groupKeepsTime: Bool = false)
    -> [Action]
  {
    guard case .stream(let command) = message else { return [.forward(message)] }
    switch state {
    case .online:
      if groupKeepsTime, let moved = command.syncAdjustmentMilliseconds {
        return takeServerView(moved, of: message)
      }
      return [.forward(message)]
    case .disconnected:
      return [.forward(message)]
    case .offline, .checkingServer:
      // LMS still believes it streams what it streamed before the outage (or, restarted, stops
      // a player it does not know): the resync decides. In a group, the master's jump may bring
      // the group's stream before this member has read who the master is: kept for it.
      if isConnected, !groupPeers.isEmpty, command.command == .start { pendingGroupStream = command }
      return []
    case .resyncing(let resync), .followingGroup(let resync), .checkingGroupStream(let resync, _, _):
      switch command.command {
      case .stop, .flush:
        // LMS stops its old stream before the jump's new one: nothing local stops.
        if resync.followsGroup { state = .followingGroup(resync) }
        return [.report(.flushed)]
      case .start where resync.followsGroup:
        return checkGroupStream(resync, command)
      case .start:
        return adopt(resync, command: command, facts: facts)
      default:
        return [.forward(message)]
      }
    case .handingBack(let resync):
      switch command.command {
      case .stop where resync.awaitingStart, .flush where resync.awaitingStart:
        // Before the group's start nothing of the adopted stream is heard: LMS restarting the
        // group (a member back, the master's jump) replaces it, and is not the user's.
        return [.report(.flushed)]
      case .start where resync.awaitingStart && resync.followsGroup:
        return checkGroupStream(resync, command)
      case .start where resync.awaitingStart:
        return adopt(resync, command: command, facts: facts)
      case .unpause where resync.awaitingStart && facts.output.hasAudio:
        // A group starts its members together (`strm u` once every one has sent STMl); this member
        // already plays the heard track from its cache, in step with the others. A player paused
        // before the outage stays paused: its resync asked the server to pause after the jump, and
        // LMS 8.3 can start the adopted stream first (its pause lands after a fade, 0.35 s later).
        var started = resync
        started.awaitingStart = false
        var actions: [Action] = [.report(.resumed), .report(.trackStarted)]
        if !started.decoderReadyReported, !isReading(started.engineTrack, facts) {
          // LMS takes STMd only once it plays: one sent while it waited for the start was lost. It
          // fetches the next track at the first member's STMd, and takes a master's STMs that comes
          // after that for the next track's start (LMS 7.9.1 seen: the group shown a track behind,
          // the track after never streamed). Every member's STMs leaves now; STMd a moment later.
          actions.append(.reportAfterGroupStart(afterMilliseconds: Self.decoderReadyAfterGroupStartMilliseconds))
        }
        state = .handingBack(started)
        return actions
      case .stop, .flush:
        state = .online
        return [.forward(message), .log(.notice, "resync: the server stopped or moved playback; following it")]
      case .start where !resync.decoderReadyReported:
        state = .online
        return [.forward(message), .log(.notice, "resync: the server moved playback; following it")]
      default:
        return [.forward(message)]
      }
    }
  }

  /// How long after a group's start the adopted stream's STMd leaves: long after every member's
  /// STMs reached the server, well before the heard track ends (a resync waits past a track that
  /// ends within `groupTrackEndMargin`).
  static let decoderReadyAfterGroupStartMilliseconds = 500

  /// The moment after a group's start has passed: the adopted stream's STMd leaves, unless the
  /// server has moved on meanwhile.
  public mutating func groupStartReported() -> [Action] {
    guard case .handingBack(var resync) = state, !resync.awaitingStart, !resync.decoderReadyReported else { return [] }
    resync.decoderReadyReported = true
    state = .handingBack(resync)
    return [.report(.decoderReady)]
  }

  /// A stream came for this member's group: LMS streams to the whole group whenever it restarts
  /// it (its own restart when a member returns is for the track it last knew), so only a stream
  /// the server's status, read after it came, shows for the heard entry is the master's resync.
  private mutating func checkGroupStream(_ resync: Resync, _ command: StreamCommand) -> [Action] {
    groupStreamChecks += 1
    state = .checkingGroupStream(resync, stream: command, check: groupStreamChecks)
    return [
      .armResyncTimeout(.groupMaster),
      .checkGroupStream(check: groupStreamChecks, fromIndex: resync.queueIndex),
    ]
  }

  /// The server's status, read after a group's stream came: adopted when it is for the heard entry.
  public mutating func groupStreamChecked(_ status: LMSStatus, check: Int, facts: EngineFacts) -> [Action] {
    guard case .checkingGroupStream(var resync, let stream, let latest) = state, check == latest else { return [] }
    // The master asks for what it hears when it asks: by now this member may have gone on into the
    // next track with it.
    if let heard = facts.heard, let placement = ledger.placement(of: heard.engineTrack) {
      resync.engineTrack = heard.engineTrack
      resync.queueIndex = placement.queueIndex
    }
    guard status.currentIndex == resync.queueIndex else {
      state = .followingGroup(resync)
      let streamed = status.currentIndex.map { "track \($0 + 1)" } ?? "no track"
      return [
        .log(
          .notice,
          "resync: the group's stream is for \(streamed), not the heard track \(resync.queueIndex + 1); "
            + "waiting for the master's")
      ]
    }
    return adopt(resync, command: stream, facts: facts)
  }

  /// LMS adjusted this player to keep its group in time while the group's clock already does: the
  /// adjustment is its view of the player (each member measured by its own reports' timestamps), so
  /// the player is shown to it where it wants it instead. Both moving it would set the two against
  /// each other: LMS skips a member the clock holds in step, the clock takes the skip back, LMS skips
  /// it again.
  private mutating func takeServerView(_ moved: Int, of message: ServerMessage) -> [Action] {
    let view = serverViewMilliseconds + moved
    guard abs(view) <= Self.serverViewLimitMilliseconds else {
      serverViewMilliseconds = 0
      return [
        .forward(message),
        .log(.warning, "sync: the server sees this player \(view) ms from the group's time; its adjustment is played"),
      ]
    }
    serverViewMilliseconds = view
    return [
      .log(
        .info,
        "sync: the server would move this player \(moved) ms; the group's clock keeps it in time, so the "
          + "server is shown it \(view) ms further on instead")
    ]
  }

  /// The server's stream for the heard track arrived: adopted, not played; the cached copy plays on.
  /// A stream that starts on its own is reported started at once (and STMd, when the cached copy
  /// has been read to its end); one LMS starts itself (a sync group's, `strm u` once every member
  /// has sent STMl) is reported loaded now, and started when LMS starts it.
  private mutating func adopt(_ resync: Resync, command: StreamCommand, facts: EngineFacts) -> [Action] {
    var resync = resync
    var actions: [Action] = [.cancelResyncTimeout, .report(.connecting)]
    if resync.requestedSeconds == nil {
      // A member that followed its master kept its cached tracks queued until the group's stream came.
      actions.append(dropLocalTracks(after: resync.engineTrack))
    }
    if command.autostart.startsAutomatically {
      actions.append(.report(.trackStarted))
      if !isReading(resync.engineTrack, facts) {
        resync.decoderReadyReported = true
        actions.append(.report(.decoderReady))
      }
    } else {
      resync.awaitingStart = true
      actions.append(.report(.bufferLoaded))
    }
    let whose = resync.requestedSeconds == nil ? "the group's stream" : "the server"
    state = .handingBack(resync)
    return actions + [
      .log(
        .notice,
        "resync: \(whose) plays track \(resync.queueIndex + 1) again; the cached copy plays to its end, "
          + "then the server's stream takes over")
    ]
  }

  /// The cached tracks queued behind `engineTrack` go, from the engine and from the ledger: the
  /// server's stream that follows is placed after `engineTrack`, not after them.
  mutating func dropLocalTracks(after engineTrack: Int) -> Action {
    ledger.forgetTracks(after: engineTrack)
    return .dropLocalTracks(after: engineTrack)
  }

  /// Whether the decoder still reads engine track `track` (its cached copy or its live stream).
  private func isReading(_ track: Int, _ facts: EngineFacts) -> Bool {
    facts.decoding == .localFile(track: track) || facts.decoding == .liveStream(track: track)
  }

  /// The elapsed time to report in a STAT: LMS adds it to the offset it was asked for.
  public func reportedElapsedMilliseconds(engineMilliseconds: UInt32, heardTrack: Int?) -> UInt32 {
    switch state {
    case .resyncing, .followingGroup, .checkingGroupStream:
      return 0
    case .handingBack(let resync) where heardTrack == resync.engineTrack:
      guard let requested = resync.requestedSeconds else { return 0 }
      let start = ledger.placement(of: resync.engineTrack)?.startSeconds ?? 0
      let heard = start * 1000 + Double(engineMilliseconds) + Double(serverViewMilliseconds)
      return UInt32(max(0, (heard - requested * 1000).rounded()))
    default:
      // Nothing heard yet is reported as such, whatever LMS's view.
      guard engineMilliseconds > 0 else { return 0 }
      return UInt32(clamping: max(0, Int(engineMilliseconds) + serverViewMilliseconds))
    }
  }

  // MARK: Queue

  /// A status from the poller (published only when it changed).
  public mutating func statusPolled(_ status: LMSStatus, facts: EngineFacts) -> [Action] {
    switch state {
    case .online, .handingBack: break
    default: return []
    }
    var actions: [Action] = []
    if let known = ledger.latest?.playlistTimestamp, known != status.playlistTimestamp {
      actions.append(.log(.info, "queue changed on the server"))
    }
    ledger.record(status)
    group = status.syncGroup
    if status.mode == .play, let heard = facts.heard, let current = status.currentIndex {
      ledger.correct(heard.engineTrack, to: current)
      // A stream that began after a seek: the server's time runs ahead of what the engine counts.
      if case .online = state {
        let offset = status.time - heard.seconds
        ledger.setStartSeconds(offset > 0.5 ? offset : 0, of: heard.engineTrack)
      }
    }
    return actions + [.planDownloads]
  }

  // MARK: Resync

  mutating func resyncSoon(afterMilliseconds delay: Int, facts: EngineFacts) -> [Action] {
    guard let heard = facts.heard, let placement = ledger.placement(of: heard.engineTrack) else {
      return [.readStatusForResync(fromIndex: ledger.latest?.currentIndex ?? 0, afterMilliseconds: delay)]
    }
    return [.readStatusForResync(fromIndex: placement.queueIndex, afterMilliseconds: delay)]
  }

  /// The server's queue, read after the reconnect: bring the server to what is heard. In a sync
  /// group, `connected` are the players the server has back (nil: not read).
  public mutating func resyncStatusArrived(
    _ status: LMSStatus, facts: EngineFacts, connected: Set<String>? = nil
  ) -> [Action] {
    guard state == .offline || state == .checkingServer, isConnected else { return [] }
    resyncFailures = 0
    if state == .checkingServer, facts.output.hasAudio, let heard = facts.heard, status.mode == .play,
      let current = status.currentIndex, ledger.placement(of: heard.engineTrack)?.queueIndex == current,
      ledger.compare(with: status) == .same
    {
      ledger.record(status)
      state = .online
      return [.log(.notice, "offline: the server still plays track \(current + 1); nothing to resync"), .planDownloads]
    }
    if let wait = waitForGroup(status, facts: facts, connected: connected) { return wait }
    state = .offline
    guard let heard = facts.heard, facts.output.hasAudio,
      let placement = ledger.placement(of: heard.engineTrack), let track = ledger.track(at: placement.queueIndex)
    else {
      state = .online
      return serverTakesOver(status) + [.planDownloads]
    }
    var index = placement.queueIndex
    var actions: [Action] = []
    if case .edited(let why) = ledger.compare(with: status) {
      ledger.record(status)
      guard let moved = status.tracks.first(where: { $0.identity == track.identity }) else {
        ledger.forgetAllTracks()
        state = .online
        actions += [
          .log(.notice, "resync: the queue was edited on the server while offline (\(why)): following the server"),
          .stopLocal,
        ]
        if status.mode == .play, let current = status.currentIndex {
          actions.append(.restartServerTrack(queueIndex: current))
        }
        return actions + [.planDownloads]
      }
      ledger.correct(heard.engineTrack, to: moved.index)
      index = moved.index
      actions.append(
        .log(
          .notice,
          "resync: the queue was edited on the server while offline (\(why)); the heard track is now \(index + 1)"))
    } else {
      ledger.record(status)
    }
    if let master = groupMaster(in: status) {
      let resync = Resync(engineTrack: heard.engineTrack, queueIndex: index, requestedSeconds: nil)
      state = .followingGroup(resync)
      actions.append(
        .log(.notice, "resync: the group's master \(master) resyncs the server for the group; following it"))
      if let stream = pendingGroupStream {
        pendingGroupStream = nil
        return actions + checkGroupStream(resync, stream)
      }
      return actions + [.armResyncTimeout(.groupMaster)]
    }
    let heardSeconds = placement.startSeconds + heard.seconds
    if let wait = waitForTheNextTrack(track, index: index, heardSeconds: heardSeconds, facts: facts) {
      return actions + wait
    }
    // LMS skips a track when asked for a time past its end.
    let latest = max(0, (track.duration ?? .infinity) - 0.5)
    let requested = (min(heardSeconds, latest) * 1000).rounded(.down) / 1000
    state = .resyncing(Resync(engineTrack: heard.engineTrack, queueIndex: index, requestedSeconds: requested))
    return actions + [
      dropLocalTracks(after: heard.engineTrack),
      .log(.notice, "resync: asking the server to play track \(index + 1) from \(requested) s"),
      .jump(queueIndex: index, seconds: requested, thenPause: facts.output == .paused),
      .armResyncTimeout(.serverStream),
    ]
  }

  /// Nothing plays locally. When the cache ran out while the server still says it plays, the
  /// server goes on from where the local play stopped; otherwise it is followed as it is.
  private mutating func serverTakesOver(_ status: LMSStatus) -> [Action] {
    defer { playedOut = nil }
    let edited = ledger.compare(with: status) != .same
    let before = ledger
    ledger.record(status)
    guard let playedOut, status.mode == .play else {
      return [.log(.notice, "resync: nothing is playing locally; the server takes over as it is")]
    }
    if let master = groupMaster(in: status) {
      return [.log(.notice, "resync: the cache ran out; the group's master \(master) moves the server on")]
    }
    let (lastIndex, again) =
      switch playedOut {
      case .after(let index): (index, false)
      case .cutShort(let index): (index, true)
      }
    var index = lastIndex
    if edited {
      guard let last = before.track(at: lastIndex),
        let moved = status.tracks.first(where: { $0.identity == last.identity })
      else {
        return [
          .log(
            .notice,
            "resync: the cache ran out and the queue was edited on the server while offline: following the server")
        ]
      }
      index = moved.index
    }
    let next = again ? index : ledger.successor(of: index)
    if let count = ledger.trackCount, next >= count {
      return [
        .log(.notice, "resync: the queue was played to its end while offline; stopping the server's playback"),
        .stopServer,
      ]
    }
    let why = again ? "track \(index + 1) was cut short offline" : "the cache ran out after track \(index + 1)"
    return [
      .log(.notice, "resync: \(why); asking the server to play track \(next + 1)"),
      .restartServerTrack(queueIndex: next),
    ]
  }

  /// In a group, the resync waits until the members the server had before the outage are back
  /// (a member that returns later makes LMS restart the whole group), for at most 5 s.
  private mutating func waitForGroup(_ status: LMSStatus, facts: EngineFacts, connected: Set<String>?) -> [Action]? {
    guard let connected, facts.output.hasAudio, !groupMasterFailed else { return nil }
    let missing = groupPeers.filter { !connected.contains($0) }
    guard !missing.isEmpty, groupWaits < Self.groupWaitLimit else {
      groupWaits = 0
      return nil
    }
    groupWaits += 1
    let index = facts.heard.flatMap { ledger.placement(of: $0.engineTrack)?.queueIndex } ?? status.currentIndex ?? 0
    var actions: [Action] = []
    if groupWaits == 1 {
      actions.append(.log(.info, "resync: waiting for the group's other members (\(missing.joined(separator: ", ")))"))
    } else if groupWaits == Self.groupWaitLimit {
      actions.append(.log(.warning, "resync: \(missing.joined(separator: ", ")) not back; resyncing without them"))
    }
    return actions + [.readStatusForResync(fromIndex: index, afterMilliseconds: Self.groupWaitMilliseconds)]
  }

  /// A group's master with under `groupTrackEndMargin` seconds of the heard track left, and the
  /// next cached track queued behind it, resyncs once that one plays: the jump's stream of a
  /// track's last second ends before the group has started it (LMS then played the group on with a
  /// gap and, its current entry one behind, never streamed the next). A player on its own jumps at
  /// once: its stream starts by itself, and LMS shows it sooner.
  private func waitForTheNextTrack(_ track: QueueTrack, index: Int, heardSeconds: Double, facts: EngineFacts)
    -> [Action]?
  {
    let remaining = max(0, (track.duration ?? .infinity) - heardSeconds)
    guard !groupPeers.isEmpty, remaining < Self.groupTrackEndMargin, facts.output == .playing,
      let heard = facts.heard, let last = ledger.lastPlacedTrack, last > heard.engineTrack
    else { return nil }
    let wait = Int((remaining * 1000).rounded(.up)) + Self.groupTrackEndSettleMilliseconds
    return [
      .log(
        .notice,
        "resync: track \(index + 1) ends in \((remaining * 10).rounded() / 10) s; the group is resynced "
          + "once the next one plays"),
      .readStatusForResync(fromIndex: index, afterMilliseconds: wait),
    ]
  }

  static let groupTrackEndMargin = 3.0
  static let groupTrackEndSettleMilliseconds = 250
  static let groupWaitMilliseconds = 250
  static let groupWaitLimit = 20

  /// The master the server shows for this player's group, when it is another player: it resyncs.
  private func groupMaster(in status: LMSStatus) -> String? {
    guard !groupMasterFailed, let group = status.syncGroup, group.contains(player), group.master != player
    else { return nil }
    return group.master
  }

  /// The status could not be read, the jump was refused, or no stream came in time.
  public mutating func resyncFailed(_ reason: String) -> [Action] {
    let index: Int
    switch state {
    case .followingGroup(let resync), .checkingGroupStream(let resync, _, _):
      // The master never resynced the group: this member does, as a player on its own would.
      groupMasterFailed = true
      index = resync.queueIndex
    case .resyncing(let resync): index = resync.queueIndex
    case .offline where isConnected, .checkingServer: index = ledger.latest?.currentIndex ?? 0
    default: return []
    }
    state = .offline
    resyncFailures += 1
    let delay = min(5000, 250 << min(resyncFailures, 5))
    return [
      .cancelResyncTimeout, .log(.warning, "resync: \(reason); playing on from the cache, trying again"),
      .readStatusForResync(fromIndex: index, afterMilliseconds: delay),
    ]
  }

}
