import Logging
import SlimProto

/// A playback engine with no audio pipeline: it answers every transport command the way a player
/// that cannot decode anything must (STMf on stop, STMp/STMr on pause/unpause, STMn for a stream
/// it cannot play), so a server always gets the replies it waits for.
public final class TransportOnlyEngine: PlaybackEngine {
  public weak var reporter: (any PlaybackReporter)?
  public let maximumSampleRate: Int
  private let logger: Logger

  public init(maximumSampleRate: Int, logger: Logger) {
    self.maximumSampleRate = maximumSampleRate
    self.logger = logger
  }

  public func handle(_ message: ServerMessage) {
    guard case .stream(let command) = message else { return }
    switch command.command {
    case .start:
      reporter?.report(.flushed)
      logger.error("cannot play stream (format \(command.format)): this build has no audio pipeline")
      reporter?.report(.notSupported)
    case .stop:
      reporter?.report(.flushed)
    case .pause where command.value == 0:
      reporter?.report(.paused)
    case .unpause:
      reporter?.report(.resumed)
    case .pause, .flush, .skipAhead, .status:
      break
    }
  }

  public func snapshot() -> PlaybackSnapshot { PlaybackSnapshot() }
}
