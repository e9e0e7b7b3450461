import AudioBuffers
import CSupport
import Decoders
import Resampling
import Support
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// What the decoder thread reports about job `job` (delivered through `onEvent`; the engine hops
/// to its loop, so an event can arrive after its job was cancelled: the number tells).
enum DecoderEvent: Equatable, Sendable {
  /// `content`: what the stream turned out to hold, when the decoder went by it.
  case formatKnown(job: Int, format: AudioFormat, content: String?)
  /// Every byte of the stream was decoded and every frame committed (STMd): `frames` of the track,
  /// and the damage the decoder read past.
  case finished(job: Int, frames: Int, damage: StreamDamage)
  /// The decoder gave up on the track after committing `frames` of it.
  case failed(job: Int, frames: Int, message: String)
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
    /// An earlier track, after the decoder had begun a later one (since dropped): its first
    /// `frames` frames, in `format`, are in the output; go on from the exact next frame.
    case resuming(frames: Int, format: AudioFormat)
  }

  /// Unique per job, so events of a cancelled job are told from those of its replacement.
  var number: Int
  var trackID: Int
  var codec: Codec
  var pcm: PCMParameters?
  var start = Start.beginning
}

/// The decoder thread: stream ring → decoder → output ring. It sleeps on its `Wakeup` whenever it
/// cannot progress (no input, or no room), never blocks on a lock the output holds, parks while
/// `hold` is held, and ends when its pipeline stops.
final class DecoderWorker: Sendable {
  private struct Inbox {
    var job: DecodeJob?
    var stop = false
  }

  /// Decoder-thread state. Touched by the decoder thread, or by the control side while the
  /// decoder is parked (`resetWhileParked`); the hold orders the two.
  private struct Current {
    var decoder: (any AudioDecoder)?
    var job: DecodeJob?
    var reportedFormat = false
  }

  let wakeup: Wakeup
  let hold: ProducerHold
  private let input: StreamInput
  private let output: FrameOutput
  private let resampling: ResamplingSettings?
  private let dsd: DSDOutput
  private let inbox = Mutex(Inbox())
  private let current = Mutex(Current())
  private let onEvent: @Sendable (DecoderEvent) -> Void
  /// Called after input was consumed (the stream may resume reading).
  private let inputConsumed: @Sendable () -> Void
  /// Called after frames were committed (the output may start).
  private let framesCommitted: @Sendable () -> Void

  init(
    input: StreamInput, output: FrameOutput, wakeup: Wakeup, hold: ProducerHold, resampling: ResamplingSettings? = nil,
    dsd: DSDOutput = .pcm, onEvent: @escaping @Sendable (DecoderEvent) -> Void,
    inputConsumed: @escaping @Sendable () -> Void, framesCommitted: @escaping @Sendable () -> Void
  ) {
    self.input = input
    self.output = output
    self.resampling = resampling
    self.dsd = dsd
    self.wakeup = wakeup
    self.hold = hold
    self.onEvent = onEvent
    self.inputConsumed = inputConsumed
    self.framesCommitted = framesCommitted
  }

  static let niceness: Int32 = 5

  func startThread() -> RealtimeThread {
    RealtimeThread(name: "slimplay-decode", stackBytes: 512 * 1024) { [self] in
      // Seconds ahead of the output, the decoder can wait: where CPU time is short (a slow board,
      // a CPU quota), the output thread is served first.
      _ = slimplay_set_thread_nice(Self.niceness)
      run()
    }
  }

  // MARK: Control side

  /// Queues the next track; the thread picks it up when the current one is finished.
  func enqueue(_ job: DecodeJob) {
    inbox.withLock { $0.job = job }
    wakeup.signalAlways()
  }

  /// While parked: forget the current decoder and any queued job.
  func resetWhileParked() {
    current.withLock {
      $0.decoder = nil
      $0.job = nil
    }
    inbox.withLock { $0.job = nil }
  }

  /// Ends the thread at its next safe point (parked or not).
  func requestStop() {
    inbox.withLock { $0.stop = true }
    wakeup.signalAlways()
  }

  private var isRunning: Bool { !inbox.withLock { $0.stop } }

  // MARK: Decoder thread

  private func run() {
    while isRunning {
      if hold.isRequested {
        hold.park(while: { isRunning })
        continue
      }
      // The lock is only ever contended while parked (by the control side), so holding it for
      // one decode call costs nothing.
      let idle = current.withLock { current -> Bool in
        if current.decoder == nil,
          let next = inbox.withLock({ box -> DecodeJob? in
            defer { box.job = nil }
            return box.job
          })
        {
          install(next, into: &current)
        }
        guard current.decoder != nil else { return true }
        step(&current)
        return false
      }
      if idle {
        wakeup.wait(timeoutMilliseconds: 1000) {
          self.inbox.withLock { $0.job == nil && !$0.stop } && !self.hold.isRequested
        }
      }
    }
  }

  /// One decode call, or one wait for room or input.
  private func step(_ current: inout Current) {
    guard let decoder = current.decoder, let job = current.job else { return }
    if output.freeFrames < decoder.minimumFreeFrames {
      // The output wakes us once a quarter of its ring is free; the timeout is a backstop.
      let refill = max(decoder.minimumFreeFrames, output.refillFrames)
      wakeup.wait(timeoutMilliseconds: 1000) { self.output.freeFrames < refill && !self.hold.isRequested }
      return
    }
    let before = output.ring.totalWritten
    let progress: DecodeProgress
    do {
      progress = try decoder.decode(from: input, to: output)
    } catch {
      onEvent(.failed(job: job.number, frames: output.framesCommittedInTrack, message: error.description))
      current.decoder = nil
      current.job = nil
      return
    }
    inputConsumed()
    if output.ring.totalWritten != before { framesCommitted() }
    if !current.reportedFormat, let format = decoder.format {
      current.reportedFormat = true
      onEvent(.formatKnown(job: job.number, format: format, content: decoder.content))
    }
    switch progress {
    case .decoded:
      break
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
        self.input.ring.fill < wanted && !self.input.hasEnded && !self.hold.isRequested
      }
      input.wantedFill = 0
      output.decoderWaitsForInput = false
    case .finished:
      onEvent(.finished(job: job.number, frames: output.framesCommittedInTrack, damage: decoder.damage))
      current.decoder = nil
      current.job = nil
    }
  }

  private func install(_ next: DecodeJob, into current: inout Current) {
    do {
      let decoder = try DecoderFactory.make(codec: next.codec, pcm: next.pcm, dsd: dsd)
      current.decoder = resampling.map { ResamplingDecoder(wrapping: decoder, settings: $0) } ?? decoder
      current.job = next
      current.reportedFormat = false
      switch next.start {
      case .beginning: output.beginTrack(id: next.trackID)
      case .frame(let frame): output.beginTrack(id: next.trackID, startFrame: frame)
      case .continuing: output.continueTrack(skippingFrames: output.framesCommittedInTrack)
      case .resuming(let frames, let format):
        output.resumeTrack(id: next.trackID, committedFrames: frames, format: format)
      }
    } catch {
      onEvent(.failed(job: next.number, frames: 0, message: error.description))
    }
  }
}
