import AudioBuffers

/// Walks the Ogg pages as they arrive in the stream ring, reading each page header once, to tell
/// where a run of header pages begins (granule position 0: the headers of a chained stream's next
/// link; pages on which no packet ends, granule -1, continue a run) while that run has not arrived
/// whole.
///
/// Why: opusfile and vorbisfile read a new link's headers in one go and cannot resume after a read
/// that found the ring empty there, so a library read must not start while such a run is within
/// its reach and incomplete — nor while the next page has begun to arrive without its header
/// (it could be the first of such a run). Pages of audio (any other granule position) are
/// harmless: a read cannot get past an incomplete one, and a read starved in one is simply made
/// again. Decoder thread only; no allocation.
struct OggPageScanner {
  static let headerBytes = 27

  /// Absolute stream position of the next page header to read.
  private var next = 0
  private var synced = false
  /// Where the latest run of header pages begins, while its end has not arrived.
  private(set) var pendingHeaders: Int?

  /// After `scan`: whether a read from `consumed` that may reach `reach` bytes ahead is safe.
  func mayRead(consumed: Int, written: Int, reach: Int) -> Bool {
    if let start = pendingHeaders, start - consumed <= reach { return false }
    // A page within reach that has begun to arrive but whose header has not: it might start such a run.
    return next >= written || next - consumed > reach
  }

  /// Reads the page headers that arrived since the last call.
  mutating func scan(_ ring: RingBuffer) {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.headerBytes + 255) { header in
      let base = header.baseAddress!
      while true {
        let consumed = ring.totalConsumed
        if next < consumed {
          // The library read past what was scanned (the bytes it opened with): find a page again.
          next = consumed
          synced = false
        }
        if !synced {
          guard let found = Self.find(in: ring, from: next) else {
            next = max(next, ring.totalWritten - 3)
            return
          }
          next = found
          synced = true
        }
        guard Self.copy(ring, from: next, count: Self.headerBytes, into: base) else { return }
        guard base[0] == 0x4F, base[1] == 0x67, base[2] == 0x67, base[3] == 0x53 else {
          synced = false  // not a page where one should begin: damage; look for the next
          next += 1
          continue
        }
        let segments = Int(base[26])
        guard Self.copy(ring, from: next + Self.headerBytes, count: segments, into: base + Self.headerBytes) else {
          return
        }
        var body = 0
        for index in 0..<segments { body += Int(base[Self.headerBytes + index]) }
        var granule: UInt64 = 0
        for index in 0..<8 { granule |= UInt64(base[6 + index]) << (8 * UInt64(index)) }
        switch granule {
        case 0:
          if pendingHeaders == nil { pendingHeaders = next }
        case UInt64.max:
          break  // no packet ends on this page (a large header or audio packet goes on): no news
        default:
          pendingHeaders = nil  // audio after the run: every header page before it has arrived
        }
        next += Self.headerBytes + segments + body
      }
    }
  }

  /// The absolute position of the first capture pattern ("OggS") at or after `start`, in what has
  /// arrived.
  private static func find(in ring: RingBuffer, from start: Int) -> Int? {
    var window: UInt32 = 0
    var position = start
    let end = ring.totalWritten
    while position < end {
      let region = ring.readableRegion(afterSkipping: position - ring.totalConsumed)
      guard !region.isEmpty else { return nil }
      for byte in region {
        window = window << 8 | UInt32(byte)
        position += 1
        if position - start >= 4 && window == 0x4F67_6753 { return position - 4 }
      }
    }
    return nil
  }

  /// Copies `count` bytes at absolute position `start` (at or after the read position), across the
  /// ring's wrap; false when they have not all arrived.
  private static func copy(_ ring: RingBuffer, from start: Int, count: Int, into target: UnsafeMutablePointer<UInt8>)
    -> Bool
  {
    ring.peek(into: UnsafeMutableRawBufferPointer(start: target, count: count), skipping: start - ring.totalConsumed)
      == count
  }
}
