import LMSControl
import SlimProto

/// The offline coordinator's decisions, free of I/O: events go in with the facts they need
/// (what the engine is doing, which tracks are cached), actions come out, and the coordinator
/// performs them. Queue and track identity live in one `QueueLedger`.
///
/// ```
/// online ──(connection lost)──► offline ◄──(stream cut / decoded)── disconnected
///   │  ▲     (or disconnected while an uncached live stream still arrives)  ▲       │ reconnected
///   │  │                                                                    │       ▼
///   │  ├──────────────(the server still plays the heard track)──────────────┼── checkingServer
///   │  │                                                                    │       │ (it does not)
///   │  └──(the next server track starts)── handingBack ◄─(strm s)─ resyncing ◄──────┘ (or from offline)
///   │                                         ▲                              │ (a sync group whose
///   │                                         └─(strm s)─ followingGroup ◄───┘  master is another)
///   └───────────────────────────────────────────────────────────────────────┘
/// ```
///
/// The switch back never cuts into a track: LMS seeks native FLAC and MP3 by byte offset, to a
/// frame near the asked time, so its stream cannot be placed sample-exactly. Instead the server
/// is asked to play the heard track from the heard time (so it shows the truth), its stream for
/// that track is adopted without being played, the cached copy plays on to the track's end, and
/// the server's stream takes over from the next track's first sample. In a sync group only the
/// master LMS shows jumps; the other members adopt the group's stream once the server's status,
/// read after it came (`checkingGroupStream`), shows it is for the heard entry: LMS also restarts
/// a group by itself when a member returns, from the track it last knew.
public struct OfflineStateMachine: Sendable {
  public enum State: Equatable, Sendable {
    case online
    /// The connection is down while a live stream of an uncached track still arrives.
    case disconnected
    /// Reconnected after `disconnected`: the server's status tells whether it kept streaming
    /// through a short cut (nothing to do) or lost its playing state (restarted: resync). Its
    /// stream commands wait for that answer: a restarted LMS stops the player it sees arrive.
    case checkingServer
    /// Playing from the cache (or played out); resynced once the server is back.
    case offline
    /// Reconnected: the jump was sent, waiting for the server's `strm s`.
    case resyncing(Resync)
    /// Reconnected as a member of a sync group whose master resyncs the server for the whole group
    /// (one jump for the group): waiting for the group's stream, which this member adopts as its own.
    case followingGroup(Resync)
    /// A member following its master got a stream for the group: the server's status tells whether
    /// it is for the heard entry (the master's resync) or not (LMS's own restart of the group).
    case checkingGroupStream(Resync, stream: StreamCommand, check: Int)
    /// The server's stream for the heard track was adopted; its next track takes over.
    case handingBack(Resync)
  }

  public internal(set) var state = State.online {
    didSet {
      guard state == .online else { return }
      groupWaits = 0
      groupMasterFailed = false
      pendingGroupStream = nil
    }
  }
  public internal(set) var ledger = QueueLedger()
  /// This player's MAC address, as LMS writes it (lower case).
  public let player: String
  /// The LMS sync group this player was in when the server was last seen, kept through an outage:
  /// a restarted server shows the group only once its members are back.
  public internal(set) var group: SyncGroup?
  /// Status reads spent waiting for the group's other members to reconnect before a resync.
  var groupWaits = 0
  /// The group's master did not resync the group in time: this member resyncs on its own.
  var groupMasterFailed = false
  /// A `strm s` that came while this member, back in its group, had not yet read who resyncs.
  var pendingGroupStream: StreamCommand?
  /// Group streams checked so far: only the answer for the latest counts.
  var groupStreamChecks = 0
  public private(set) var isConnected = false
  /// Set while offline playback has run out of cached audio; cleared when anything plays again.
  public internal(set) var playedOut: PlayedOut?
  /// The queue the server had when the listener first edited the queue with it away: the
  /// listener's queue replaces the server's at the return unless the server's was edited too.
  public internal(set) var serverQueueBeforeListenersEdits: QueueLedger?
  /// The listener's queue edits so far: a saved state follows each one at once.
  public private(set) var listenerEdits = 0
  /// Resync attempts that failed in a row (LMS takes SlimProto before its web server is up).
  var resyncFailures = 0
  /// Jumps asked of the server on this connection whose stream has not been adopted: a jump given
  /// up on (its request timed out) may still be carried out, late, before the one asked again.
  var jumpsNotAdopted = 0
  /// LMS's own sync adjustments of this player, taken as its view of the player while the group's
  /// clock keeps the group in time (milliseconds, positive: LMS sees it behind). Every elapsed
  /// time LMS is told is moved by them, so it sees the player where it wants it. LMS dates
  /// each report by its own estimate of the player's clock, so the view holds for one connection.
  public internal(set) var serverViewMilliseconds = 0
  /// Beyond this, LMS's view is not a matter of timestamps: its adjustment is played.
  static let serverViewLimitMilliseconds = 100

