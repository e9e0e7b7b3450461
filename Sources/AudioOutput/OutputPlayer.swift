import AudioBuffers
import Support
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The output thread: takes frames from the output ring, applies gain, switches tracks exactly
/// at their boundaries and writes to the device. It takes no lock across a system call and
/// allocates nothing per buffer; the control side talks to it through `requests`.
public final class OutputPlayer: @unchecked Sendable {
  public enum StartCondition: Equatable, Sendable {
    /// Once this many tenths of a second are buffered (or `startNow` comes).
    case buffered(tenths: Int)
    case now
    /// At this CLOCK_MONOTONIC time (ns): silence until then (sync start).
    case at(nanoseconds: UInt64)
  }

  public enum CloseReason: Equatable, Sendable {
    case idle(seconds: Int)
    case poweredOff
    case shutdown
  }

  public struct Configuration: Sendable {
    /// SCHED_FIFO priority of the output thread (`-p`); without the right to it, normal priority.
    public var realtimePriority: Int32 = 45
    /// Close the device after this long with nothing to play (`-C`), so other programs can use it.
    public var idleCloseSeconds: Int?
    /// `-D delay`: silence between a PCM track and a DoP track (either way round), for DACs that
    /// mute while they change mode.
    public var dopSwitchMilliseconds: Int
    /// `-v`: where the samples played are published for a visualiser.
    public var visualiser: VisualiserExport?

    public init(
      realtimePriority: Int32 = 45, idleCloseSeconds: Int? = nil, dopSwitchMilliseconds: Int = 0,
      visualiser: VisualiserExport? = nil
    ) {
      self.realtimePriority = realtimePriority
      self.idleCloseSeconds = idleCloseSeconds
      self.dopSwitchMilliseconds = dopSwitchMilliseconds
      self.visualiser = visualiser
    }
  }

  struct Requests {
    var start: StartCondition?
    /// The track to start is buffered whole (`allBuffered`).
    var allBuffered = false
    var pause = false
    var stop = false
    /// Stop for good (the process ends): what a pipe holds is its reader's (`halt`).
    var halt = false
    /// Drop everything buffered.
    var flushAll = false
    /// Drop frames from this absolute frame on (the prefetched next track).
    var flushFrom: Int?
    var silenceMilliseconds = 0
    var skipMilliseconds = 0
    /// Positive: frames of silence to insert; negative: frames to skip.
    var nudgeFrames = 0
    var gain: (left: UInt32, right: UInt32)?
    /// The server switched the output on or off (`aude`).
    var powered: Bool?
    var closeDevice: CloseReason?
    /// Decoder holds to end once the ring changes above are made (the flushes).
    var releaseHolds = 0
    /// The thread ends (after the rest is applied).
    var exit = false
    /// Acknowledged once applied: the highest sequence number the caller waits for.
    var acknowledge = 0
  }

  let output: FrameOutput
  let device: any OutputDevice
  let configuration: Configuration
  let wakeup = Wakeup()
  let requests = Mutex(Requests())
  /// Counts posts, so that a wait of the output thread can tell a command from other wake-ups.
  /// The requests themselves travel under `requests`' lock; the count only says one is there
  /// (released by `post`, acquired by the output thread's checks).
  let requestsPosted = Atomic<Int>(0)
  /// `requestsPosted` when the output thread last took the requests.
  var requestsTaken = 0
  /// While the output waits for room in the device: frames arriving need not wake it.
  private let waitsForRoom = Atomic<Bool>(false)
  /// The last request sequence applied, and the signal that it moved: released by the output
  /// thread once it has applied a request (a flush: the rings reset), acquired by `postAndWait`,
  /// which then sees what the request changed.
  let appliedSequence = Atomic<Int>(0)
  let applied = Semaphore()
  var nextSequence = 0
  /// The decoder's hold, ended here after a flush (see `ProducerHold`).
  let producerHold: ProducerHold?
  let position = Mutex(PlayPosition())
  /// Called on the output thread; keep it short (the engine hops to its event loop).
  let onEvent: @Sendable (OutputEvent) -> Void
  /// Signalled when frames were consumed, so the decoder can refill.
  let consumed: Wakeup

