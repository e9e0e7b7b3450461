import LMSControl
import Logging
import NIOCore
import NIOPosix
import Playback
import SlimConnection
import SlimProto
import Support
import Synchronization
import TestSupport
import Testing

@testable import Offline

/// The coordinator against a fake engine: what it asks of the engine and what it lets through to
/// the session, with the cache on disk and no server.
@Suite struct OfflineCoordinatorTests {
  static let server = "lms.test:9000"
  static let queue = (0..<3).map { index in
    QueueTrack(
      index: index, id: 100 + index, title: "Track \(index + 1)", duration: 180, url: "file:///music/\(index).flac",
      type: "flc", fileSize: 1000 + index)
  }

  /// A coordinator on its own event loop, with each queue track cached and, when `saved`, the
  /// state a player saved before it was restarted without its server.
  final class Rig: @unchecked Sendable {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let folder = TemporaryDirectory()
    let engine = FakeEngine()
    let store: CacheStore
    var coordinator: OfflineCoordinator!
    let forwarded = Recorded()

    init(saved: SavedPlayback?) throws {
      let logger = Logger(label: "test")
      let loop = group.next()
      store = CacheStore(directory: folder.path + "/cache", capacityBytes: 1 << 20, logger: logger)
      store.load()
      for track in OfflineCoordinatorTests.queue {
        let partial = folder.path + "/part"
        try FileIO.writeAtomically(partial, Array(repeating: UInt8(track.index), count: track.fileSize!))
        let key = CacheKey(server: OfflineCoordinatorTests.server, url: track.url, fileSize: track.fileSize)
        #expect(
          store.add(
            key, url: track.url, type: track.type, from: partial, checksum: CacheFiles.checksum(partial)!,
            protected: []))
      }
      let savedPath = folder.path + "/playback.json"
      if let saved { try saved.save(to: savedPath) }
      let client = LMSClient(eventLoop: loop, playerID: "02:00:00:00:00:09") { nil }
      let store = store
      let engine = engine
      coordinator = try loop.submit {
        let coordinator = OfflineCoordinator(
          engine: engine, poller: StatusPoller(client: client, logger: logger), client: client, store: store,
          downloads: DownloadManager(
            eventLoop: loop, store: store, logger: logger, endpoint: { nil }, playbackIsFilling: { false }),
          configuration: .init(savedPlaybackPath: savedPath, resumeAfter: .milliseconds(20)), eventLoop: loop,
          logger: logger)
        let forwarded = self.forwarded
        coordinator.onEvent = { event in forwarded.events.withLock { $0.append(event) } }
        coordinator.start()
        return coordinator
      }.wait()
    }

    func path(of index: Int) -> String {
      let track = OfflineCoordinatorTests.queue[index]
      return store.path(of: CacheKey(server: OfflineCoordinatorTests.server, url: track.url, fileSize: track.fileSize))
    }

    func run<T: Sendable>(_ body: @escaping @Sendable (OfflineCoordinator) -> T) -> T {
      let coordinator = coordinator!
      return try! group.next().submit { body(coordinator) }.wait()
    }

    /// Online, the server's queue known and engine track 1 created for its first entry.
    func playsTheFirstOfTheQueue() {
      run { coordinator in
        coordinator.serverIdentity = OfflineCoordinatorTests.server
        coordinator.machine.ledger.record(
          LMSStatus(mode: .play, currentIndex: 0, trackCount: 3, tracks: OfflineCoordinatorTests.queue))
      }
      engineSays(.trackCreated(id: 1))
    }

    /// An event from the engine, on the loop, as the engine sends it.
    func engineSays(_ event: EngineEvent) { run { _ in self.engine.onEvent?(event) } }

