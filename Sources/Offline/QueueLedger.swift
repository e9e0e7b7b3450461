import LMSControl

/// What makes a queue entry the same track for the server: its library id, its file and the
/// file's size. LMS restores a queue after a restart with the same entries and a new
/// `playlist_timestamp`, so the timestamp alone says nothing about an edit.
public struct TrackIdentity: Hashable, Sendable {
  public var id: Int
  public var url: String
  public var fileSize: Int?

  public init(id: Int, url: String, fileSize: Int?) {
    self.id = id
    self.url = url
    self.fileSize = fileSize
  }
}

extension QueueTrack {
  public var identity: TrackIdentity { TrackIdentity(id: id, url: url, fileSize: fileSize) }
}

/// The one record of the server's queue and of which engine track plays which queue entry.
/// A pure value: the coordinator feeds it statuses and engine track ids, the state machine asks
/// it where playback is.
public struct QueueLedger: Equatable, Sendable {
  /// Where an engine track sits in the queue and how far into its file it began (an LMS seek
  /// or a local one), so its heard time maps to the server's `time`.
  public struct Placement: Equatable, Sendable {
    public var queueIndex: Int
    public var startSeconds: Double

    public init(queueIndex: Int, startSeconds: Double = 0) {
      self.queueIndex = queueIndex
      self.startSeconds = startSeconds
    }
  }

  public enum Comparison: Equatable, Sendable {
    case same
    /// Tracks were added, removed or reordered.
    case edited(String)
  }

  /// Queue entries seen, by queue index (the poller reads a window from the current one).
  public private(set) var entries: [Int: QueueTrack] = [:]
  /// How many tracks the whole queue holds, when known.
  public private(set) var trackCount: Int?
  /// The last status read from the server (or rebuilt from a saved state).
  public private(set) var latest: LMSStatus?
  public private(set) var placements: [Int: Placement] = [:]
  /// Grows whenever the entries or the track count change: tells a queue that moved on from one
  /// that did not without comparing them.
  public private(set) var revision = 0

  public init() {}

  /// The entries seen, in queue order.
  public var tracks: [QueueTrack] { entries.keys.sorted().compactMap { entries[$0] } }

  public func track(at index: Int) -> QueueTrack? { entries[index] }

  /// Takes a status: its window replaces what was known there. An edit (a changed count or
  /// an entry that differs) makes everything outside the window stale, so it is dropped.
  public mutating func record(_ status: LMSStatus) {
    let before = (entries, trackCount)
    if case .edited = compare(with: status) { entries.removeAll() }
    for track in status.tracks { entries[track.index] = track }
    trackCount = status.trackCount
    latest = status
    if entries != before.0 || trackCount != before.1 { revision &+= 1 }
  }

  /// Whether `status` shows the queue this ledger knows: the same number of tracks (when both
  /// are known) and the same identity at every index both have seen.
  public func compare(with status: LMSStatus) -> Comparison {
    if let trackCount, status.trackCount != trackCount {
      return .edited("\(trackCount) tracks before, \(status.trackCount) now")
    }
    for track in status.tracks {
      if let known = entries[track.index], known.identity != track.identity {
        return .edited("track \(track.index + 1) was '\(known.title)', now '\(track.title)'")
      }
    }
    return .same
  }

  // MARK: Engine tracks

  public func placement(of engineTrack: Int) -> Placement? { placements[engineTrack] }

  public mutating func place(_ engineTrack: Int, at queueIndex: Int, startSeconds: Double = 0) {
    placements[engineTrack] = Placement(queueIndex: queueIndex, startSeconds: startSeconds)
  }

  public mutating func setStartSeconds(_ seconds: Double, of engineTrack: Int) {
    placements[engineTrack]?.startSeconds = seconds
  }

  /// Engine tracks before `engineTrack` are over (ids grow with every track).
  public mutating func forgetTracks(before engineTrack: Int) {
    placements = placements.filter { $0.key >= engineTrack }
  }

  /// Engine tracks after `engineTrack` were dropped (cached tracks queued behind it, replaced by the
  /// server's stream): the server's next track follows `engineTrack`, not them.
  public mutating func forgetTracks(after engineTrack: Int) {
    placements = placements.filter { $0.key <= engineTrack }
  }

  public mutating func forgetAllTracks() { placements.removeAll() }

  /// The server says `engineTrack` plays entry `queueIndex`: every placement moves with it
  /// (an entry was removed or inserted before it).
  public mutating func correct(_ engineTrack: Int, to queueIndex: Int) {
    guard let known = placements[engineTrack]?.queueIndex, known != queueIndex else {
      if placements[engineTrack] == nil { place(engineTrack, at: queueIndex) }
      return
    }
    let shift = queueIndex - known
    for key in placements.keys { placements[key]!.queueIndex += shift }
  }

  /// The newest engine track placed.
  public var lastPlacedTrack: Int? { placements.keys.max() }

  /// The entry LMS plays when entry `queueIndex` ends, as its repeat setting says: the same one,
  /// the next, or after the last the first.
  public func successor(of queueIndex: Int) -> Int {
    switch latest?.repeatMode ?? .off {
    case .track: queueIndex
    case .queue where trackCount.map { queueIndex + 1 >= $0 } ?? false: 0
    case .off, .queue: queueIndex + 1
    }
  }

  /// The entries that follow `queueIndex`, in the order they play (what plays next offline):
  /// with the queue repeated, the ones before it and itself come round again.
  public func tracks(after queueIndex: Int) -> [QueueTrack] {
    switch latest?.repeatMode ?? .off {
    case .off: tracks.filter { $0.index > queueIndex }
    case .track: entries[queueIndex].map { [$0] } ?? []
    case .queue: tracks.filter { $0.index > queueIndex } + tracks.filter { $0.index <= queueIndex }
    }
  }

  /// A ledger rebuilt from a saved state (a restart without a server).
  public static func restored(
    queue: [QueueTrack], current: Int, trackCount: Int?, playlistTimestamp: Double?, time: Double
  ) -> QueueLedger {
    var ledger = QueueLedger()
    for track in queue { ledger.entries[track.index] = track }
    ledger.trackCount = trackCount
    ledger.latest = LMSStatus(
      mode: .play, time: time, currentIndex: current, playlistTimestamp: playlistTimestamp,
      trackCount: trackCount ?? queue.count, tracks: queue)
    return ledger
  }
}
