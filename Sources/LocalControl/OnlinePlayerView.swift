import LMSControl
import NIOCore
import Playback
import SlimConnection
import SlimProto

/// The control API's view of a player without offline mode: the engine plays what LMS sends, and
/// the queue comes from LMS's status, polled only while connected. It stands between the session
/// and the engine to see the connection come and go; everything else passes through.
public final class OnlinePlayerView: PlaybackEngine, ControlledPlayer {
  private let engine: StreamingEngine
  private let poller: StatusPoller
  private var connected = false
  /// LMS's time of the heard track minus the engine's elapsed time at the last poll: the offset
  /// of a stream that began mid-track (a seek).
  private var startOffset: Double = 0

  public init(engine: StreamingEngine, poller: StatusPoller) {
    self.engine = engine
    self.poller = poller
    poller.observe { [unowned self] status in
      if let heard = engine.heardPosition(), status.mode == .play || status.mode == .pause {
        startOffset = max(0, status.time - Double(heard.milliseconds) / 1000)
      } else {
        startOffset = 0
      }
    }
  }

  // MARK: PlaybackEngine: the session's calls go to the engine.

  public var reporter: (any PlaybackReporter)? {
    get { engine.reporter }
    set { engine.reporter = newValue }
  }
  public var maximumSampleRate: Int { engine.maximumSampleRate }
  public var streamHealth: StreamHealth { engine.streamHealth }
  public func handle(_ message: ServerMessage) { engine.handle(message) }
  public func snapshot() -> PlaybackSnapshot { engine.snapshot() }

  public func serverConnectionChanged(_ isConnected: Bool) {
    connected = isConnected
    engine.serverConnectionChanged(isConnected)
    if isConnected { poller.start() } else { poller.stop() }
  }

  // MARK: ControlledPlayer

  public var controlMode: ControlMode { connected ? .online : .disconnected }
  public var queueSnapshot: LMSStatus? { poller.latest }
  public var isPlaying: Bool { engine.isPlaying }
  public var volumePercent: Int? { poller.latest?.volume }
  public func isCached(_ track: QueueTrack) -> Bool { false }

  public func heardQueuePosition() -> (index: Int, seconds: Double, sampleRate: Int)? {
    guard let index = poller.latest?.currentIndex, let heard = engine.heardPosition() else { return nil }
    return (index, startOffset + Double(heard.milliseconds) / 1000, heard.sampleRate)
  }

  /// Never offline: every command goes through LMS.
  public func performLocally(_ command: ControlCommand) {}
}