  public init(player: String = "") {
    self.player = player.lowercased()
  }

  /// The other members of the group, when this player is in one.
  public var groupPeers: [String] {
    guard let group, group.contains(player) else { return [] }
    return group.members.filter { $0 != player }
  }

  // MARK: Connection

  public mutating func connectionChanged(up: Bool, facts: EngineFacts, isCached: (QueueTrack) -> Bool) -> [Action] {
    isConnected = up
    pendingGroupStream = nil
    jumpsNotAdopted = 0
    serverViewMilliseconds = 0
    guard up else { return [.stopPolling] + connectionLost(facts: facts, isCached: isCached) }
    var actions: [Action] = [.startPolling]
    switch state {
    case .disconnected:
      state = .checkingServer
      actions.append(.log(.notice, "offline: server back while the live stream plays; asking what it plays"))
      actions += resyncSoon(afterMilliseconds: 100, facts: facts)
    case .offline:
      // A moment for LMS to take the HELO before it is asked anything.
      actions += resyncSoon(afterMilliseconds: 100, facts: facts)
    default:
      break
    }
    return actions
  }

  private mutating func connectionLost(facts: EngineFacts, isCached: (QueueTrack) -> Bool) -> [Action] {
    switch state {
    case .online, .handingBack:
      return handOff(facts: facts, isCached: isCached)
    case .resyncing, .followingGroup, .checkingGroupStream:
      // Nothing was flushed for the resync: local playback simply goes on.
      state = .offline
      return [.cancelResyncTimeout, .log(.warning, "resync: connection lost again; playing on from the cache")]
    case .checkingServer:
      state = .disconnected
      return []
    case .disconnected, .offline:
      return []
    }
  }

  /// The server is gone: the cache takes over where it can, at once, before the buffers run out.
  private mutating func handOff(facts: EngineFacts, isCached: (QueueTrack) -> Bool) -> [Action] {
    switch facts.decoding {
    case .liveStream(let id):
      if let track = queueTrack(of: id), isCached(track) {
        state = .offline
        return [
          .continueFromCache(engineTrack: id, track: track),
          .log(.notice, "offline: server gone; track \(track.index + 1) continues from the cache"),
        ]
      }
      state = .disconnected
      return [.log(.warning, "offline: connection to the server lost; the live stream is not cached: playing it out")]
    case .localFile:
      // The cached copy already plays; what follows it is queued when it is decoded.
      state = .offline
      return [.log(.notice, "offline: server gone; playing on from the cache")]
    case .idle:
      state = .offline
      guard facts.output.hasAudio, let last = facts.lastDecodedTrack else {
        return [.log(.notice, "offline: server gone while nothing plays")]
      }
      return [.log(.notice, "offline: server gone; playing what is buffered")]
        + continueAfter(last, cutShort: facts.lastDecodedCutShort, isCached: isCached)
    }
  }

