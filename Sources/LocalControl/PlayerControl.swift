import LMSControl
import NIOCore
import Offline

/// The control API's view of the player: online, commands go to LMS so the server stays
/// authoritative; offline, they are applied to local playback.
public final class PlayerControl: ControlTarget {
  private let player: any ControlledPlayer
  private let client: LMSClient
  private let server: LMSCommandBackend
  private let local: LocalCommandBackend
  private let artwork: ArtworkCache?
  private let nowPlaying: NowPlaying

  /// `snapshotPath`: where the last published track is kept across restarts.
  public init(player: any ControlledPlayer, client: LMSClient, artwork: ArtworkCache?, snapshotPath: String?) {
    self.player = player
    self.client = client
    server = LMSCommandBackend(client: client)
    local = LocalCommandBackend(player: player, eventLoop: client.eventLoop)
    self.artwork = artwork
    nowPlaying = NowPlaying(artwork: artwork, snapshotPath: snapshotPath)
    artwork?.kept = { [unowned player] in Set(player.pinnedCoverIDs) }
  }

  /// A cover by id (the page's URL changes with the track); waits up to 3 s for one being
  /// fetched, then answers without it.
  public func artwork(coverID: String) -> EventLoopFuture<[UInt8]?> {
    let promise = client.eventLoop.makePromise(of: [UInt8]?.self)
    guard let artwork else {
      promise.succeed(nil)
      return promise.futureResult
    }
    // Whichever comes first answers: the cover, or the 3 s timeout (a late cover is still cached).
    let answered = LoopFlag()
    let timeout = client.eventLoop.assumeIsolated().scheduleTask(in: .seconds(3)) {
      if answered.set() { promise.succeed(nil) }
    }
    artwork.image(coverID) { image in
      timeout.cancel()
      if answered.set() { promise.succeed(image) }
    }
    return promise.futureResult
  }

  private var currentTrack: QueueTrack? {
    let queue = player.queueSnapshot
    guard let index = player.heardQueuePosition()?.index ?? queue?.currentIndex else { return nil }
    return queue?.tracks.first { $0.index == index }
  }

  /// The current track's cover; see `artwork(coverID:)`.
  public func currentArtwork() -> EventLoopFuture<[UInt8]?> {
    guard let coverID = currentTrack?.coverID else { return client.eventLoop.makeSucceededFuture(nil) }
    return artwork(coverID: coverID)
  }

  /// Every 2 s, one cover of the queue is fetched ahead (`prefetchArtwork`).
  public func startBackgroundWork() {
    client.eventLoop.assumeIsolated().scheduleTask(in: .seconds(2)) { [weak self] in
      guard let self else { return }
      prefetchArtwork()
      startBackgroundWork()
    }
  }

  /// Fetches the covers of every track in the queue view, then of pinned music, so offline
  /// playback and the pins have art too. One at a time: the next tick takes the next one. The pinned
  /// covers are gone through once (each asked for once, in order), again when the pins change or
  /// after `pinnedCoverRecheckTicks`: an idle player with thousands of pinned tracks looks at
  /// nothing.
  public func prefetchArtwork() {
    guard let artwork, player.controlMode == .online else { return }
    for coverID in (player.queueSnapshot?.tracks ?? []).compactMap(\.coverID) where !artwork.hasImage(coverID) {
      artwork.image(coverID) { _ in }
      return
    }
    let pinned = player.pinnedCoverIDs
    pinnedCoverPass.ticks += 1
    if pinned != pinnedCoverPass.covers || pinnedCoverPass.ticks >= Self.pinnedCoverRecheckTicks {
      pinnedCoverPass = (pinned, 0, 0)
    }
    guard pinnedCoverPass.next < pinned.count else { return }
    while pinnedCoverPass.next < pinned.count {
      let coverID = pinned[pinnedCoverPass.next]
      pinnedCoverPass.next += 1
      if !artwork.hasImage(coverID) {
        artwork.image(coverID) { _ in }
        return
      }
    }
    oneOffWorkDone?()
  }

  /// Where the pass over the pinned covers stands: those before `next` were there or asked for.
  private var pinnedCoverPass: (covers: [String], next: Int, ticks: Int) = ([], 0, 0)
  /// Ten minutes of 2 s ticks: a cover that failed (the server away) is asked for again then.
  private static let pinnedCoverRecheckTicks = 300

  public func statusReady(on loop: any EventLoop) -> EventLoopFuture<Void> { player.controlWanted() }

  public func status() -> JSONValue {
    // A page open on the events keeps asking: that keeps the view current.
    _ = player.controlWanted()
    let queue = player.queueSnapshot
    let heard = player.heardQueuePosition()
    var members: [String: JSONValue] = [
      "state": .string(player.controlMode.rawValue),
      "server": client.endpoint.map { .string($0.identity) } ?? .null,
      "playing": .bool(player.isPlaying),
      "volume": player.volumePercent.map { .number(Double($0)) } ?? .null,
    ]
    if let shown = nowPlaying.update(current: currentTrack) {
      var track = Self.describe(shown.track, cached: player.isCached(shown.track))
      if shown.artworkReady, let coverID = shown.track.coverID, var members = track.object {
        members["artwork"] = .string("/api/artwork/\(coverID)")
        track = .object(members)
      }
      members["now_playing"] = track
      // The position belongs to the track shown, not to one still waiting for its cover.
      if let heard, heard.index == shown.track.index {
        members["position"] = .number((heard.seconds * 1000).rounded() / 1000)
      }
    }
    members["queue"] = .array((queue?.tracks ?? []).map { Self.describe($0, cached: player.isCached($0)) })
    members["pins"] = .array(player.pinProgress.map(\.json))
    if case .held(let seen, let stayed) = player.serverReturn {
      members["server_return"] = ["server_back": .bool(seen), "stayed": .bool(stayed)]
    }
    return .object(members)
  }

