import AudioOutput
import Decoders
import Logging
import NIOCore
import NIOPosix
import Synchronization

@testable import Playback
@testable import SlimConnection
@testable import SlimProto

/// What the engine told the session and the offline side, in order.
final class EventLog: Sendable {
  enum Entry: Equatable {
    case status(StatusEvent)
    case created(Int), started(Int), decoded(Int), failed(Int), streamFailed(Int), ended
  }
  private let entries = Mutex<[Entry]>([])

  var all: [Entry] { entries.withLock { $0 } }
  func contains(_ entry: Entry) -> Bool { all.contains(entry) }
  private func add(_ entry: Entry) { entries.withLock { $0.append(entry) } }

  func record(_ event: EngineEvent) {
    switch event {
    case .status(let status, _): add(.status(status))
    case .trackCreated(let id): add(.created(id))
    case .trackStarted(let id): add(.started(id))
    case .trackDecoded(let id, _, _): add(.decoded(id))
    case .trackFailed(let id): add(.failed(id))
    case .streamFailed(let id, _): add(.streamFailed(id))
    case .playbackEnded: add(.ended)
    case .message, .powerChanged, .streamRequested: break
    }
  }
}

/// A streaming engine built in this process over a `MemorySink`, driven on its own event loop.
final class EngineHarness: Sendable {
  let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
  let sink: MemorySink
  let log = EventLog()
  let engine: StreamingEngine

  init(
    allowance: Int? = nil, streamBufferBytes: Int = 64 << 10, dsd: DSDOutput = .pcm,
    output: OutputPlayer.Configuration = .init(), sinkBufferFrames: Int = 0
  ) throws {
    let sink = MemorySink(allowance: allowance, bufferFrames: sinkBufferFrames)
    self.sink = sink
    let loop = group.next()
    let log = self.log
    engine = try loop.submit {
      let engine = StreamingEngine(
        configuration: .init(
          pipeline: .init(streamBufferBytes: streamBufferBytes, outputBufferBytes: 256 << 10, output: output, dsd: dsd),
          maximumSampleRate: 192_000),
        device: sink, eventLoop: loop, logger: Logger(label: "test"))
      engine.onEvent = { log.record($0) }
      return engine
    }.wait()
  }

  /// Runs `body` on the engine's loop and returns its result.
  func run<T: Sendable>(_ body: @escaping @Sendable (StreamingEngine) -> T) -> T {
    let engine = self.engine
    return try! group.next().submit { body(engine) }.wait()
  }

  func close() {
    run { $0.shutDown() }
    try? group.syncShutdownGracefully()
  }
}