  /// After track `id` was decoded (or cut) offline: the cut track continues from its cached
  /// copy, else the next cached track follows it.
  private mutating func continueAfter(_ id: Int, cutShort: Bool, isCached: (QueueTrack) -> Bool) -> [Action] {
    guard let placement = ledger.placement(of: id) else {
      return [.log(.warning, "offline: no queue known: playing out the buffer, then stopping")]
    }
    if cutShort, let track = ledger.track(at: placement.queueIndex) {
      guard isCached(track) else {
        return [.log(.warning, "offline: track \(track.index + 1) was cut short and is not cached")]
          + nextCached(after: placement.queueIndex, playedOut: .cutShort(queueIndex: track.index), isCached: isCached)
      }
      return [
        .continueFromCache(engineTrack: id, track: track),
        .log(.notice, "offline: track \(track.index + 1) was cut short; it continues from the cache"),
      ]
    }
    return nextCached(
      after: placement.queueIndex, playedOut: .after(queueIndex: placement.queueIndex), isCached: isCached)
  }

  /// The cached tracks after `queueIndex`; when there are none, playback runs out as `playedOut`.
  private mutating func nextCached(
    after queueIndex: Int, playedOut: PlayedOut, isCached: (QueueTrack) -> Bool
  ) -> [Action] {
    var actions: [Action] = []
    var candidates: [QueueTrack] = []
    for track in ledger.tracks(after: queueIndex) {
      if isCached(track) {
        candidates.append(track)
      } else if candidates.isEmpty {
        actions.append(.log(.warning, "offline: track \(track.index + 1) '\(track.title)' is not cached: skipped"))
      }
    }
    guard !candidates.isEmpty else {
      self.playedOut = playedOut
      return actions + [.log(.warning, "offline: nothing more is cached: playing out the buffer, then stopping")]
    }
    return actions + [.playCached(candidates)]
  }

  // MARK: Engine events

  /// A `strm s` passed to the engine created track `id`.
  public mutating func trackCreated(_ id: Int) {
    playedOut = nil
    // A stream is the successor of the newest track placed, whether or not the output still plays
    // it: LMS's status moves to the new entry only once it starts, so its current entry may be the
    // one before. A jump elsewhere is corrected by the next status.
    if let last = ledger.lastPlacedTrack, let index = ledger.placement(of: last)?.queueIndex {
      ledger.place(id, at: ledger.successor(of: index))
    } else if let current = ledger.latest?.currentIndex {
      ledger.place(id, at: current)
    }
  }

  /// A cached track was queued (by `playCached`, local control or a resume).
  public mutating func localTrackQueued(_ id: Int, queueIndex: Int, startSeconds: Double = 0) {
    playedOut = nil
    ledger.place(id, at: queueIndex, startSeconds: startSeconds)
  }

  public mutating func trackStarted(_ id: Int) -> [Action] {
    ledger.forgetTracks(before: id)
    var actions: [Action] = []
    if case .handingBack(let resync) = state, id > resync.engineTrack {
      state = .online
      jumpsNotAdopted = 0
      actions.append(.log(.notice, "resync: the server's stream took over at track \(resync.queueIndex + 2)"))
    }
    if state == .online { actions.append(.pollSoon) }
    return actions + [.planDownloads]
  }

  public mutating func trackDecoded(_ id: Int, cutShort: Bool, isCached: (QueueTrack) -> Bool) -> [Action] {
    switch state {
    case .online:
      return [.pollSoon]
    case .resyncing, .followingGroup, .checkingGroupStream:
      return []
    case .checkingServer:
      // Played out while the status is read: the status arrives to an offline machine and resyncs.
      state = .offline
      return continueAfter(id, cutShort: cutShort, isCached: isCached)
    case .handingBack(var resync):
      // The engine's own STMd for the adopted track goes to the server; remember it (before a
      // group's start LMS only marks the player ready: the STMd that fetches the next track is
      // sent again at the start).
      if id == resync.engineTrack, !resync.awaitingStart {
        resync.decoderReadyReported = true
        state = .handingBack(resync)
      }
      return [.pollSoon]
    case .disconnected, .offline:
      state = .offline
      return continueAfter(id, cutShort: cutShort, isCached: isCached)
    }
  }

