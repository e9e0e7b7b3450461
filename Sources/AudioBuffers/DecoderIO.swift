import Synchronization

/// The decoder thread's view of the stream ring: compressed bytes in, plus whether the stream
/// has ended (so "no data" can mean "wait" or "done").
public final class StreamInput: @unchecked Sendable {
  public let ring: RingBuffer
  private let ended = Atomic<Bool>(false)
  private let wanted = Atomic<Int>(0)

  /// The fill level a waiting decoder needs before it can progress (0: any byte helps). The
  /// producer skips the wake-up below it, so a slow stream does not wake the decoder per read.
  /// The decoder stores it before it announces its sleep; the producer reads it inside
  /// `Wakeup.signal(when:)`, after the fence, so never older than the sleep it decides on.
  public var wantedFill: Int {
    get { wanted.load(ordering: .acquiring) }
    set { wanted.store(newValue, ordering: .releasing) }
  }

  /// Producer: whether the bytes now buffered are worth waking the decoder for.
  public var isWorthWaking: Bool { hasEnded || ring.fill >= wanted.load(ordering: .acquiring) }

  public init(capacity: Int) {
    ring = RingBuffer(capacity: capacity)
  }

  /// Producer: the stream delivered its last byte (cleanly or not). Releasing, after the last
  /// `commitWrite`: a consumer whose acquiring `hasEnded` reads true, sampled before it reads the
  /// ring, then finds every byte there (an empty ring then means the end, not a wait).
  public func markEnded() { ended.store(true, ordering: .releasing) }
  /// Control, with the decoder idle: a new stream begins.
  public func reopen() { ended.store(false, ordering: .releasing) }

  public var hasEnded: Bool { ended.load(ordering: .acquiring) }
  /// The stream ended and every byte was read.
  public var isExhausted: Bool { hasEnded && ring.fill == 0 }

  /// Consumer: copies up to `buffer.count` bytes; 0 means nothing buffered right now.
  public func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
    ring.read(into: buffer)
  }
}

/// The decoder thread's view of the output ring. The first frames a track commits publish its
/// boundary first, so the output thread can never play a sample before it knows whose it is.
public final class FrameOutput: @unchecked Sendable {
  public let ring: RingBuffer
  public let boundaries: BoundaryQueue
  // Decoder-thread state.
  private var trackID = 0
  private var publishedFormat: AudioFormat?
  private var skipRemaining = 0
  private var skipAdvancesPosition = true
  private let waitingForInput = Atomic<Bool>(false)

  /// Set by the decoder while it sleeps for lack of input: room in this ring cannot help it
  /// then, so the output does not wake it for every period it plays. Read by the output inside
  /// `Wakeup.signal(when:)`, after the fence (see `StreamInput.wantedFill`).
  public var decoderWaitsForInput: Bool {
    get { waitingForInput.load(ordering: .acquiring) }
    set { waitingForInput.store(newValue, ordering: .releasing) }
  }
  private let committedInTrack = Atomic<Int>(0)

  public init(capacityFrames: Int) {
    ring = RingBuffer(capacity: capacityFrames * OutputFrames.bytesPerFrame)
    boundaries = BoundaryQueue()
  }

  /// Decoder thread: the next committed frames belong to a new track.
  /// `startFrame` > 0 starts mid-track: the frames before it are decoded and dropped.
  public func beginTrack(id: Int, startFrame: Int = 0) {
    trackID = id
    publishedFormat = nil
    skipRemaining = max(0, startFrame)
    skipAdvancesPosition = true
    committedInTrack.store(0, ordering: .releasing)
  }

  /// Decoder thread: the next committed frames continue the current track from another source
  /// (a cached copy of the same file). Its first `skippingFrames` frames were already committed
  /// from the old source and are dropped; no boundary is published while the format is unchanged.
  public func continueTrack(skippingFrames: Int) {
    skipRemaining = max(0, skippingFrames)
    skipAdvancesPosition = false
  }