  // Output-thread state.
  /// The output's decisions: run state, track, fades, corrections, supply (see its type).
  var machine = OutputStateMachine()
  var volume: (left: UInt32, right: UInt32) = (GainStage.unity, GainStage.unity)
  var treatment = TrackTreatment()
  var gains = ChannelGains.unity
  /// Per-track treatment, registered by the engine before the track's frames can arrive.
  let treatments = Mutex<[Int: TrackTreatment]>([:])
  /// After a timed start: when its schedule is checked again (see `StartSchedule`).
  var schedule: StartSchedule?
  /// The visualiser segment says audio plays (it is told when silence plays instead).
  var visualiserRunning = false
  /// Switched off by the server (`aude 0`): nothing is written until it is switched on again, and
  /// what is buffered stays for then (squeezelite's OUTPUT_OFF).
  var poweredOff = false
  /// While the output has run dry: how many bytes must be buffered before a commit wakes it (0:
  /// any commit does). When the decoder is the bottleneck (a fast reader on `-o -`, a stream that
  /// arrives at play speed), resuming from a write's worth instead of from every decoded block
  /// spares a wake-up, a short write and a dry report per block.
  private let dryWakeBytes = Atomic<Int>(0)
  /// What the output waits for after running dry (at most half the ring).
  static let dryResumeFrames = 8192
  /// When the device last took audio (CLOCK_MONOTONIC ns), for the idle close.
  var lastWriteNanoseconds: UInt64 = 0
  /// After a failed open, no new attempt before this time.
  var nextOpenAttempt: UInt64 = 0
  let silence: UnsafeMutableBufferPointer<Int32>
  /// DSD silence in the current track's encoding (`silence`'s length: DoP frames or native DSD's
  /// idle pattern), written instead of zeros while the track is DSD, so the DAC stays in DSD mode;
  /// filled when a DSD track begins in a new encoding (untouched until then, it costs no resident
  /// memory).
  let dsdSilence: UnsafeMutableBufferPointer<Int32>
  var dsdSilenceEncoding = SampleEncoding.pcm
  /// The next DoP frame written carries the second marker (see `DoP.stamp`).
  var dopSecondMarkerNext = false
  /// Scratch for crossfade mixing, one chunk long.
  let mix: UnsafeMutableBufferPointer<Int32>

  public init(
    output: FrameOutput, device: any OutputDevice, configuration: Configuration = Configuration(),
    consumed: Wakeup, producerHold: ProducerHold? = nil, onEvent: @escaping @Sendable (OutputEvent) -> Void
  ) {
    self.output = output
    self.device = device
    self.configuration = configuration
    self.consumed = consumed
    self.producerHold = producerHold
    self.onEvent = onEvent
    silence = .allocate(capacity: 2 * 4096)
    silence.initialize(repeating: 0)
    dsdSilence = .allocate(capacity: 2 * 4096)
    mix = .allocate(capacity: 2 * 16384)
    mix.initialize(repeating: 0)
  }

  deinit {
    silence.deallocate()
    dsdSilence.deallocate()
    mix.deallocate()
  }

  /// Starts the output thread; it runs until `shutDown`.
  public func startThread() -> RealtimeThread {
    RealtimeThread(name: "slimplay-output") { [self] in
      let priority = configuration.realtimePriority
      onEvent(.realtimePriority(priority, granted: RealtimeThread.makeCurrentRealtime(priority: priority)))
      run()
    }
  }

  // MARK: Control side (any thread): commands in OutputPlayer+Control.swift, applied there too

  /// Wakes the output thread because frames arrived (cheap when it is busy). Run dry, it waits
  /// for `dryResumeFrames` or a track boundary, or its 20 ms timeout.
  public func framesAvailable() {
    wakeup.signal(when: {
      guard !waitsForRoom.load(ordering: .acquiring) else { return false }
      let wanted = dryWakeBytes.load(ordering: .acquiring)
      return wanted == 0 || output.ring.fill >= wanted || output.boundaries.count > 0
    })
  }

  // MARK: Output thread

  /// What the current track's frames carry: for DSD (DoP or native) unity gain, no fades, DSD
  /// silence.
  var carried: SampleEncoding { machine.encoding }

  private func run() {
    while applyRequests() {
      if poweredOff {
        if visualiserRunning, let visualiser = configuration.visualiser, visualiser.silent() {
          visualiserRunning = false
        }
        wakeup.wait(timeoutMilliseconds: 1000)
        continue
      }
      if machine.isIdle {
        closeDeviceIfIdle()
        if visualiserRunning, let visualiser = configuration.visualiser, visualiser.silent() {
          visualiserRunning = false
        }
      }
      switch machine.run {
      case .stopped, .paused(silenceDue: nil):
        wakeup.wait(timeoutMilliseconds: 1000)
      case .paused:
        writePauseSilence()
      case .waiting(let condition):
        if case .at(let deadline) = condition, device.isClocked {
          lineUpStart(at: deadline)
        } else if isReady(condition) {
          machine.startPlaying()
        } else if case .at(let deadline) = condition {
          let remaining = Int64(deadline) - Int64(MonotonicClock.nanoseconds())
          wakeup.wait(timeoutMilliseconds: Int32(max(1, min(remaining / 1_000_000, 100))))
        } else {
          wakeup.wait(timeoutMilliseconds: 50)
        }
      case .playing:
        playStep()
      }
    }
  }

