import LMSControl
import NIOCore
import SlimConnection
import Support

/// The one source of now-playing metadata for the page and the API. A new track is published
/// together with its cover: the switch waits until the cover is on disk, at most 3 s, then goes
/// out with the text alone and the cover follows in a later update. Nothing is published that
/// did not come from the server (no "Connecting…" text). The last published track is saved, so
/// a restarted player shows it at once.
final class NowPlaying {
  struct Published: Equatable {
    var track: QueueTrack
    var artworkReady: Bool

    var key: String { "\(track.index)/\(track.id)/\(track.title)" }
  }

  private let artwork: ArtworkCache?
  private let snapshotPath: String?
  private(set) var published: Published?
  private var waitingSince: (key: String, at: NIODeadline)?
  /// The cover fetch for this track ended without an image: no reason to wait any longer.
  private var gaveUp: String?
  static let artworkWait = TimeAmount.seconds(3)

  init(artwork: ArtworkCache?, snapshotPath: String?) {
    self.artwork = artwork
    self.snapshotPath = snapshotPath
    if let snapshotPath, let bytes = FileIO.read(snapshotPath), let value = try? JSONValue(parsing: bytes),
      let track = QueueTrack(value)
    {
      published = Published(track: track, artworkReady: track.coverID.map { artwork?.hasImage($0) == true } ?? false)
    }
  }

  /// Moves the published track towards `current`; returns what is published now.
  func update(current: QueueTrack?, now: NIODeadline = .now()) -> Published? {
    guard let current, !current.title.isEmpty else { return published }
    let candidateKey = Published(track: current, artworkReady: false).key
    if published?.key == candidateKey {
      // Same track: the cover may have arrived since.
      if published?.artworkReady == false, let coverID = current.coverID, artwork?.hasImage(coverID) == true {
        published?.artworkReady = true
      }
      published?.track = current
      return published
    }
    let ready = current.coverID.map { artwork?.hasImage($0) == true } ?? true
    if !ready, let coverID = current.coverID {
      if waitingSince?.key != candidateKey {
        waitingSince = (candidateKey, now)
        artwork?.image(coverID) { [weak self] image in
          if image == nil { self?.gaveUp = candidateKey }
        }
      }
      if now - waitingSince!.at < Self.artworkWait, gaveUp != candidateKey { return published }
    }
    waitingSince = nil
    published = Published(track: current, artworkReady: current.coverID != nil && ready)
    save()
    return published
  }

  private func save() {
    guard let snapshotPath, let track = published?.track else { return }
    // Replaced whole, not synced: a page's snapshot, written on the control loop at each track.
    try? FileIO.writeAtomically(snapshotPath, Array(track.json.encoded.utf8), durable: false)
  }
}
