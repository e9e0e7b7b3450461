import LMSControl
import NIOCore
import Support

/// Why a pin was refused.
public enum PinError: Error, Equatable, CustomStringConvertible {
  /// Pins are read from the server: it must be there.
  case serverAway
  /// No id given and nothing playing to take it from.
  case nothingPlaying(Pin.Kind)
  case notFound(Pin.Kind, String)
  case server(String)
  case cannotSave(String)

  public var description: String {
    switch self {
    case .serverAway: "the server is away: pins are made while it is there"
    case .nothingPlaying(let kind): "no \(kind.rawValue) given and nothing playing to take it from"
    case .notFound(let kind, let what): "the server has no \(kind.rawValue) \(what)"
    case .server(let reason): "the server did not answer: \(reason)"
    case .cannotSave(let reason): "cannot save the pins: \(reason)"
    }
  }
}

/// Pins: albums, saved playlists and tracks the listener keeps on the device. Their tracks are
/// read from the server when pinned, downloaded after the queue's (`planDownloads`), kept out of
/// the cache's eviction and counted against the pin cap (`CacheStore`); the list lives in
/// `pins.json` beside the cache index, so it survives restarts with the files it names.
extension OfflineCoordinator {
  var pinsPath: String { PinList.path(in: store.directory) }

  /// At start: the pins saved, their files marked as kept.
  func loadPins() {
    guard let saved = PinList.load(from: pinsPath) else { return }
    pins = PinnedMusic(saved) { store.entry($0) != nil }
    let keys = saved.keys
    store.setPinned(keys)
    logger.info("pins: \(pins.pins.count) (\(keys.count) tracks, \(pins.waiting.count) to download)")
  }

  /// Pins the album, playlist or track `id` (nil: the one heard now; a playlist may be named).
  public func pin(_ kind: Pin.Kind, id: Int?, name: String? = nil) -> EventLoopFuture<PinProgress> {
    guard machine.isConnected, let server = client.endpoint?.identity else {
      return eventLoop.makeFailedFuture(PinError.serverAway)
    }
    let resolvedID: EventLoopFuture<Int>
    if let id {
      resolvedID = eventLoop.makeSucceededFuture(id)
    } else if kind == .playlist, let name {
      resolvedID = client.request(PinResolver.playlistsQuery).flatMapErrorThrowing { throw PinError.server("\($0)") }
        .flatMapThrowing { reply in
          guard let id = PinResolver.playlistID(named: name, in: reply) else {
            throw PinError.notFound(kind, "'\(name)'")
          }
          return id
        }
    } else if let heard = heardTrack(), let id = kind == .album ? heard.albumID : kind == .track ? heard.id : nil {
      resolvedID = eventLoop.makeSucceededFuture(id)
    } else {
      return eventLoop.makeFailedFuture(PinError.nothingPlaying(kind))
    }
    return resolvedID.flatMap { [self] id in
      client.request(PinResolver.query(kind, id: id)).flatMapErrorThrowing { throw PinError.server("\($0)") }
        .flatMapThrowing { [self] reply in
          guard let pin = PinResolver.pin(kind, id: id, server: server, reply: reply) else {
            throw PinError.notFound(kind, "\(id)")
          }
          try keep(pin)
          return progress(of: PinSummary(pin))
        }
    }
  }

  private func keep(_ pin: Pin) throws(PinError) {
    var updated = try savedPins()
    updated.add(pin)
    try adopt(updated)
    logger.notice("pins: \(pin.kind.rawValue) '\(pin.title)' pinned (\(pin.tracks.count) tracks)")
  }

  /// Unpins; its files stay cached as ordinary entries (evicted as the cache needs room). Pins
  /// can be removed with the server away.
  public func unpin(_ kind: Pin.Kind, id: Int) throws(PinError) -> Pin? {
    var updated = try savedPins()
    guard
      let server = serverIdentity ?? client.endpoint?.identity
        ?? pins.pins.first(where: { $0.kind == kind && $0.id == id })?.server,
      let removed = updated.remove(kind: kind, id: id, server: server)
    else { return nil }
    try adopt(updated)
    logger.notice("pins: \(kind.rawValue) '\(removed.title)' unpinned")
    return removed
  }

  /// The whole list, as saved (the player holds only its summary). A list that was there and can no
  /// longer be read is not taken for an empty one: that would unpin everything.
  private func savedPins() throws(PinError) -> PinList {
    if let saved = PinList.load(from: pinsPath) { return saved }
    guard pins.pins.isEmpty else { throw .cannotSave("\(pinsPath) can no longer be read") }
    return PinList()
  }

  /// The list saved first (a list that cannot be saved changes nothing), then its files kept and
  /// what is missing planned.
  private func adopt(_ updated: PinList) throws(PinError) {
    do {
      try updated.save(to: pinsPath)
    } catch {
      logger.error("pins: \(error): the pins are left as they were")
      throw .cannotSave("\(error)")
    }
    pins = PinnedMusic(updated) { store.entry($0) != nil }
    store.setPinned(updated.keys)
    planDownloads()
  }

  public var pinProgress: [PinProgress] {
    pins.pins.map(progress(of:))
  }

  func progress(of pin: PinSummary) -> PinProgress {
    PinProgress(pin: pin) { [store] key in store.entry(key)?.size }
  }

  /// The covers of pinned music, kept with it.
  public var pinnedCoverIDs: [String] { pins.coverIDs }

  /// The pinned tracks of the current server not cached yet, less those already planned.
  func pinnedDownloads(after planned: Set<CacheKey>) -> [PlannedDownload] {
    // A pinned file found corrupt was dropped: the saved list says what to fetch again.
    if store.takeDroppedPinned(), let saved = PinList.load(from: pinsPath) {
      pins = PinnedMusic(saved) { store.entry($0) != nil }
    }
    // Everything pinned is cached: nothing to look at (the common case, every poll).
    guard !pins.waiting.isEmpty, let server = serverIdentity ?? client.endpoint?.identity else { return [] }
    var planned = planned
    pins.dropCached { store.entry($0) != nil }
    return pins.waiting.compactMap { key, track, pinServer in
      guard pinServer == server, Codec(fileType: track.type) != nil, store.entry(key) == nil,
        planned.insert(key).inserted
      else { return nil }
      return PlannedDownload(key: key, track: track, server: server)
    }
  }

  /// The queue entry heard now, or LMS's current one.
  func heardTrack() -> QueueTrack? {
    let index = heardQueuePosition()?.index ?? machine.ledger.latest?.currentIndex
    return index.flatMap { machine.ledger.track(at: $0) }
  }
}
