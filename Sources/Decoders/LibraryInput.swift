import AudioBuffers

/// The stream ring as a codec library that reads synchronously through callbacks sees it
/// (opusfile, vorbisfile): bytes while the ring has them, the end of the stream once it has ended
/// and been read, and otherwise a failed read ("starved"), after which the library's call is
/// simply made again once more has arrived.
///
/// Opening (the headers) cannot resume after a starved read, so the bytes read while opening are
/// kept in a head buffer (allocated with the decoder, untouched until used, released once open)
/// and replayed as the library's initial data on the next attempt. Decoder thread only.
final class LibraryInput {
  static let headCapacity = 1 << 20

  private var active: StreamInput?
  /// The last library call ran out of input before the stream ended.
  private(set) var starved = false
  private var head: UnsafeMutableRawPointer?
  private(set) var headCount = 0
  /// The headers were larger than the head buffer: a starved open cannot be replayed.
  private(set) var headOverflowed = false
  /// Where a chained stream's next headers are, so that no read starts before they are all there.
  private var pages = OggPageScanner()
  /// How far ahead of the read position a library read may reach: a whole page (65,307 bytes at
  /// most) and one read of the library's (opusfile and vorbisfile read 2 to 4 KiB at a time).
  static let readReach = 72 << 10

  init() {
    head = .allocate(byteCount: Self.headCapacity, alignment: 16)
  }

  deinit {
    head?.deallocate()
  }

  /// The bytes recorded so far, for the next open attempt (nil once open).
  var recorded: UnsafePointer<UInt8>? { head.map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) } }

  /// Reads the stream's first 4 bytes into the head (they are replayed to the library) and checks
  /// that they begin an Ogg page; false while they have not all arrived. Throws when the stream
  /// ended first or is not Ogg.
  func sniffOgg(_ input: StreamInput, codec: String) throws(DecodeError) -> Bool {
    guard let head else { return true }
    while headCount < 4 {
      let ended = input.hasEnded
      let n = input.read(into: UnsafeMutableRawBufferPointer(start: head + headCount, count: 4 - headCount))
      if n == 0 {
        if ended { throw .unsupportedStream("stream too short for \(codec)") }
        return false
      }
      headCount += n
    }
    let bytes = head.assumingMemoryBound(to: UInt8.self)
    guard bytes[0] == 0x4F, bytes[1] == 0x67, bytes[2] == 0x67, bytes[3] == 0x53 else {  // "OggS"
      throw .unsupportedStream("not an Ogg stream (starts with \(hex(bytes, 4)))")
    }
    return true
  }

  /// Whether a library read may start: `threshold` bytes buffered (or the stream ended, or the ring
  /// is full: nothing more can come before a read), and no next link's headers within the read's
  /// reach that have not all arrived.
  func mayRead(_ input: StreamInput, threshold: Int) -> Bool {
    let ring = input.ring
    if input.hasEnded || ring.space == 0 { return true }
    guard ring.fill >= threshold else { return false }
    pages.scan(ring)
    return pages.mayRead(consumed: ring.totalConsumed, written: ring.totalWritten, reach: Self.readReach)
  }

  /// Runs one library call with `input` behind the callbacks.
  func reading<Result>(_ input: StreamInput, _ call: () -> Result) -> Result {
    active = input
    starved = false
    defer { active = nil }
    return call()
  }

  /// The library is open: the head is no longer needed.
  func opened() {
    head?.deallocate()
    head = nil
    headCount = 0
  }

  /// The callbacks' read: bytes, 0 at the end of the stream, -1 when nothing has arrived yet.
  func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
    guard let input = active, count > 0 else { return -1 }
    let ended = input.hasEnded  // sampled before the read: 0 bytes after it means exhausted
    let n = input.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: count))
    if n == 0 {
      if ended { return 0 }
      starved = true
      return -1
    }
    if let head {
      if !headOverflowed && headCount + n <= Self.headCapacity {
        (head + headCount).copyMemory(from: buffer, byteCount: n)
        headCount += n
      } else {
        headOverflowed = true
      }
    }
    return n
  }
}
