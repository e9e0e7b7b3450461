import Synchronization

/// A single-producer, single-consumer byte ring for the realtime path.
///
/// The producer alone advances `written`, the consumer alone advances `consumed`; each publishes
/// its counter with release ordering and reads the other's with acquire ordering, so neither side
/// ever takes a lock or allocates. The pairs: `commitWrite`'s store with the consumer's load of
/// `written` (the bytes written are then visible to it), `commitRead`'s store with the producer's
/// load of `consumed` (the region read, and anything the consumer wrote into it in place, is done
/// with before the producer reuses it). Each side reads its own counter relaxed: it is the only
/// writer. `discardAll` and `truncate` move the other side's counter: they are called only while
/// that side is parked by a `ProducerHold`, whose acquire/release operations order them. Counters only grow (64-bit: no wrap in practice); positions in
/// the storage are the counters modulo the capacity. Both sides work through contiguous regions,
/// so a wrap costs one extra call, never a copy.
///
/// `@unchecked Sendable`: the storage is shared raw memory; the discipline above (one producer
/// thread, one consumer thread, regions touched only between `…Region()` and `commit…()`) is what
/// makes it safe.
public final class RingBuffer: @unchecked Sendable {
  public let capacity: Int
  private let storage: UnsafeMutableRawBufferPointer
  private let written = Atomic<Int>(0)
  private let consumed = Atomic<Int>(0)

  /// `capacity` should be a multiple of the largest item (a frame), so wraps fall on item boundaries.
  public init(capacity: Int) {
    precondition(capacity > 0)
    self.capacity = capacity
    // Left untouched: a page becomes resident when the producer first writes it (the stream's
    // loop or the decoder, never the output thread, which only reads pages already written), so
    // an idle player or a short track does not hold the whole ring.
    storage = .allocate(byteCount: capacity, alignment: 16)
  }

  deinit {
    storage.deallocate()
  }

  /// Bytes written and not yet consumed. `consumed` is read first: from a third thread, the other
  /// order can see `consumed` pass the `written` read before it (a negative fill). Both only grow,
  /// so this order reads at least 0; at most `capacity` is the clamp's.
  public var fill: Int {
    let r = consumed.load(ordering: .acquiring)
    return min(capacity, written.load(ordering: .acquiring) - r)
  }
  public var space: Int { capacity - fill }
  /// Every byte ever written: a position on the producer's side.
  public var totalWritten: Int { written.load(ordering: .acquiring) }
  /// Every byte ever consumed: a position on the consumer's side.
  public var totalConsumed: Int { consumed.load(ordering: .acquiring) }

  // MARK: Producer

  /// The contiguous free space at the write position (may be shorter than `space` at the wrap).
  public func writableRegion() -> UnsafeMutableRawBufferPointer {
    let w = written.load(ordering: .relaxed)
    let r = consumed.load(ordering: .acquiring)
    let free = capacity - (w - r)
    let offset = w % capacity
    let count = min(free, capacity - offset)
    return UnsafeMutableRawBufferPointer(rebasing: storage[offset..<offset + count])
  }

  public func commitWrite(_ count: Int) {
    let w = written.load(ordering: .relaxed)
    written.store(w + count, ordering: .releasing)
  }

  /// Copies as much of `bytes` as fits; returns how many bytes were taken.
  @discardableResult
  public func write(_ bytes: UnsafeRawBufferPointer) -> Int {
    var taken = 0
    while taken < bytes.count {
      let region = writableRegion()
      guard region.count > 0 else { break }
      let n = min(region.count, bytes.count - taken)
      region.baseAddress!.copyMemory(from: bytes.baseAddress! + taken, byteCount: n)
      commitWrite(n)
      taken += n
    }
    return taken
  }

  // MARK: Consumer

  /// The contiguous readable bytes at the read position (may be shorter than `fill` at the wrap).
  public func readableRegion() -> UnsafeRawBufferPointer {
    let r = consumed.load(ordering: .relaxed)
    let w = written.load(ordering: .acquiring)
    let offset = r % capacity
    let count = min(w - r, capacity - offset)
    return UnsafeRawBufferPointer(rebasing: storage[offset..<offset + count])
  }

  /// Consumer: the contiguous readable bytes starting `offset` bytes past the read position (empty
  /// when the producer has not written that far). For looking ahead, e.g. into the next track.
  public func readableRegion(afterSkipping offset: Int) -> UnsafeRawBufferPointer {
    let r = consumed.load(ordering: .relaxed) + offset
    let w = written.load(ordering: .acquiring)
    guard r < w else { return UnsafeRawBufferPointer(start: nil, count: 0) }
    let position = r % capacity
    let count = min(w - r, capacity - position)
    return UnsafeRawBufferPointer(rebasing: storage[position..<position + count])
  }

  /// Consumer: copies up to `destination.count` bytes starting `offset` bytes past the read
  /// position, across the wrap, without consuming them; returns how many have arrived to copy.
  /// For looking at a stream's first bytes (or a header further on) before deciding what reads it.
  public func peek(into destination: UnsafeMutableRawBufferPointer, skipping offset: Int = 0) -> Int {
    var done = 0
    while done < destination.count {
      let region = readableRegion(afterSkipping: offset + done)
      let n = min(region.count, destination.count - done)
      guard n > 0, let source = region.baseAddress else { break }
      (destination.baseAddress! + done).copyMemory(from: source, byteCount: n)
      done += n
    }
    return done
  }

  public func commitRead(_ count: Int) {
    let r = consumed.load(ordering: .relaxed)
    consumed.store(r + count, ordering: .releasing)
  }

  /// Copies up to `destination.count` bytes out; returns how many.
  public func read(into destination: UnsafeMutableRawBufferPointer) -> Int {
    var copied = 0
    while copied < destination.count {
      let region = readableRegion()
      guard region.count > 0 else { break }
      let n = min(region.count, destination.count - copied)
      (destination.baseAddress! + copied).copyMemory(from: region.baseAddress!, byteCount: n)
      commitRead(n)
      copied += n
    }
    return copied
  }

  /// Consumer side: drops everything up to the producer's position at the time of the call.
  /// Returns the number of bytes dropped.
  @discardableResult
  public func discardAll() -> Int {
    let w = written.load(ordering: .acquiring)
    let r = consumed.load(ordering: .relaxed)
    consumed.store(w, ordering: .releasing)
    return w - r
  }

  /// Consumer side: drops the bytes from position `start` (≥ the read position) to the end, as far
  /// as the producer had written them. Only valid while the producer is stopped.
  public func truncate(toPosition position: Int) {
    let r = consumed.load(ordering: .relaxed)
    precondition(position >= r)
    let w = written.load(ordering: .acquiring)
    written.store(min(w, position), ordering: .releasing)
  }
}
