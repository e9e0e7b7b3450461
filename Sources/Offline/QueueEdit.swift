import LMSControl

/// A change the listener makes to the queue: online it becomes LMS's command, offline it is made to
/// the queue the player plays from its cache.
public enum QueueEdit: Equatable, Sendable {
  /// The queue becomes `tracks`, played from entry `startAt`.
  case replace([QueueTrack], startAt: Int)
  /// `tracks` go to the end.
  case append([QueueTrack])
  case remove(index: Int)
  case move(from: Int, to: Int)

  /// The queue after the edit, its entries numbered again, and where entry `heard` went (nil: it
  /// was removed, or the whole queue replaced).
  public func apply(to queue: [QueueTrack], heard: Int?) throws(QueueEditError) -> (queue: [QueueTrack], heard: Int?) {
    var tracks = queue
    var heard = heard
    switch self {
    case .replace(let new, let start):
      guard new.indices.contains(start) else { throw .noSuchEntry(start) }
      tracks = new
      heard = nil
    case .append(let new):
      tracks += new
    case .remove(let index):
      guard tracks.indices.contains(index) else { throw .noSuchEntry(index) }
      tracks.remove(at: index)
      if let current = heard { heard = current == index ? nil : current > index ? current - 1 : current }
    case .move(let from, let to):
      guard tracks.indices.contains(from) else { throw .noSuchEntry(from) }
      guard tracks.indices.contains(to) else { throw .noSuchEntry(to) }
      tracks.insert(tracks.remove(at: from), at: to)
      if let current = heard {
        if current == from {
          heard = to
        } else if from < current, current <= to {
          heard = current - 1
        } else if to <= current, current < from {
          heard = current + 1
        }
      }
    }
    for index in tracks.indices { tracks[index].index = index }
    return (tracks, heard)
  }

  /// The same edit as LMS's CLI (tracks by their LMS ids).
  public var lmsCommands: [[JSONValue]] {
    let ids = { (tracks: [QueueTrack]) in
      JSONValue.string("track_id:" + tracks.map { String($0.id) }.joined(separator: ","))
    }
    switch self {
    case .replace(let tracks, let start):
      return [["playlistcontrol", "cmd:load", ids(tracks)]]
        + (start > 0 ? [["playlist", "index", .number(Double(start))]] : [])
    case .append(let tracks): return [["playlistcontrol", "cmd:add", ids(tracks)]]
    case .remove(let index): return [["playlist", "delete", .number(Double(index))]]
    case .move(let from, let to): return [["playlist", "move", .number(Double(from)), .number(Double(to))]]
    }
  }
}

public enum QueueEditError: Error, Equatable, CustomStringConvertible {
  case noSuchEntry(Int)
  /// Resyncing with the server: edits wait.
  case busy
  case server(String)

  public var description: String {
    switch self {
    case .noSuchEntry(let index): "the queue has no entry \(index + 1)"
    case .busy: "resyncing with the server; try again shortly"
    case .server(let reason): "the server did not take the edit: \(reason)"
    }
  }
}
