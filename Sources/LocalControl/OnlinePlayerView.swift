import LMSControl
import NIOCore
import Offline
import Playback
import SlimConnection
import SlimProto
import Support

/// The control API's view of a player without offline mode: the engine plays what LMS sends, and
/// the queue comes from LMS's status. A player without offline mode asks LMS nothing on its own,
/// so the status is polled only while the API is in use (a request, or a page open on the
/// events, in the last `idleSeconds`) and the player is connected (the session tells it,
/// `serverConnectionChanged`).
public final class OnlinePlayerView: ControlledPlayer {
  private enum Polling {
    case off
    /// A first status was asked for; these wait for it.
    case starting([EventLoopPromise<Void>])
    case on
  }

  private let engine: any AudioEngine
  private let poller: StatusPoller
  private let idleSeconds: UInt64
  private var eventLoop: any EventLoop { poller.client.eventLoop }
  private var connected = false
  private var polling = Polling.off
  private var lastUse: UInt64 = 0
  private var latest: LMSStatus?
  /// LMS's time of the heard track minus the engine's elapsed time, at the last status: the
  /// offset of a stream that began mid-track (a seek).
  private var startOffset: Double = 0

  // Without offline mode there is no cache to keep pins in.
  public func pin(_ kind: Pin.Kind, id: Int?, name: String?) -> EventLoopFuture<PinProgress> {
    eventLoop.makeFailedFuture(ControlError.unavailable("pins need the offline cache: offline mode is off"))
  }
  public func unpin(_ kind: Pin.Kind, id: Int) throws(PinError) -> Pin? { nil }
  public var pinProgress: [PinProgress] { [] }
  public var pinnedCoverIDs: [String] { [] }
  public func offlineLibrary() -> OfflineLibrary? { nil }
  public var serverReturn: ServerReturn { .free }
  public func chooseReturn() {}
  public func chooseStayOffline() {}
  public func edit(_ edit: QueueEdit) -> EventLoopFuture<Void> {
    eventLoop.makeFailedFuture(ControlError.unavailable("the library needs the offline cache: offline mode is off"))
  }

  public init(engine: any AudioEngine, poller: StatusPoller, idleSeconds: Int = 30) {
    self.engine = engine
    self.poller = poller
    self.idleSeconds = UInt64(idleSeconds)
    poller.observe { [unowned self] status in adopt(status) }
  }

  /// The SlimProto connection came up or went down.
  public func serverConnectionChanged(_ isConnected: Bool) {
    connected = isConnected
    if !isConnected { stopPolling() }
  }

  // MARK: ControlledPlayer

  public var controlMode: ControlMode { connected ? .online : .disconnected }
  public var queueSnapshot: LMSStatus? { latest }
  public var isPlaying: Bool { engine.isPlaying }
  public var volumePercent: Int? { latest?.volume }
  public func isCached(_ track: QueueTrack) -> Bool { false }

  public func heardQueuePosition() -> (index: Int, seconds: Double, sampleRate: Int)? {
    guard let index = latest?.currentIndex, let heard = engine.heardPosition() else { return nil }
    return (index, startOffset + Double(heard.milliseconds) / 1000, heard.sampleRate)
  }

  /// Never offline: every command goes through LMS.
  public func performLocally(_ command: ControlCommand) {}

  public func controlWanted() -> EventLoopFuture<Void> {
    lastUse = MonotonicClock.nanoseconds()
    guard connected else { return eventLoop.makeSucceededVoidFuture() }
    switch polling {
    case .on:
      return eventLoop.makeSucceededVoidFuture()
    case .starting(var waiting):
      let promise = eventLoop.makePromise(of: Void.self)
      waiting.append(promise)
      polling = .starting(waiting)
      return promise.futureResult
    case .off:
      let promise = eventLoop.makePromise(of: Void.self)
      polling = .starting([promise])
      // One status now for the answer (the poller reports only changes), then the timer.
      poller.fetch().assumeIsolated().whenComplete { [self] result in
        if case .success(let status) = result { adopt(status) }
        guard case .starting(let waiting) = polling else { return }
        polling = .on
        poller.start()
        for promise in waiting { promise.succeed() }
        checkIdle()
      }
      return promise.futureResult
    }
  }

  private func adopt(_ status: LMSStatus) {
    latest = status
    if let heard = engine.heardPosition(), status.mode == .play || status.mode == .pause {
      startOffset = max(0, status.time - Double(heard.milliseconds) / 1000)
    } else {
      startOffset = 0
    }
  }

  /// Every few seconds while polling: nobody used the API for `idleSeconds`, so stop asking LMS.
  private func checkIdle() {
    eventLoop.assumeIsolated().scheduleTask(in: .seconds(5)) { [weak self] in
      guard let self, case .on = polling else { return }
      if MonotonicClock.nanoseconds() - lastUse > idleSeconds * 1_000_000_000 {
        stopPolling()
      } else {
        checkIdle()
      }
    }
  }

  private func stopPolling() {
    if case .starting(let waiting) = polling {
      for promise in waiting { promise.succeed() }
    }
    polling = .off
    poller.stop()
    // What it showed may change unseen from now on.
    latest = nil
  }
}
