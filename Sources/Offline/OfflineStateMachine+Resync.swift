import LMSControl
import SlimProto

/// Server messages while offline and resyncing, the resync itself, and the elapsed time LMS is
/// told while its stream of the heard track is adopted.
extension OfflineStateMachine {
  /// How long an adopted stream's STMd waits while another jump asked has not streamed: the stop
  /// and stream of a jump carried out late come in one burst with the earlier one's.
  static let decoderReadyAfterEarlierJumpMilliseconds = 2000

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
          actions.append(.reportDecoderReadyLater(afterMilliseconds: Self.decoderReadyAfterGroupStartMilliseconds))
        }
        if started.staysPaused { actions.append(.pauseServer) }
        state = .handingBack(started)
        return actions
      case .unpause where resync.staysPaused:
        // The jump's start again, its pause not yet seen: asked for again; the output stays paused.
        return [.pauseServer, .log(.info, "resync: the server started the track a paused player holds; pausing it")]
      case .pause where resync.staysPaused && command.value == 0:
        var paused = resync
        paused.staysPaused = false  // from now on a `strm u` is the listener's
        state = .handingBack(paused)
        return [.forward(message)]
      case .stop where jumpsNotAdopted > 0, .flush where jumpsNotAdopted > 0:
        // The stream adopted was an earlier jump's, carried out late (LMS 7.9.1 seen, loaded: a
        // jump that timed out streamed 10 s later, just before the one asked again): the last
        // jump's stream follows this stop. Nothing local stops; if none comes, the resync fails.
        var waiting = resync
        waiting.decoderReadyReported = false
        waiting.awaitingStart = false
        state = .resyncing(waiting)
        return [
          .report(.flushed), .armResyncTimeout(.serverStream),
          .log(.notice, "resync: the server carried out an earlier jump late; waiting for the last one's stream"),
        ]
      case .stop, .flush:
        state = .online
        return [.forward(message), .log(.notice, "resync: the server stopped or moved playback; following it")]
      case .start where !resync.decoderReadyReported:
        // No stop came first, so this is the next track, not a move: LMS stops before it streams
        // elsewhere. In a group it streams the next track once every member is ready for it and one
        // said so after the start; this member's STMd sent before the start (its cached copy read
        // to its end then) counted. The cached copy plays on, its time still told against the
        // offset asked; an STMd now would have LMS take the streaming track for done.
        var streaming = resync
        streaming.decoderReadyReported = true
        state = .handingBack(streaming)
        return [
          .forward(message),
          .log(.notice, "resync: the server streams the next track; the cached copy plays to its end first"),
        ]
      default:
        return [.forward(message)]
      }
    }
  }

  /// The server's stream for the heard track arrived: adopted, not played; the cached copy plays on.
  /// A stream that starts on its own is reported started at once (and STMd, when the cached copy
  /// has been read to its end); one LMS starts itself (a sync group's, `strm u` once every member
  /// has sent STMl) is reported loaded now, and started when LMS starts it.
  mutating func adopt(_ resync: Resync, command: StreamCommand, facts: EngineFacts) -> [Action] {
    var resync = resync
    jumpsNotAdopted = max(0, jumpsNotAdopted - 1)
    var actions: [Action] = [.cancelResyncTimeout, .report(.connecting)]
    if resync.requestedSeconds == nil {
      // A member that followed its master kept its cached tracks queued until the group's stream came.
      actions.append(dropLocalTracks(after: resync.engineTrack))
    }
    if command.autostart.startsAutomatically {
      actions.append(.report(.trackStarted))
      if !isReading(resync.engineTrack, facts) && jumpsNotAdopted > 0 {
        // Another jump asked has not streamed yet: this stream may be an earlier one's carried out
        // late, with a stop and the last jump's stream right behind it. LMS would take this STMd
        // for that last stream, and the next for the track after it: a track lost (LMS 8.3.0 seen,
        // a flapping link). It leaves only if nothing follows.
        actions.append(.reportDecoderReadyLater(afterMilliseconds: Self.decoderReadyAfterEarlierJumpMilliseconds))
      } else if !isReading(resync.engineTrack, facts) {
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
    if status.syncGroup != group {
      // LMS's view was of this player in that group: out of it (or in another), it sees it afresh.
      serverViewMilliseconds = 0
      group = status.syncGroup
    }
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
    var actions: [Action] = []
    if let before = serverQueueBeforeListenersEdits {
      // The listener's queue goes on the server, so LMS and its controllers show what plays, unless
      // the server's queue was edited while it was away: then the server's wins.
      if before.latest == nil || before.compare(with: status) == .same {
        let tracks = ledger.tracks
        return [
          .log(.notice, "resync: putting the listener's queue (\(tracks.count) tracks) on the server"),
          .putQueueOnServer(tracks),
        ]
      }
      serverQueueBeforeListenersEdits = nil
      actions.append(
        .log(.notice, "resync: the queue was edited on the server while it was away, and here too: the server's wins"))
    }
    guard let heard = facts.heard, facts.output.hasAudio,
      let placement = ledger.placement(of: heard.engineTrack), let track = ledger.track(at: placement.queueIndex)
    else {
      state = .online
      return actions + serverTakesOver(status) + [.planDownloads]
    }
    var index = placement.queueIndex
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
    var resync = Resync(engineTrack: heard.engineTrack, queueIndex: index, requestedSeconds: requested)
    resync.staysPaused = facts.output == .paused
    state = .resyncing(resync)
    jumpsNotAdopted += 1
    return actions + [
      dropLocalTracks(after: heard.engineTrack),
      .log(.notice, "resync: asking the server to play track \(index + 1) from \(requested) s"),
      .jump(queueIndex: index, seconds: requested, thenPause: resync.staysPaused),
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

  /// The listener's queue is on the server: the resync goes on as for the server's own queue.
  public mutating func queuePutOnServer(facts: EngineFacts) -> [Action] {
    serverQueueBeforeListenersEdits = nil
    return resyncSoon(afterMilliseconds: 0, facts: facts)
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