    func close() {
      run { $0.shutDown() }
      try? group.syncShutdownGracefully()
      folder.remove()
    }
  }

  static let saved = SavedPlayback(
    server: server, playlistTimestamp: 1, index: 1, position: 12.5, sampleRate: 44100, trackCount: 3, queue: queue)

  @Test func aPlayerRestartedWithoutItsServerResumesFromTheCacheWhereItWas() throws {
    let rig = try Rig(saved: Self.saved)
    defer { rig.close() }
    #expect(eventually(within: 5) { rig.engine.calls.contains { if case .playLocal = $0 { true } else { false } } })
    // The saved track from the saved frame (12.5 s at 44.1 kHz), nothing else first but a stop.
    #expect(rig.engine.calls == [.stopLocal, .playLocal(path: rig.path(of: 1), startFrame: 551_250)])
    #expect(rig.run { $0.offlineState } == .offline)
  }

  @Test func offlineTheEnginesReportsAreHeldBackAndItsTrackEventsGoOn() throws {
    let rig = try Rig(saved: Self.saved)
    defer { rig.close() }
    #expect(eventually(within: 5) { rig.run { $0.offlineState } == .offline })
    rig.engineSays(.status(.trackStarted))
    rig.engineSays(.message(.disconnected(.closedNormally)))
    rig.engineSays(.trackStarted(id: 1))
    #expect(rig.forwarded.events.withLock { $0 } == [.trackStarted(id: 1)])
  }

  @Test func onlineEverythingTheEngineSaysReachesTheSession() throws {
    let rig = try Rig(saved: nil)
    defer { rig.close() }
    let said: [EngineEvent] = [
      .trackCreated(id: 1), .status(.connecting), .message(.disconnected(.closedNormally)), .status(.trackStarted),
      .trackStarted(id: 1), .powerChanged(on: false),
    ]
    for event in said { rig.engineSays(event) }
    #expect(rig.forwarded.events.withLock { $0 } == said)
    #expect(rig.engine.calls.isEmpty)
  }

  /// LMS streams without a length: the frames a decoded track ends with tell a track the server
  /// cut (it continues from its cached copy) from one that played whole (the next cached follows).
  @Test(arguments: [(10.0, true), (179.95, false)])
  func theFramesOfADecodedTrackTellACutFromAWholeOne(seconds: Double, cut: Bool) throws {
    let rig = try Rig(saved: nil)
    defer { rig.close() }
    rig.playsTheFirstOfTheQueue()
    rig.engine.engineState.output = .playing
    rig.run { $0.serverConnectionChanged(false) }
    #expect(rig.run { $0.offlineState } == .offline)
    rig.engineSays(.trackDecoded(id: 1, frames: Int(seconds * 44100), sampleRate: 44100))
    let expected: FakeEngine.Call =
      cut ? .continueTrack(id: 1, path: rig.path(of: 0)) : .playLocal(path: rig.path(of: 1), startFrame: 0)
    #expect(rig.engine.calls == [expected])
  }

  /// Handed back after an outage, the cached copy played the heard track to its end and the
  /// server's next track is late: the cache can go on, so a lost link is noticed before the
  /// output runs dry (the starving rule), as online.
  @Test(arguments: [true, false])
  func handingBackALateNextTrackThatIsCachedCountsAsStarving(handingBack: Bool) throws {
    let rig = try Rig(saved: nil)
    defer { rig.close() }
    rig.playsTheFirstOfTheQueue()
    rig.run { coordinator in
      if handingBack {
        coordinator.machine.state = .handingBack(.init(engineTrack: 1, queueIndex: 0, requestedSeconds: 100))
      } else {
        coordinator.machine.state = .resyncing(.init(engineTrack: 1, queueIndex: 0, requestedSeconds: 100))
      }
      let now = MonotonicClock.nanoseconds()
      coordinator.nextTrackWait.trackStarted(1, at: now - 30_000_000_000)
      coordinator.nextTrackWait.trackDecoded(1, at: now - 2_000_000_000)
    }
    rig.engine.health = StreamHealth(playingWithoutStream: true)
    let health = rig.run { $0.streamHealth }
    // Resyncing, the server has not taken over yet: nothing is awaited from it.
    #expect(health.cacheCanContinue == handingBack)
    #expect((health.waitingForNextTrackSeconds ?? 0) >= (handingBack ? 2 : 0))
  }

  /// An edit that comes the moment a play has started, before anything is heard, keeps the track
  /// under way (its first frames may be out already) rather than starting it again.
  @Test func anEditRightAfterAPlayKeepsTheTrackUnderWay() throws {
    let rig = try Rig(saved: nil)
    defer { rig.close() }
    rig.run { $0.serverIdentity = OfflineCoordinatorTests.server }
    let queue = OfflineCoordinatorTests.queue
    try rig.run { $0.edit(.replace(Array(queue[0..<2]), startAt: 0)) }.wait()
    #expect(rig.engine.calls == [.stopLocal, .playLocal(path: rig.path(of: 0), startFrame: 0)])
    rig.engine.playing = true  // playing, nothing heard yet
    try rig.run { $0.edit(.append([queue[2]])) }.wait()
    // What was queued behind the first track goes, its next is queued behind it again: nothing stops
    // and nothing starts the first track over.
    let after = Array(rig.engine.calls.dropFirst(2))
    #expect(after == [.dropTracks(after: 1), .playLocal(path: rig.path(of: 1), startFrame: 0)])
    #expect(rig.run { $0.machine.ledger.tracks.map(\.id) } == [100, 101, 102])
  }

  @Test func offlineTheListenersCommandsDriveTheEngine() throws {
    let rig = try Rig(saved: Self.saved)
    defer { rig.close() }
    #expect(eventually(within: 5) { rig.run { $0.offlineState } == .offline })
    let id = rig.engine.lastLocalID
    // Heard: 20 s into the saved track (it began 12.5 s in).
    rig.engine.heard = HeardPosition(trackID: id, milliseconds: 7500, frames: 330_750, sampleRate: 44100)
    rig.engine.playing = true
    #expect(rig.run { $0.heardQueuePosition()?.index } == 1)
    #expect(rig.run { $0.heardQueuePosition()?.seconds } == 20)
    rig.run { $0.localPause() }
    rig.run { $0.localSkip(by: 1) }
    rig.run { $0.localVolume(0) }
    #expect(
      Array(rig.engine.calls.dropFirst(2)) == [
        .pauseLocal, .stopLocal, .playLocal(path: rig.path(of: 2), startFrame: 0), .setVolume(left: 0, right: 0),
      ])
    // Past the queue's end there is nothing cached to skip to: the engine is left alone.
    rig.engine.heard = HeardPosition(
      trackID: rig.engine.lastLocalID, milliseconds: 1000, frames: 44100, sampleRate: 44100)
    let before = rig.engine.calls.count
    rig.run { $0.localSkip(by: 1) }
    #expect(rig.engine.calls.count == before)
  }
}

