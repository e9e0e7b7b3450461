import AudioBuffers
import Decoders
import Support
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// What the decoder thread reports (delivered through `onEvent`; the engine hops to its loop).
enum DecoderEvent: Equatable, Sendable {
  case formatKnown(trackID: Int, format: AudioFormat)
  /// Every byte of the stream was decoded and every frame committed (STMd).
  case finished(trackID: Int)
  case failed(trackID: Int, message: String)
}

/// One track for the decoder thread: which codec, and the PCM parameters from `strm s`.
struct DecodeJob: Equatable, Sendable {
  enum Start: Equatable, Sendable {
    case beginning
    /// A new track that starts this many frames in (a local seek).
    case frame(Int)
    /// The same track from a new source that starts at the track's beginning: skip what the
    /// old source already delivered and go on from the exact next frame.
    case continuing
  }

  var trackID: Int
  var codec: Codec
  var pcm: PCMParameters?
  var start = Start.beginning
}

/// The decoder thread: stream ring → decoder → output ring. It sleeps on its `Wakeup` whenever it
/// cannot progress (no input, or no room), and never blocks on a lock the output holds.
final class DecoderWorker: @unchecked Sendable {
  private struct Inbox {
    var job: DecodeJob?
    var park = false
  }

  let wakeup = Wakeup()
  private let input: StreamInput
  private let output: FrameOutput
  private let inbox = Mutex(Inbox())
  private let parked: UnsafeMutablePointer<sem_t>
  private let resumed: UnsafeMutablePointer<sem_t>
  private let onEvent: @Sendable (DecoderEvent) -> Void
  /// Called after input was consumed (the stream may resume reading).
  private let inputConsumed: @Sendable () -> Void
  /// Called after frames were committed (the output may start).
  private let framesCommitted: @Sendable () -> Void

  // Decoder-thread state.
  private var decoder: (any AudioDecoder)?
  private var job: DecodeJob?
  private var reportedFormat = false

  init(
    input: StreamInput, output: FrameOutput, onEvent: @escaping @Sendable (DecoderEvent) -> Void,
    inputConsumed: @escaping @Sendable () -> Void, framesCommitted: @escaping @Sendable () -> Void
  ) {
    self.input = input
    self.output = output
    self.onEvent = onEvent
    self.inputConsumed = inputConsumed
    self.framesCommitted = framesCommitted
    parked = .allocate(capacity: 1)
    resumed = .allocate(capacity: 1)
    sem_init(parked, 0, 0)
    sem_init(resumed, 0, 0)
  }

  deinit {
    sem_destroy(parked)
    sem_destroy(resumed)
    parked.deallocate()
    resumed.deallocate()
  }

  func startThread() {
    RealtimeThread.start(name: "slimplay-decode", stackBytes: 512 * 1024) { [self] in run() }
  }

  // MARK: Control side

  /// Queues the next track; the thread picks it up when the current one is finished.
  func enqueue(_ job: DecodeJob) {
    inbox.withLock { $0.job = job }
    wakeup.signalAlways()
  }

  /// Stops the thread at a safe point and returns once it waits there, so the control side may
  /// reset the rings. Every `park()` needs an `unpark()`.
  func park() {
    inbox.withLock { $0.park = true }
    wakeup.signalAlways()
    sem_wait(parked)
  }

  /// While parked: forget the current decoder and any queued job.
  func resetWhileParked() {
    decoder = nil
    job = nil
    inbox.withLock { $0.job = nil }
  }

  func unpark() {
    sem_post(resumed)
  }

  // MARK: Decoder thread

  private func run() {
    while true {
      let (parkRequested, next) = inbox.withLock { box -> (Bool, DecodeJob?) in
        let park = box.park
        box.park = false
        var next: DecodeJob?
        if decoder == nil, !park {
          next = box.job
          box.job = nil
        }
        return (park, next)
      }
      if parkRequested {
        sem_post(parked)
        sem_wait(resumed)
        continue
      }
      if let next { install(next) }
      guard let decoder, let job else {
        wakeup.wait(timeoutMilliseconds: 1000) { self.inbox.withLock { $0.job == nil && !$0.park } }
        continue
      }
      if output.freeFrames < decoder.minimumFreeFrames {
        // The output wakes us once a quarter of its ring is free; the timeout is a backstop.
        let refill = max(decoder.minimumFreeFrames, output.refillFrames)
        wakeup.wait(timeoutMilliseconds: 1000) { self.output.freeFrames < refill }
        continue
      }
      let before = output.ring.totalWritten
      let progress: DecodeProgress
      do {
        progress = try decoder.decode(from: input, to: output)
      } catch {
        onEvent(.failed(trackID: job.trackID, message: error.description))
        finishJob()
        continue
      }
      inputConsumed()
      if output.ring.totalWritten != before { framesCommitted() }
      if !reportedFormat, let format = decoder.format {
        reportedFormat = true
        onEvent(.formatKnown(trackID: job.trackID, format: format))
      }
      switch progress {
      case .decoded:
        continue
      case .needsInput:
        // The decoder wants more than is buffered (often the rest of a frame): sleep until the
        // stream adds bytes, not merely while the ring is empty, or a stream arriving at play
        // speed keeps this thread spinning.
        // With audio queued for the output there is no hurry: wait for a worthwhile chunk
        // (32 KiB) instead of waking for every network read of a stream that arrives at play
        // speed (radio, transcoding), but never longer than a quarter of what is queued.
        let buffered = input.ring.fill
        let rate = max(1, decoder.format?.sampleRate ?? 44100)
        let queuedMilliseconds = output.bufferedFrames * 1000 / rate
        let patient = queuedMilliseconds >= 200
        let wanted = patient ? min(buffered + 32 * 1024, input.ring.capacity / 2) : buffered + 1
        input.wantedFill = wanted
        output.decoderWaitsForInput = true
        wakeup.wait(timeoutMilliseconds: Int32(patient ? min(500, queuedMilliseconds / 4) : 200)) {
          self.input.ring.fill < wanted && !self.input.hasEnded
        }
        input.wantedFill = 0
        output.decoderWaitsForInput = false
      case .finished:
        onEvent(.finished(trackID: job.trackID))
        finishJob()
      }
    }
  }

  private func install(_ next: DecodeJob) {
    do {
      decoder = try DecoderFactory.make(codec: next.codec, pcm: next.pcm)
      job = next
      reportedFormat = false
      switch next.start {
      case .beginning: output.beginTrack(id: next.trackID)
      case .frame(let frame): output.beginTrack(id: next.trackID, startFrame: frame)
      case .continuing: output.continueTrack(skippingFrames: output.framesCommittedInTrack)
      }
    } catch {
      onEvent(.failed(trackID: next.trackID, message: error.description))
    }
  }

  private func finishJob() {
    decoder = nil
    job = nil
  }
}
