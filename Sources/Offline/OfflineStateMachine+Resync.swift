import LMSControl
import SlimProto

/// Server messages while offline and resyncing, the resync itself, and the elapsed time LMS is
/// told while its stream of the heard track is adopted.
extension OfflineStateMachine {
  // MARK: Server messages

  public mutating func serverMessage(_ message: ServerMessage, facts: EngineFacts) -> [Action] {
    guard case .stream(let command) = message else { return [.forward(message)] }
    switch state {
    case .online, .disconnected:
      return [.forward(message)]
    case .offline, .checkingServer:
      // LMS still believes it streams what it streamed before the outage (or, restarted, stops
      // a player it does not know): the resync decides.
      return []
    case .resyncing(var resync):
      switch command.command {
      case .stop, .flush:
        // LMS stops its old stream before the jump's new one: nothing local stops.
        return [.report(.flushed)]
      case .start:
        var actions: [Action] = [.cancelResyncTimeout, .report(.connecting), .report(.trackStarted)]
        if facts.decoding != .localFile(track: resync.engineTrack),
          facts.decoding != .liveStream(track: resync.engineTrack)
        {
          resync.decoderReadyReported = true
          actions.append(.report(.decoderReady))
        }
        state = .handingBack(resync)
        actions.append(
          .log(
            .notice,
            "resync: the server plays track \(resync.queueIndex + 1) again; the cached copy plays to its end, "
              + "then the server's stream takes over"))
        return actions
      default:
        return [.forward(message)]
      }
    case .handingBack(let resync):
      switch command.command {
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

  /// The elapsed time to report in a STAT: LMS adds it to the offset it was asked for.
  public func reportedElapsedMilliseconds(engineMilliseconds: UInt32, heardTrack: Int?) -> UInt32 {
    switch state {
    case .resyncing:
      return 0
    case .handingBack(let resync) where heardTrack == resync.engineTrack:
      let start = ledger.placement(of: resync.engineTrack)?.startSeconds ?? 0
      let heard = start * 1000 + Double(engineMilliseconds)
      return UInt32(max(0, (heard - resync.requestedSeconds * 1000).rounded()))
    default:
      return engineMilliseconds
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

  /// The server's queue, read after the reconnect: bring the server to what is heard.
  public mutating func resyncStatusArrived(_ status: LMSStatus, facts: EngineFacts) -> [Action] {
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
    let heardSeconds = placement.startSeconds + heard.seconds
    // LMS skips a track when asked for a time past its end.
    let latest = max(0, (track.duration ?? .infinity) - 0.5)
    let requested = (min(heardSeconds, latest) * 1000).rounded(.down) / 1000
    state = .resyncing(Resync(engineTrack: heard.engineTrack, queueIndex: index, requestedSeconds: requested))
    return actions + [
      dropLocalTracks(after: heard.engineTrack),
      .log(.notice, "resync: asking the server to play track \(index + 1) from \(requested) s"),
      .jump(queueIndex: index, seconds: requested, thenPause: facts.output == .paused),
      .armResyncTimeout,
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

  /// The status could not be read, the jump was refused, or no stream came in time.
  public mutating func resyncFailed(_ reason: String) -> [Action] {
    let index: Int
    switch state {
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

  /// The cached tracks queued behind `engineTrack` go, from the engine and from the ledger: the
  /// server's stream that follows is placed after `engineTrack`, not after them.
  mutating func dropLocalTracks(after engineTrack: Int) -> Action {
    ledger.forgetTracks(after: engineTrack)
    return .dropLocalTracks(after: engineTrack)
  }
}
