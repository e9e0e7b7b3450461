import LMSControl
import NIOCore
import Playback

/// Resync: bring LMS to the track and position really playing, and splice its stream back in.
extension OfflineCoordinator {

  func scheduleResyncIfConnected() {
    // A failed stream with the server still connected: resync at once.
    eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(300)) { [self] in
      if state == .offline, connected { beginResync() }
    }
  }

  func beginResync() {
    guard state == .offline else { return }
    poller.fetch().hop(to: eventLoop).assumeIsolated().whenComplete { [self] result in
      guard state == .offline else { return }
      switch result {
      case .failure(let error):
        logger.warning("resync: cannot read the server's status (\(error)); staying offline")
        eventLoop.assumeIsolated().scheduleTask(in: .seconds(5)) { [self] in beginResync() }
      case .success(let status):
        resync(with: status)
      }
    }
  }

  func resync(with status: LMSStatus) {
    if let known = queue?.playlistTimestamp, let now = status.playlistTimestamp, known != now {
      logger.notice("resync: the queue was edited on the server while offline: following the server")
      engine.stopLocal()
      queueIndexOfTrack.removeAll()
      queue = status
      state = .online
      if status.mode == .play, let index = status.currentIndex {
        _ = client.request(["playlist", "jump", .number(Double(index))])
      }
      return
    }
    guard engine.isPlaying, let point = engine.prepareSplice(keepMilliseconds: configuration.spliceLeadMilliseconds),
      let index = queueIndexOfTrack[point.trackID]
    else {
      logger.notice("resync: nothing is playing locally; the server takes over as it is")
      state = .online
      return
    }
    let offset = point.seconds
    splice = (point, index, nil)
    state = .resyncing
    logger.notice("resync: asking the server to play track \(index + 1) from \(offset) s")
    // Full precision: a server that seeks by sample (a transcoding seek) then lands on the very frame.
    let seek: JSONValue = ["timeOffset": .number(offset)]
    client.request(["playlist", "jump", .number(Double(index)), 0, 0, seek]).hop(to: eventLoop).assumeIsolated()
      .whenFailure { [self] error in abandonResync("the server refused the jump: \(error)") }
    resyncTimeout = eventLoop.assumeIsolated().scheduleTask(in: .seconds(5)) { [self] in
      abandonResync("the server's stream did not start in time")
    }
  }

  func finishResync() {
    resyncTimeout?.cancel()
    splice = nil
    state = .online
    logger.notice("resync: the server's stream took over")
    poller.pollSoon()
  }

  /// Back to local playback from the splice point: the cut track resumes at the very frame.
  func abandonResync(_ reason: String) {
    guard state == .resyncing, let splice else { return }
    resyncTimeout?.cancel()
    logger.warning("resync: \(reason); playing on from the cache")
    self.splice = nil
    state = .offline
    engine.abandonSplice(splice.point)
    if let track = queue?.tracks.first(where: { $0.index == splice.queueIndex }), let source = cachedSource(for: track),
      let id = engine.playLocal(source, startFrame: splice.point.frame)
    {
      queueIndexOfTrack[id] = splice.queueIndex
      startFrameOfTrack[id] = splice.point.frame
    }
    eventLoop.assumeIsolated().scheduleTask(in: .seconds(10)) { [self] in
      if state == .offline, connected { beginResync() }
    }
  }
}
