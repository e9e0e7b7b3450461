import LMSControl
import NIOCore
import Offline

/// Where the control API's commands go.
public enum ControlMode: String, Equatable, Sendable {
  /// Through LMS, which stays the authority over the queue.
  case online
  /// The server is away but playback has not switched to the cache: still through LMS.
  case disconnected
  /// Applied to local playback from the cache.
  case offline
  /// Briefly: LMS is being told where playback is; commands wait.
  case resyncing
}

/// The player as the control API reads it: its queue, where it is, and what commands reach.
/// The offline coordinator is one (with a cache and local playback); `OnlinePlayerView` is the
/// other, when offline mode is off. Calls come on the control event loop.
public protocol ControlledPlayer: AnyObject {
  var controlMode: ControlMode { get }
  /// The last queue view from LMS (or the saved one, resumed offline).
  var queueSnapshot: LMSStatus? { get }
  /// The queue index and seconds into the track being heard.
  func heardQueuePosition() -> (index: Int, seconds: Double, sampleRate: Int)?
  var isPlaying: Bool { get }
  /// 0…100.
  var volumePercent: Int? { get }
  /// Whether the track would play without the server.
  func isCached(_ track: QueueTrack) -> Bool
  /// Applies a command to local playback; only asked in `.offline` mode.
  func performLocally(_ command: ControlCommand)
  /// The API is being used: have the queue current (see `OnlinePlayerView`). Completes when it is.
  func controlWanted() -> EventLoopFuture<Void>
  /// Pins the album, playlist or track (see `OfflineCoordinator+Pins`); fails where there is no
  /// cache to keep it in.
  func pin(_ kind: Pin.Kind, id: Int?, name: String?) -> EventLoopFuture<PinProgress>
  func unpin(_ kind: Pin.Kind, id: Int) throws(PinError) -> Pin?
  var pinProgress: [PinProgress] { get }
  /// The covers of pinned music, kept with it: each once, sorted, the same array until the pins change.
  var pinnedCoverIDs: [String] { get }
  /// What the cache holds (nil: no cache).
  func offlineLibrary() -> OfflineLibrary?
  /// A queue edit: LMS's command online, the player's own queue offline.
  func edit(_ edit: QueueEdit) -> EventLoopFuture<Void>
  /// With `--return-to-server ask`, while the player is kept off the server.
  var serverReturn: ServerReturn { get }
  func chooseReturn()
  func chooseStayOffline()
}

/// Where a command is carried out.
protocol CommandBackend {
  func perform(_ command: ControlCommand) -> EventLoopFuture<Void>
}

/// Commands as LMS requests: the server changes its queue and tells the player.
struct LMSCommandBackend: CommandBackend {
  let client: LMSClient

  func perform(_ command: ControlCommand) -> EventLoopFuture<Void> {
    client.request(command.lmsCommand).map { _ in }.flatMapErrorThrowing { error in
      throw ControlError.unavailable("the server did not take the command: \(error)")
    }
  }
}

/// Commands applied to local playback.
struct LocalCommandBackend: CommandBackend {
  let player: any ControlledPlayer
  let eventLoop: any EventLoop

  func perform(_ command: ControlCommand) -> EventLoopFuture<Void> {
    player.performLocally(command)
    return eventLoop.makeSucceededVoidFuture()
  }
}

extension OfflineCoordinator: ControlledPlayer {
  public var controlMode: ControlMode {
    switch offlineState {
    case .online, .handingBack: .online
    case .disconnected: .disconnected
    case .offline: .offline
    case .resyncing, .followingGroup, .checkingGroupStream, .checkingServer: .resyncing
    }
  }

  public func offlineLibrary() -> OfflineLibrary? { library }

  /// The coordinator polls LMS whenever it is connected: its view is always current.
  public func controlWanted() -> EventLoopFuture<Void> { client.eventLoop.makeSucceededVoidFuture() }

  public func performLocally(_ command: ControlCommand) {
    switch command {
    case .play: localResume()
    case .pause: localPause()
    case .toggle: isPlaying ? localPause() : localResume()
    case .next: localSkip(by: 1)
    case .previous: localSkip(by: -1)
    case .seek(let seconds): localSeek(to: seconds)
    case .volume(let percent): localVolume(percent)
    }
  }
}
