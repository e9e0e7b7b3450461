import LMSControl
import NIOCore

/// The offline library (what the cache holds) and the listener's queue edits. With the server
/// there, an edit is LMS's command and LMS stays the authority; with it away, the player keeps a
/// queue of its own, played from the cache as LMS's would be: gapless, each next track queued
/// behind the one heard as that one finishes decoding.
extension OfflineCoordinator {
  /// Built from the cache's records when asked (read from disk: tens of milliseconds for thousands
  /// of tracks, and nothing held once answered).
  public var library: OfflineLibrary {
    OfflineLibrary(records: store.cachedRecords(), pinned: store.isPinned)
  }

  /// Whether edits go to the player's own queue rather than to LMS.
  var editsLocally: Bool {
    machine.state == .offline || (!machine.isConnected && machine.state == .online)
  }

  public func edit(_ edit: QueueEdit) -> EventLoopFuture<Void> {
    guard editsLocally else {
      switch machine.state {
      case .online where machine.isConnected, .handingBack: break
      default: return eventLoop.makeFailedFuture(QueueEditError.busy)
      }
      // One command after the other, in order.
      var done = eventLoop.makeSucceededVoidFuture()
      for command in edit.lmsCommands {
        done = done.flatMap { [client] in client.request(command).map { _ in } }
      }
      return done.flatMapErrorThrowing { throw QueueEditError.server("\($0)") }
    }
    do throws(QueueEditError) {
      try editLocally(edit)
      followReturnChoice()
      return eventLoop.makeSucceededVoidFuture()
    } catch {
      return eventLoop.makeFailedFuture(error)
    }
  }

  private func editLocally(_ edit: QueueEdit) throws(QueueEditError) {
    // Right after a play starts nothing is heard yet, but its first track is under way (its first
    // frames may be out already): an edit then keeps it, as it keeps a track heard.
    let heardTrack =
      engine.heardPosition()?.trackID ?? (engine.isPlaying ? machine.ledger.placements.keys.min() : nil)
    let placement = heardTrack.flatMap { machine.ledger.placement(of: $0) }
    // The entries known (LMS's window from its current one, or the listener's whole queue), by their
    // place: the player's own queue is numbered from 0.
    let known = machine.ledger.tracks
    let place = { (index: Int) throws(QueueEditError) -> Int in
      guard let found = known.firstIndex(where: { $0.index == index }) else { throw .noSuchEntry(index) }
      return found
    }
    let local: QueueEdit =
      switch edit {
      case .remove(let index): .remove(index: try place(index))
      case .move(let from, let to): .move(from: try place(from), to: try place(to))
      case .replace, .append: edit
      }
    let playing = engine.isPlaying || engine.state().output == .paused
    let heardIndex =
      playing ? placement.flatMap { placement in known.firstIndex { $0.index == placement.queueIndex } } : nil
    let (queue, heard) = try local.apply(to: known, heard: heardIndex)
    guard !queue.isEmpty else {
      engine.stopLocal()
      machine.listenerEditedQueue(.restored(queue: [], current: 0, trackCount: 0, playlistTimestamp: nil, time: 0))
      logger.notice("offline: the listener emptied the queue")
      return
    }
    let start: Int
    switch edit {
    case .replace(_, let startAt): start = startAt
    default: start = heard ?? heardIndex ?? 0
    }
    machine.listenerEditedQueue(
      .restored(queue: queue, current: start, trackCount: queue.count, playlistTimestamp: nil, time: 0))
    logger.notice("offline: the listener's queue: \(queue.count) tracks (\(edit.summary))")
    guard let heard, let heardTrack, let placement else {
      // Nothing heard goes on: the queue starts over where the edit says.
      guard let track = queue.first(where: { $0.index >= start && hasUsableCopy($0) }) else {
        engine.stopLocal()
        logger.warning("offline: nothing in the listener's queue is cached")
        return
      }
      playLocal(track, seconds: 0, sampleRate: 44100)
      return
    }
    // The heard track plays on at its new place; what was queued behind it follows the new order.
    machine.localTrackQueued(heardTrack, queueIndex: heard, startSeconds: placement.startSeconds)
    engine.dropTracks(after: heardTrack)
    if facts().decoding == .idle {
      perform(machine.trackDecoded(heardTrack, cutShort: false, isCached: hasUsableCopy))
    }
  }
}

extension QueueEdit {
  var summary: String {
    switch self {
    case .replace(let tracks, let start): "replaced by \(tracks.count), from \(start + 1)"
    case .append(let tracks): "\(tracks.count) added"
    case .remove(let index): "entry \(index + 1) removed"
    case .move(let from, let to): "entry \(from + 1) moved to \(to + 1)"
    }
  }
}
