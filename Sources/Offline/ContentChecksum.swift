/// A 64-bit checksum of a cached file's bytes, fed in pieces of any size as they arrive (a
/// download) or as a file is read back; equal pieces-or-whole. Four independent
/// multiply-and-shift lanes over 32-byte blocks keep it near memory speed (one multiply per
/// byte, as FNV-1a needs, cost more than the download itself). It detects damage, not tampering.
struct ContentChecksum {
  private static let prime: UInt64 = 0x9E37_79B9_7F4A_7C15
  private static let blockBytes = 32
  private var lanes: (UInt64, UInt64, UInt64, UInt64) = (
    0x243F_6A88_85A3_08D3, 0x1319_8A2E_0370_7344, 0xA409_3822_299F_31D0, 0x082E_FA98_EC4E_6C89
  )
  /// Bytes of an unfinished block, kept until the next piece completes it.
  private var tail: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
  private var tailCount = 0
  private var length: UInt64 = 0

  init() {}

  mutating func update(_ bytes: UnsafeRawBufferPointer) {
    guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
    length &+= UInt64(bytes.count)
    var offset = 0
    if tailCount > 0 {
      let filled = tailCount
      let taken = min(Self.blockBytes - filled, bytes.count)
      withUnsafeMutableBytes(of: &tail) { block in
        block.baseAddress!.advanced(by: filled).copyMemory(from: source, byteCount: taken)
      }
      tailCount += taken
      offset = taken
      guard tailCount == Self.blockBytes else { return }
      let block = tail
      mix(block.0, block.1, block.2, block.3)
      tailCount = 0
    }
    while bytes.count - offset >= Self.blockBytes {
      let base = source.advanced(by: offset)
      mix(
        base.loadUnaligned(as: UInt64.self), base.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
        base.loadUnaligned(fromByteOffset: 16, as: UInt64.self),
        base.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
      offset += Self.blockBytes
    }
    let rest = bytes.count - offset
    if rest > 0 {
      tail = (0, 0, 0, 0)
      withUnsafeMutableBytes(of: &tail) { block in
        block.baseAddress!.copyMemory(from: source.advanced(by: offset), byteCount: rest)
      }
      tailCount = rest
    }
  }

  mutating func update(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { update($0) }
  }

  /// The checksum of everything fed so far.
  var value: UInt64 {
    var final = self
    let filled = final.tailCount
    if filled > 0 {
      // Zero-padded last block; the length below tells it from real zeros.
      var block = final.tail
      withUnsafeMutableBytes(of: &block) { bytes in
        for index in filled..<Self.blockBytes { bytes[index] = 0 }
      }
      final.mix(block.0, block.1, block.2, block.3)
    }
    var hash = final.length &* Self.prime
    for lane in [final.lanes.0, final.lanes.1, final.lanes.2, final.lanes.3] {
      hash = Self.scramble(hash ^ Self.scramble(lane))
    }
    return hash
  }

  private mutating func mix(_ a: UInt64, _ b: UInt64, _ c: UInt64, _ d: UInt64) {
    lanes.0 = Self.round(lanes.0, a)
    lanes.1 = Self.round(lanes.1, b)
    lanes.2 = Self.round(lanes.2, c)
    lanes.3 = Self.round(lanes.3, d)
  }

  private static func round(_ lane: UInt64, _ word: UInt64) -> UInt64 {
    let mixed = (lane ^ word.littleEndian) &* prime
    return mixed ^ (mixed >> 31)
  }

  private static func scramble(_ value: UInt64) -> UInt64 {
    var x = value
    x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
    x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
    return x ^ (x >> 31)
  }
}