  private func isReady(_ condition: StartCondition) -> Bool {
    switch condition {
    case .now:
      return output.bufferedFrames > 0 || output.boundaries.peek() != nil
    case .at(let deadline):
      return MonotonicClock.nanoseconds() >= deadline
    case .buffered(let tenths):
      let rate = output.boundaries.peek()?.format.sampleRate ?? 44100
      let wanted = max(tenths * rate / 10, device.startFrames(sampleRate: rate))
      let needed = min(wanted, output.ring.capacity / OutputFrames.bytesPerFrame / 2)
      return output.bufferedFrames >= max(1, needed)
    }
  }

  var deviceFacts: OutputStateMachine.Device {
    .init(
      isOpen: device.isOpen, isClocked: device.isClocked, sampleRate: device.sampleRate,
      chunkFrames: device.chunkFrames)
  }

  /// One step while playing: the machine decides from what the ring and the device show, the
  /// step is carried out here and what was written reported back.
  private func playStep() {
    if schedule != nil { keepSchedule() }
    let readFrame = output.ring.totalConsumed / OutputFrames.bytesPerFrame
    // Taken before the boundaries: the decoder queues a track's boundary before its first frame,
    // so every frame this region holds has its boundary visible below.
    let region = output.ring.readableRegion()
    let boundary = output.boundaries.peek()
    var incoming: Transition?
    if let boundary, machine.needsTransition(into: boundary) {
      incoming = treatments.withLock { $0[boundary.trackID]?.transition } ?? Transition()
    }
    let facts = OutputStateMachine.Facts(
      readFrame: readFrame, readableFrames: region.count / OutputFrames.bytesPerFrame,
      writtenFrames: output.ring.totalWritten / OutputFrames.bytesPerFrame,
      ringFrames: output.ring.capacity / OutputFrames.bytesPerFrame, boundary: boundary,
      incomingTransition: incoming, device: deviceFacts)
    switch machine.nextStep(facts) {
    case .silence(let frames, let rate):
      guard ensureOpen(rate: rate, nativeDSD: carried.nativeDSD) else { return }
      if let written = writeSilence(frames: frames) { machine.silenceWritten(written) }
    case .boundary(let boundary):
      guard ensureOpen(for: boundary.format) else { return }
      output.boundaries.pop()
      beginTrack(boundary)
    case .crossfade(let frames, let ramp, let aheadFrames, let announce):
      if let announce { onEvent(.trackStarted(trackID: announce)) }
      crossfadeChunk(frames: frames, ramp: ramp, aheadFrames: aheadFrames)
    case .skip(let frames):
      output.ring.commitRead(frames * OutputFrames.bytesPerFrame)
      machine.skipped(frames)
      wakeDecoderIfRoom()
    case .open(let rate):
      _ = ensureOpen(rate: rate, nativeDSD: carried.nativeDSD)
    case .leadIn(let frames):
      machine.leadInWritten()
      _ = writeSilence(frames: frames)
    case .play(let frames, let fadeOut, let fadeIn):
      play(region, frames: frames, fadeOut: fadeOut, fadeIn: fadeIn)
    case .ringEmpty:
      ringEmpty()
    }
  }

  private func play(
    _ region: UnsafeRawBufferPointer, frames: Int, fadeOut: OutputStateMachine.RampSpan?,
    fadeIn: OutputStateMachine.RampSpan?
  ) {
    // Before the frames are touched (gain is applied in place): a command may come first.
    guard waitForRoom(frames: frames) else { return }
    let samples = UnsafeMutableBufferPointer(
      start: UnsafeMutableRawPointer(mutating: region.baseAddress!).assumingMemoryBound(to: Int32.self),
      count: frames * 2)
    exportToVisualiser(samples, frames: frames)
    if let fadeOut { Ramp.apply(to: samples, from: fadeOut.position, of: fadeOut.length, falling: true) }
    if let fadeIn { Ramp.apply(to: samples, from: fadeIn.position, of: fadeIn.length, falling: false) }
    GainStage.apply(gains, to: samples)
    if carried == .dop { _ = DoP.stamp(samples, secondFirst: dopSecondMarkerNext) }
    let dither = gains.needsDither || fadeOut != nil || fadeIn != nil
    guard let written = write(UnsafeBufferPointer(samples), dither: dither) else { return }
    if carried == .dop && written % 2 == 1 { dopSecondMarkerNext.toggle() }
    output.ring.commitRead(written * OutputFrames.bytesPerFrame)
    machine.played(written)
    publish(running: true)
    wakeDecoderIfRoom()
  }

