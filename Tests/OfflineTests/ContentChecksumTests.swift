import Support
import Testing

@testable import Offline

#if canImport(Glibc)
  import Glibc
#endif

@Suite("ContentChecksum")
struct ContentChecksumTests {
  /// Bytes that look like nothing in particular (a fixed linear congruential sequence).
  static func bytes(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
    var state = seed
    return (0..<count).map { _ in
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return UInt8(truncatingIfNeeded: state >> 56)
    }
  }

  static func whole(_ bytes: [UInt8]) -> UInt64 {
    var checksum = ContentChecksum()
    checksum.update(bytes)
    return checksum.value
  }

  @Test func piecesOfAnySizeGiveTheChecksumOfTheWhole() {
    let data = Self.bytes(10_007)
    let expected = Self.whole(data)
    for pieceSize in [1, 3, 31, 32, 33, 64, 1000, 4096, 10_007] {
      var checksum = ContentChecksum()
      var offset = 0
      while offset < data.count {
        let end = min(data.count, offset + pieceSize)
        checksum.update(Array(data[offset..<end]))
        offset = end
      }
      #expect(checksum.value == expected, "pieces of \(pieceSize)")
    }
  }

  @Test func anyChangedByteOrLengthChangesIt() {
    let data = Self.bytes(4099)
    let original = Self.whole(data)
    for position in [0, 1, 31, 32, 2048, 4096, 4098] {
      var changed = data
      changed[position] ^= 0x01
      #expect(Self.whole(changed) != original, "byte \(position)")
    }
    // Trailing zeros are content too.
    #expect(Self.whole(data + [0]) != original)
    #expect(Self.whole(Array(data.dropLast())) != original)
    #expect(Self.whole([]) != Self.whole([0]))
  }

  @Test func aFileReadBackGivesTheValueComputedWhileItArrived() throws {
    let data = Self.bytes(300_001, seed: 7)
    let path = "/tmp/slimplay-checksum-\(getpid()).bin"
    defer { unlink(path) }
    try FileIO.writeAtomically(path, data)
    #expect(CacheFiles.checksum(path) == Self.whole(data))
  }
}
