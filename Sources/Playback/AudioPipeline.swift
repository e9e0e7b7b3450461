import AudioBuffers
import AudioOutput
import Decoders
import Logging
import NIOCore
import Resampling
import StreamFetch
import Support

/// The audio path of one player: a `StreamSource` fills the stream ring, the decoder thread turns
/// it into frames in the output ring, the output thread plays them.
///
/// Life cycle: created → `start()` (both threads run) → `stop()` (both threads end; the device is
/// closed). In between, `reset` is the one place that holds the decoder, drains the rings and lets
/// it go on. Control-side calls come from the control event loop; every wait on another thread is
/// bounded (`waitMilliseconds`).
public final class AudioPipeline {
  public enum Lifecycle: Equatable, Sendable {
    case created
    case running
    case stopped
  }

  /// What a reset does to the output ring, beyond draining the stream side.
  public enum OutputReset: Equatable, Sendable {
    /// Frames already decoded play on (a new stream or source follows them).
    case keep
    /// The output stops and drops everything.
    case everything
    /// Frames of tracks after `id` are dropped; `id` and those before it play on.
    case tracks(after: Int)
  }

  public struct Configuration: Sendable {
    public var streamBufferBytes: Int
    public var outputBufferBytes: Int
    public var output: OutputPlayer.Configuration
    public var resampling: ResamplingSettings?
    /// How DSD tracks are played (`-D`).
    public var dsd: DSDOutput
    /// The longest any call here waits for the decoder or output thread.
    public var waitMilliseconds = 2000

    public init(
      streamBufferBytes: Int, outputBufferBytes: Int, output: OutputPlayer.Configuration = .init(),
      resampling: ResamplingSettings? = nil, dsd: DSDOutput = .pcm
    ) {
      self.streamBufferBytes = streamBufferBytes
      self.outputBufferBytes = outputBufferBytes
      self.output = output
      self.resampling = resampling
      self.dsd = dsd
    }
  }

  public private(set) var lifecycle = Lifecycle.created
  let input: StreamInput
  let output: FrameOutput
  let fetcher: StreamFetcher
  let fileStreamer: FileStreamer
  let worker: DecoderWorker
  let player: OutputPlayer
  let device: any OutputDevice
  private let configuration: Configuration
  private let logger: Logger
  private var threads: [RealtimeThread] = []

  init(
    configuration: Configuration, device: any OutputDevice, eventLoop: any EventLoop, logger: Logger,
    decoderEvent: @escaping @Sendable (DecoderEvent) -> Void, outputEvent: @escaping @Sendable (OutputEvent) -> Void
  ) {
    self.configuration = configuration
    self.device = device
    self.logger = logger
    input = StreamInput(capacity: configuration.streamBufferBytes)
    let frames = max(4096, configuration.outputBufferBytes / OutputFrames.bytesPerFrame)
    output = FrameOutput(capacityFrames: frames)
    let fetcher = StreamFetcher(eventLoop: eventLoop, input: input, logger: logger)
    let fileStreamer = FileStreamer(eventLoop: eventLoop, input: input, logger: logger)
    self.fetcher = fetcher
    self.fileStreamer = fileStreamer
    let decoderWakeup = Wakeup()
    let hold = ProducerHold(wakeup: decoderWakeup)
    let player = OutputPlayer(
      output: output, device: device, configuration: configuration.output, consumed: decoderWakeup,
      producerHold: hold, onEvent: outputEvent)
    self.player = player
    worker = DecoderWorker(
      input: input, output: output, wakeup: decoderWakeup, hold: hold, resampling: configuration.resampling,
      dsd: configuration.dsd,
      onEvent: decoderEvent,
      // Only the open source waits for room; the other one ignores this.
      inputConsumed: {
        fetcher.consumerDrained()
        fileStreamer.consumerDrained()
      },
      framesCommitted: { player.framesAvailable() })
    fileStreamer.dataArrived = { decoderWakeup.signalAlways() }
    fileStreamer.failed = { message in logger.error("file: \(message)") }
  }

  /// Starts the decoder and output threads.
  public func start() {
    precondition(lifecycle == .created, "a pipeline starts once")
    threads = [worker.startThread(), player.startThread()]
    lifecycle = .running
  }

  /// Closes the source, ends both threads and closes the device. False when the output thread
  /// was blocked in a device write past the limit: it is left to end on its own.
  @discardableResult
  public func stop() -> Bool {
    guard lifecycle == .running else {
      lifecycle = .stopped
      return true
    }
    lifecycle = .stopped
    closeSource()
    let wait = configuration.waitMilliseconds
    worker.requestStop()
    let decoderEnded = threads[0].join(timeoutMilliseconds: wait)
    let outputClosed = player.shutDown(timeoutMilliseconds: wait)
    // Not closed in time (blocked in a write): detached at once, to end when the write returns.
    let outputEnded = threads[1].join(timeoutMilliseconds: outputClosed ? wait : 0) && outputClosed
    threads = []
    if !decoderEnded { logger.error("decoder thread did not end within \(wait) ms") }
    return outputEnded
  }

  // MARK: Sources

  public var sourceIsOpen: Bool { fetcher.isOpen || fileStreamer.isOpen }

  /// Stops whichever source writes into the stream ring.
  public func closeSource() {
    fetcher.close()
    fileStreamer.close()
  }

  /// Starts a network stream (`strm s`); any other source is closed first.
  func openStream(host: String, port: Int, request: [UInt8], holdBody: Bool, tls: Bool, oggMetadata: Bool) {
    fileStreamer.close()
    fetcher.open(host: host, port: port, request: request, holdBody: holdBody, tls: tls, oggMetadata: oggMetadata)
  }

  /// Starts feeding a cached file; any other source is closed first. False when it cannot be opened.
  func openFile(path: String) -> Bool {
    fetcher.close()
    return fileStreamer.open(path: path)
  }

  // MARK: Reset

  /// Closes the source, holds the decoder, drops the stream ring and the decoder's track and
  /// job, applies `outputReset`, and lets the decoder go on. `reopenInput`: a new stream follows.
  /// False when a thread did not answer in time (logged); the reset then completes when it does,
  /// or, for the decoder, not at all.
  @discardableResult
  public func reset(output outputReset: OutputReset = .keep, reopenInput: Bool = false) -> Bool {
    closeSource()
    let wait = configuration.waitMilliseconds
    guard lifecycle == .running else {
      resetStreamSide(reopenInput: reopenInput)
      return true
    }
    guard worker.hold.hold(timeoutMilliseconds: wait) else {
      logger.error("decoder thread did not stop within \(wait) ms; buffers not reset")
      return false
    }
    resetStreamSide(reopenInput: reopenInput)
    let answered: Bool
    switch outputReset {
    case .keep:
      worker.hold.release()
      return true
    case .everything:
      answered = player.stopAndFlush(releasingHold: true, timeoutMilliseconds: wait)
    case .tracks(let id):
      // Decoder held: the boundaries and the write position stand still.
      let cut = output.boundaries.first(where: { $0.trackID > id && $0.isNewTrack })?.frame ?? output.writeFrame
      answered = player.flush(from: cut, releasingHold: true, timeoutMilliseconds: wait)
    }
    if !answered {
      // The output thread lets the decoder go once it has applied the flush.
      logger.warning("output: \(device.name) busy in a write for \(wait) ms; the flush completes when it returns")
    }
    return answered
  }

  /// With the decoder parked (or not running): the stream side back to empty.
  private func resetStreamSide(reopenInput: Bool) {
    input.ring.discardAll()
    worker.resetWhileParked()
    if reopenInput { input.reopen() }
  }
}