  /// Nothing buffered while playing: wait for the decoder while the device holds audio, else play
  /// out what it holds and report the ring dry once.
  private func ringEmpty() {
    let queued = device.isOpen ? device.delayFrames() : 0
    let action = machine.ringEmpty(
      queuedFrames: queued, chunkFrames: device.chunkFrames, sampleRate: device.sampleRate,
      now: MonotonicClock.nanoseconds())
    switch action {
    case .wait(let milliseconds):
      // The device still holds audio: the decoder's next frames are worth waiting for.
      wakeup.wait(timeoutMilliseconds: milliseconds) { output.ring.fill == 0 && output.boundaries.peek() == nil }
      return
    case .playOut:
      // Empty only counts once the device has played what it holds.
      if device.isOpen {
        playOutQueued()
        machine.playedOut(deviceClocked: device.isClocked)
        publish(running: true)
        if output.ring.fill > 0 || output.boundaries.peek() != nil {
          machine.framesArrived()
          return
        }
      }
      machine.ranDry()
      onEvent(.ranDry)
    case .stayDry:
      break
    }
    let resumeBytes = min(Self.dryResumeFrames * OutputFrames.bytesPerFrame, output.ring.capacity / 2)
    dryWakeBytes.store(resumeBytes, ordering: .releasing)
    wakeup.wait(timeoutMilliseconds: 20) { output.ring.fill < resumeBytes && output.boundaries.peek() == nil }
    dryWakeBytes.store(0, ordering: .releasing)
  }

  /// `-v`: the frames about to be written, for a visualiser; DSD is no level to show, so the
  /// segment says nothing plays then.
  func exportToVisualiser(_ samples: UnsafeMutableBufferPointer<Int32>, frames: Int) {
    guard let visualiser = configuration.visualiser else { return }
    if carried == .pcm {
      if visualiser.export(samples, frames: frames, rate: device.sampleRate) { visualiserRunning = true }
    } else if visualiserRunning, visualiser.silent() {
      visualiserRunning = false
    }
  }

  /// Waits until the device has room for `frames` (a device paced by the clock, see
  /// `OutputDevice.nanosecondsUntilRoom`); a command ends the wait, and false says so: the caller
  /// returns, so that the command (a pause, a flush) applies before anything more is written.
  private func waitForRoom(frames: Int) -> Bool {
    let nanoseconds = device.nanosecondsUntilRoom(forFrames: frames)
    guard nanoseconds > 0 else { return true }
    let milliseconds = Int32(min((nanoseconds + 999_999) / 1_000_000, 1000))
    waitsForRoom.store(true, ordering: .releasing)
    wakeup.wait(timeoutMilliseconds: milliseconds) { requestsPosted.load(ordering: .acquiring) == requestsTaken }
    waitsForRoom.store(false, ordering: .releasing)
    return requestsPosted.load(ordering: .acquiring) == requestsTaken
  }

  /// Wakes the decoder only when there is room worth filling (a quarter of the ring): one
  /// wake-up per burst rather than one per output period.
  func wakeDecoderIfRoom() {
    consumed.signal(when: { output.freeFrames >= output.refillFrames && !output.decoderWaitsForInput })
  }

  /// `heardAll`: what the device holds is silence, every frame written was heard.
  func publish(running: Bool, heardAll: Bool = false) {
    var delay = device.isOpen && !heardAll ? device.delayFrames() : 0
    let now = MonotonicClock.nanoseconds()
    if running, let due = schedule, due.checksDone == 0, now >= due.deadline {
      // Until a timed start is first checked, a sound server's delay counts what was written, not
      // what is heard: the position is the schedule's, which the check then makes true. LMS checks
      // a group's sync from the first report on, and would correct every member against that count.
      delay = max(0, output.ring.totalConsumed / OutputFrames.bytesPerFrame - due.scheduledFrame(at: now))
    }
    let rate = device.sampleRate
    let track = machine.track
    position.withLock {
      $0 = PlayPosition(
        trackID: track.id, framesPlayed: track.framesPlayed, delayFrames: delay, measuredAtNanoseconds: now,
        sampleRate: rate, isRunning: running, trackStartFrame: track.startFrame)
    }
  }
}
