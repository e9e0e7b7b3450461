import Synchronization

/// Where a new track's first frame sits in the output ring, and how to play it.
public struct TrackBoundary: Equatable, Sendable {
  /// The engine's id of the track (one per `strm s`).
  public var trackID: Int
  /// Absolute frame position in the output ring (its byte counter / 8).
  public var frame: Int
  public var format: AudioFormat
  /// False when the same track changed format mid-stream (no STMs for that).
  public var isNewTrack: Bool

  public init(trackID: Int, frame: Int, format: AudioFormat, isNewTrack: Bool = true) {
    self.trackID = trackID
    self.frame = frame
    self.format = format
    self.isNewTrack = isNewTrack
  }
}

/// A fixed-size single-producer, single-consumer queue of pending track boundaries, so every
/// queued track gets its own start (squeezelite keeps one slot and loses STMs when two tracks
/// are buffered ahead).
///
/// Orderings, as in `RingBuffer`: `push`'s releasing store of `tail` publishes the slot written
/// before it to the consumer's acquiring loads of `tail` (`peek`, `pop`, `count`); `pop`'s
/// releasing store of `head` hands the slot back to `push`'s acquiring load of `head`. Each side
/// reads its own index relaxed. `removeAll` moves `head` past slots and `removeAll(atOrAfter:)`
/// moves `tail` back: only while the producer is parked by its `ProducerHold`.
public final class BoundaryQueue: @unchecked Sendable {
  public static let capacity = 32
  private let slots: UnsafeMutablePointer<TrackBoundary>
  private let head = Atomic<Int>(0)  // next to pop (consumer)
  private let tail = Atomic<Int>(0)  // next to push (producer)

  public init() {
    slots = .allocate(capacity: Self.capacity)
    slots.initialize(
      repeating: TrackBoundary(trackID: 0, frame: 0, format: AudioFormat(sampleRate: 0, channels: 0, bitsPerSample: 0)),
      count: Self.capacity)
  }

  deinit {
    slots.deinitialize(count: Self.capacity)
    slots.deallocate()
  }

  /// Producer: false when full (32 tracks buffered ahead: the caller waits).
  public func push(_ boundary: TrackBoundary) -> Bool {
    let t = tail.load(ordering: .relaxed)
    guard t - head.load(ordering: .acquiring) < Self.capacity else { return false }
    slots[t % Self.capacity] = boundary
    tail.store(t + 1, ordering: .releasing)
    return true
  }

  /// Consumer: the oldest boundary not yet reached.
  public func peek() -> TrackBoundary? {
    let h = head.load(ordering: .relaxed)
    guard h < tail.load(ordering: .acquiring) else { return nil }
    return slots[h % Self.capacity]
  }

  /// Consumer: drops the oldest boundary.
  public func pop() {
    let h = head.load(ordering: .relaxed)
    guard h < tail.load(ordering: .acquiring) else { return }
    head.store(h + 1, ordering: .releasing)
  }

  public var count: Int { tail.load(ordering: .acquiring) - head.load(ordering: .acquiring) }

  /// With the producer stopped: the first pending boundary that matches.
  public func first(where predicate: (TrackBoundary) -> Bool) -> TrackBoundary? {
    var index = head.load(ordering: .acquiring)
    let end = tail.load(ordering: .acquiring)
    while index < end {
      let boundary = slots[index % Self.capacity]
      if predicate(boundary) { return boundary }
      index += 1
    }
    return nil
  }

  /// Consumer, with the producer stopped: forget every pending boundary.
  public func removeAll() {
    head.store(tail.load(ordering: .acquiring), ordering: .releasing)
  }

  /// Consumer, with the producer stopped: drop boundaries at or after `frame`.
  public func removeAll(atOrAfter frame: Int) {
    let h = head.load(ordering: .relaxed)
    var t = tail.load(ordering: .acquiring)
    while t > h && slots[(t - 1) % Self.capacity].frame >= frame { t -= 1 }
    tail.store(t, ordering: .releasing)
  }
}