/// What the coordinator passed on to the session.
final class Recorded: Sendable {
  let events = Mutex<[EngineEvent]>([])
}

/// An engine that records what it is asked and reports what the test sets.
final class FakeEngine: AudioEngine, @unchecked Sendable {
  enum Call: Equatable {
    case continueTrack(id: Int, path: String)
    case playLocal(path: String, startFrame: Int)
    case stopLocal, pauseLocal, resumeLocal, haltOutput, abandonLiveStream
    case setVolume(left: UInt32, right: UInt32)
    case dropTracks(after: Int)
    case nudge(Int)
    case handle(ServerMessage)
  }

  private let log = Mutex<[Call]>([])
  var calls: [Call] { log.withLock { $0 } }
  var onEvent: ((EngineEvent) -> Void)?
  var heard: HeardPosition?
  var playing = false
  var engineState = AudioEngineState()
  private(set) var lastLocalID = 0
  let maximumSampleRate = 192_000

  private func record(_ call: Call) { log.withLock { $0.append(call) } }

  func handle(_ message: ServerMessage) { record(.handle(message)) }
  func snapshot(at instant: UInt64) -> PlaybackSnapshot { PlaybackSnapshot() }
  func state(at now: UInt64) -> AudioEngineState {
    var state = engineState
    state.heard = heard
    return state
  }
  func heardPosition(at now: UInt64) -> HeardPosition? { heard }
  func trackProgress() -> [TrackProgress] { [] }
  var isPlaying: Bool { playing }
  var streamStalledSeconds: Double? { nil }
  var health = StreamHealth()
  var streamHealth: StreamHealth { health }
  func continueTrack(_ id: Int, from source: LocalSource) -> Bool {
    record(.continueTrack(id: id, path: source.path))
    return true
  }
  func playLocal(_ source: LocalSource, startFrame: Int) -> Int? {
    record(.playLocal(path: source.path, startFrame: startFrame))
    lastLocalID += 1
    return lastLocalID
  }
  func stopLocal() { record(.stopLocal) }
  func pauseLocal() { record(.pauseLocal) }
  func resumeLocal() { record(.resumeLocal) }
  func setVolume(left: UInt32, right: UInt32) { record(.setVolume(left: left, right: right)) }
  func dropTracks(after id: Int) { record(.dropTracks(after: id)) }
  func abandonLiveStream() { record(.abandonLiveStream) }
  func haltOutput() { record(.haltOutput) }
  func nudgeOutput(frames: Int) { record(.nudge(frames)) }
}
