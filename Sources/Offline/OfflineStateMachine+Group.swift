import LMSControl
import SlimProto

/// A sync group's members through a resync: one jump for the group (by its master), the group's
/// stream checked and adopted by the others, its start reported in an order LMS takes, and LMS's
/// own sync adjustments taken as its view while the group's clock keeps the time.
extension OfflineStateMachine {
  /// How long after a group's start the adopted stream's STMd leaves: long after every member's
  /// STMs reached the server, well before the heard track ends (a resync waits past a track that
  /// ends within `groupTrackEndMargin`).
  static let decoderReadyAfterGroupStartMilliseconds = 500

  /// The moment after a group's start, or after an adopted stream that may have been an earlier
  /// jump's, has passed: the adopted stream's STMd leaves, unless it already has or the server has
  /// moved on meanwhile.
  public mutating func decoderReadyDue() -> [Action] {
    guard case .handingBack(var resync) = state, !resync.awaitingStart, !resync.decoderReadyReported else { return [] }
    resync.decoderReadyReported = true
    state = .handingBack(resync)
    return [.report(.decoderReady)]
  }

  /// A stream came for this member's group: LMS streams to the whole group whenever it restarts
  /// it (its own restart when a member returns is for the track it last knew), so only a stream
  /// the server's status, read after it came, shows for the heard entry is the master's resync.
  mutating func checkGroupStream(_ resync: Resync, _ command: StreamCommand) -> [Action] {
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
  mutating func takeServerView(_ moved: Int, of message: ServerMessage) -> [Action] {
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

  /// In a group, the resync waits until the members the server had before the outage are back
  /// (a member that returns later makes LMS restart the whole group), for at most 5 s.
  mutating func waitForGroup(_ status: LMSStatus, facts: EngineFacts, connected: Set<String>?) -> [Action]? {
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
  func waitForTheNextTrack(_ track: QueueTrack, index: Int, heardSeconds: Double, facts: EngineFacts)
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
  func groupMaster(in status: LMSStatus) -> String? {
    guard !groupMasterFailed, let group = status.syncGroup, group.contains(player), group.master != player
    else { return nil }
    return group.master
  }
}