  /// Decoder thread: the next committed frames continue an earlier track, after a later one was
  /// begun and dropped: its first `committedFrames` frames, in `format`, were committed (its
  /// boundary stands) and are skipped from the new source, which starts at the track's beginning.
  public func resumeTrack(id: Int, committedFrames: Int, format: AudioFormat) {
    trackID = id
    publishedFormat = format
    skipRemaining = max(0, committedFrames)
    skipAdvancesPosition = false
    committedInTrack.store(committedFrames, ordering: .releasing)
  }

  /// Decoder thread: frames of the current track still to be dropped before any is shown (a start
  /// mid-track, or a source switch). A decoder that can seek in its source may pass over some of
  /// them without producing them, and says so with `passedOver(frames:)`.
  public var framesToDrop: Int { skipRemaining }

  /// Decoder thread: whether `framesToDrop` were already played from another source (a cached
  /// copy continuing the track), rather than a start mid-track.
  public var dropContinuesTrack: Bool { !skipAdvancesPosition }

  /// Decoder thread: the decoder passed over `frames` of `framesToDrop` in its source (they will not
  /// be committed); they count as dropped.
  public func passedOver(frames: Int) {
    let n = min(max(0, frames), skipRemaining)
    skipRemaining -= n
    if skipAdvancesPosition { committedInTrack.add(n, ordering: .releasing) }
  }

  /// The track the decoder last began (decoder thread writes; read after its events).
  public var currentTrackID: Int { trackID }

  /// The position in the current track (in frames from its start) of the next frame to commit.
  /// Read by the control thread while the decoder is parked, to know where a replacement source
  /// must resume.
  public var framesCommittedInTrack: Int { committedInTrack.load(ordering: .acquiring) }

  public var freeFrames: Int { ring.space / OutputFrames.bytesPerFrame }
  public var capacityFrames: Int { ring.capacity / OutputFrames.bytesPerFrame }
  /// Free frames at which a waiting decoder is worth waking: it then decodes in one long burst
  /// instead of a sliver per output period.
  public var refillFrames: Int { capacityFrames / 4 }
  public var bufferedFrames: Int { ring.fill / OutputFrames.bytesPerFrame }
  /// Absolute frame position of the next frame to be written.
  public var writeFrame: Int { ring.totalWritten / OutputFrames.bytesPerFrame }

  /// Contiguous space for interleaved stereo samples (count = 2 × frames).
  public func writableSamples() -> UnsafeMutableBufferPointer<Int32> {
    let region = ring.writableRegion()
    let frames = region.count / OutputFrames.bytesPerFrame
    return UnsafeMutableBufferPointer(
      start: region.baseAddress?.assumingMemoryBound(to: Int32.self), count: frames * OutputFrames.samplesPerFrame)
  }

  /// Whether a commit in `format` would be taken now: false only when it needs a boundary and the
  /// queue is full. For a producer that cannot take frames back once made (a resampler).
  public func acceptsCommit(format: AudioFormat) -> Bool {
    publishedFormat == format || boundaries.count < BoundaryQueue.capacity
  }

  /// Makes `frames` frames visible to the output; returns false (committing nothing) when the
  /// boundary queue is full and the caller must retry later.
  public func commit(frames: Int, format: AudioFormat) -> Bool {
    var frames = frames
    if skipRemaining > 0 {
      // Only at a source switch: drop the frames the old source already delivered.
      let dropped = min(skipRemaining, frames)
      skipRemaining -= dropped
      frames -= dropped
      if frames > 0, let base = ring.writableRegion().baseAddress {
        let size = OutputFrames.bytesPerFrame
        base.copyMemory(from: UnsafeRawPointer(base + dropped * size), byteCount: frames * size)  // memmove
      }
      if skipAdvancesPosition { committedInTrack.add(dropped, ordering: .releasing) }
      if frames == 0 { return true }
    }
    if publishedFormat != format {
      let boundary = TrackBoundary(
        trackID: trackID, frame: writeFrame, format: format, isNewTrack: publishedFormat == nil)
      guard boundaries.push(boundary) else { return false }
      publishedFormat = format
    }
    ring.commitWrite(frames * OutputFrames.bytesPerFrame)
    committedInTrack.add(frames, ordering: .releasing)
    return true
  }
}