  public mutating func trackFailed(_ id: Int, isCached: (QueueTrack) -> Bool) -> [Action] {
    guard state == .offline || state == .disconnected || state == .checkingServer else { return [] }
    state = .offline
    return continueAfter(id, cutShort: true, isCached: isCached)
  }

  /// The live stream of track `id` ended early (an error, a reset, a stall).
  public mutating func streamFailed(_ id: Int, isCached: (QueueTrack) -> Bool) -> [Action] {
    switch state {
    case .resyncing, .followingGroup, .checkingGroupStream, .offline:
      return []
    case .online, .disconnected, .checkingServer, .handingBack:
      guard let track = queueTrack(of: id), isCached(track) else {
        if state == .disconnected || state == .checkingServer { state = .offline }
        return [.log(.warning, "offline: stream failed and the track is not cached: playing out the buffer")]
      }
      state = .offline
      var actions: [Action] = [
        .continueFromCache(engineTrack: id, track: track),
        .log(.notice, "offline: stream failed; track \(track.index + 1) continues from the cache"),
      ]
      // The server may still be there (only the stream broke): resync at once.
      if isConnected, let index = ledger.placement(of: id)?.queueIndex {
        actions.append(.readStatusForResync(fromIndex: index, afterMilliseconds: 300))
      }
      return actions
    }
  }

  /// A live stream stalled while the server is away: give up on it so what follows can play.
  public func liveStreamStalled() -> [Action] {
    state == .disconnected ? [.abandonLiveStream] : []
  }

  /// Which engine reports reach the server.
  public func forwardsReports() -> Bool {
    switch state {
    case .online, .handingBack: true
    case .disconnected, .checkingServer, .offline, .resyncing, .followingGroup, .checkingGroupStream: false
    }
  }

  // MARK: Local playback

  /// A saved state resumes from the cache (a restart with no server in reach).
  public mutating func resumeSaved(_ ledger: QueueLedger) {
    self.ledger = ledger
    state = .offline
    playedOut = nil
  }

  /// The group a saved state names, taken while no server has said otherwise (a restart while it
  /// is away): its members are listened for before anything resumes.
  public mutating func rememberGroup(_ saved: SyncGroup) {
    guard ledger.latest == nil, group == nil else { return }
    group = saved
  }

  /// The listener edited the queue with the server away: `edited` is the player's own now.
  public mutating func listenerEditedQueue(_ edited: QueueLedger) {
    if serverQueueBeforeListenersEdits == nil { serverQueueBeforeListenersEdits = ledger }
    listenerEdits += 1
    resumeSaved(edited)
  }

  /// A restart with the server away resumes a queue the listener had built: it stays the
  /// listener's, to be put on the server at the return as if the player had never stopped.
  /// `serverQueueBefore` is the server's queue then (empty: the player had not heard the server).
  public mutating func resumeListenersQueue(_ ledger: QueueLedger, serverQueueBefore: QueueLedger) {
    serverQueueBeforeListenersEdits = serverQueueBefore
    resumeSaved(ledger)
  }

  /// Local control replaced everything that played.
  public mutating func localRestart() {
    ledger.forgetAllTracks()
  }

  func queueTrack(of engineTrack: Int) -> QueueTrack? {
    ledger.placement(of: engineTrack).flatMap { ledger.track(at: $0.queueIndex) }
  }

  /// The queue entry after the one engine track `engineTrack` plays, if the ledger knows it.
  func queueTrack(after engineTrack: Int) -> QueueTrack? {
    ledger.placement(of: engineTrack).flatMap { ledger.track(at: ledger.successor(of: $0.queueIndex)) }
  }
}
