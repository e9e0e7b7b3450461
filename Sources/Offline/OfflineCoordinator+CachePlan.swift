import LMSControl
import Playback
import Support

/// Which cache file a queue entry is, and what the download manager fetches: the current track,
/// the next `prefetch`, then what is pinned and not yet cached.
extension OfflineCoordinator {
  func key(for track: QueueTrack) -> CacheKey? {
    if let endpoint = client.endpoint { serverIdentity = endpoint.identity }
    // Started without its server and with no saved state: the cache says which server it holds.
    if serverIdentity == nil, !unrecordedURLs.contains(track.url) {
      if let server = store.record(recording: track)?.server {
        serverIdentity = server
        unrecordedURLs = []
      } else {
        unrecordedURLs.insert(track.url)
      }
    }
    guard let serverIdentity else { return nil }
    return CacheKey(server: serverIdentity, url: track.url, fileSize: track.fileSize)
  }

  /// The current track and the next `prefetch`, then what is pinned and not yet cached.
  func planDownloads() {
    var plan: [PlannedDownload] = []
    if let current = machine.ledger.latest?.currentIndex ?? machine.ledger.tracks.first?.index {
      let wanted = machine.ledger.tracks.filter { $0.index >= current }.prefix(configuration.prefetch + 1)
      plan = wanted.compactMap { track -> PlannedDownload? in
        guard track.isDownloadable, Codec(fileType: track.type) != nil, let key = key(for: track) else {
          return nil
        }
        return PlannedDownload(key: key, track: track, server: serverIdentity)
      }
    }
    plan += pinnedDownloads(after: Set(plan.map(\.key)))
    downloads.setPlan(plan)
  }

  func cachedSource(for track: QueueTrack) -> LocalSource? {
    guard let key = key(for: track), let codec = Codec(fileType: track.type),
      store.entry(key) != nil, store.verify(key, expectedSize: track.fileSize), let path = store.lookUp(key)
    else { return nil }
    return LocalSource(path: path, codec: codec)
  }
}