  public func choose(_ choice: ServerChoice) {
    switch choice {
    case .returnToServer: player.chooseReturn()
    case .stayOffline: player.chooseStayOffline()
    }
  }

  public func pins() -> JSONValue { ["pins": .array(player.pinProgress.map(\.json))] }

  /// Told when work that will not recur soon is done (a library answered, a pass over the pinned
  /// covers): the code and memory it used can go back (`Player`'s code release).
  public var oneOffWorkDone: (@Sendable () -> Void)?

  public func library(query: [String: String]) -> JSONValue? {
    guard let library = player.offlineLibrary() else { return nil }
    defer { oneOffWorkDone?() }
    if let id = query["album"] { return library.album(id: id)?.json }
    if let text = query["q"] {
      let found = library.search(text)
      return ["albums": .array(found.albums.map(\.summary)), "tracks": .array(found.tracks.map(\.json))]
    }
    return ["albums": .array(library.albums.map(\.summary)), "track_count": .number(Double(library.trackCount))]
  }

  public func perform(_ command: QueueCommand, on loop: any EventLoop) -> EventLoopFuture<Void> {
    _ = player.controlWanted()
    let edit: QueueEdit
    do throws(ControlError) {
      switch command {
      case .play(let music, let start): edit = .replace(try tracks(of: music), startAt: start)
      case .add(let music): edit = .append(try tracks(of: music))
      case .remove(let index): edit = .remove(index: index)
      case .move(let from, let to): edit = .move(from: from, to: to)
      }
    } catch {
      return loop.makeFailedFuture(error)
    }
    return player.edit(edit).flatMapErrorThrowing { error in
      switch error {
      case QueueEditError.noSuchEntry: throw ControlError.badRequest("\(error)")
      default: throw (error as? ControlError) ?? ControlError.unavailable("\(error)")
      }
    }
  }

  /// The library's tracks for an album id or track keys.
  private func tracks(of music: QueueCommand.Music) throws(ControlError) -> [QueueTrack] {
    guard let library = player.offlineLibrary() else { throw .unavailable("this player has no library") }
    switch music {
    case .album(let id):
      guard let album = library.album(id: id) else { throw .missing("no album \(id) in the library") }
      return album.tracks.map(\.record)
    case .tracks(let keys):
      return try keys.map { key throws(ControlError) in
        guard let track = library.track(key: key) else { throw .missing("no track \(key) in the library") }
        return track.record
      }
    }
  }

  public func perform(_ command: PinCommand, on loop: any EventLoop) -> EventLoopFuture<JSONValue> {
    _ = player.controlWanted()
    switch command {
    case .pin(let kind, let id, let name):
      return player.pin(kind, id: id, name: name).map(\.json).flatMapErrorThrowing { error in
        switch error {
        case PinError.notFound: throw ControlError.missing("\(error)")
        case PinError.nothingPlaying: throw ControlError.badRequest("\(error)")
        default: throw (error as? ControlError) ?? ControlError.unavailable("\(error)")
        }
      }
    case .unpin(let kind, let id):
      do throws(PinError) {
        guard let removed = try player.unpin(kind, id: id) else {
          return loop.makeFailedFuture(ControlError.missing("no \(kind.rawValue) \(id) is pinned"))
        }
        return loop.makeSucceededFuture(["unpinned": .string(removed.title)])
      } catch {
        return loop.makeFailedFuture(ControlError.unavailable("\(error)"))
      }
    }
  }

  public func perform(_ command: ControlCommand) -> EventLoopFuture<Void> {
    _ = player.controlWanted()
    switch player.controlMode {
    case .offline:
      return local.perform(command)
    case .resyncing:
      return client.eventLoop.makeFailedFuture(ControlError.unavailable("resyncing with the server; try again shortly"))
    case .online, .disconnected:
      return server.perform(command)
    }
  }

  static func describe(_ track: QueueTrack, cached: Bool) -> JSONValue {
    [
      "index": .number(Double(track.index)), "title": .string(track.title), "artist": .string(track.artist),
      "album": .string(track.album), "duration": track.duration.map { .number($0) } ?? .null,
      "cached": .bool(cached), "coverid": track.coverID.map { .string($0) } ?? .null,
      "id": .number(Double(track.id)), "album_id": track.albumID.map { .number(Double($0)) } ?? .null,
    ]
  }
}

/// A once-only flag for callbacks that all run on one event loop.
private final class LoopFlag {
  private var isSet = false

  /// True the first time only.
  func set() -> Bool {
    defer { isSet = true }
    return !isSet
  }
}
