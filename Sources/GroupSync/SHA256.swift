/// SHA-256 (FIPS 180-4), for the group messages' HMAC: a few dozen bytes a second, so plain and
/// allocation-light rather than fast; no dependency for one hash.
struct SHA256 {
  private static let roundConstants: [UInt32] = [
    0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
    0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
    0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
    0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
    0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
    0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
    0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
    0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
  ]

  static let blockBytes = 64
  static let digestBytes = 32

  private var state: [UInt32] = [
    0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19,
  ]
  private var pending: [UInt8] = []
  private var length: UInt64 = 0

  mutating func update(_ bytes: some Collection<UInt8>) {
    length &+= UInt64(bytes.count)
    pending.append(contentsOf: bytes)
    var start = 0
    while pending.count - start >= Self.blockBytes {
      compress(pending[start..<start + Self.blockBytes])
      start += Self.blockBytes
    }
    pending.removeFirst(start)
  }

  mutating func finish() -> [UInt8] {
    let bits = length &* 8
    var tail: [UInt8] = [0x80]
    let used = (pending.count + 1) % Self.blockBytes
    tail += [UInt8](repeating: 0, count: (Self.blockBytes + 56 - used) % Self.blockBytes)
    tail += (0..<8).map { UInt8(truncatingIfNeeded: bits >> (56 - 8 * $0)) }
    let total = length
    update(tail)
    length = total
    return state.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> (24 - 8 * $0)) } }
  }

  static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
    var sha = SHA256()
    sha.update(bytes)
    return sha.finish()
  }

  private mutating func compress(_ block: ArraySlice<UInt8>) {
    var words = [UInt32](repeating: 0, count: 64)
    var index = block.startIndex
    for word in 0..<16 {
      words[word] =
        UInt32(block[index]) << 24 | UInt32(block[index + 1]) << 16 | UInt32(block[index + 2]) << 8
        | UInt32(block[index + 3])
      index += 4
    }
    for word in 16..<64 {
      let w15 = words[word - 15]
      let w2 = words[word - 2]
      let s0 = w15.rotatedRight(7) ^ w15.rotatedRight(18) ^ (w15 >> 3)
      let s1 = w2.rotatedRight(17) ^ w2.rotatedRight(19) ^ (w2 >> 10)
      words[word] = words[word - 16] &+ s0 &+ words[word - 7] &+ s1
    }
    var (a, b, c, d, e, f, g, h) = (state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7])
    for round in 0..<64 {
      let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
      let choice = (e & f) ^ (~e & g)
      let t1 = h &+ s1 &+ choice &+ Self.roundConstants[round] &+ words[round]
      let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
      let majority = (a & b) ^ (a & c) ^ (b & c)
      let t2 = s0 &+ majority
      (h, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
    }
    for (slot, value) in [a, b, c, d, e, f, g, h].enumerated() { state[slot] &+= value }
  }
}

extension UInt32 {
  fileprivate func rotatedRight(_ count: UInt32) -> UInt32 { (self >> count) | (self << (32 - count)) }
}

/// HMAC-SHA-256 (RFC 2104), its tag cut to the first 16 bytes as RFC 4868 allows: a forger must
/// guess 128 bits.
public struct GroupKey: Sendable {
  private let inner: [UInt8]
  private let outer: [UInt8]

  /// The key as the user set it (`--sync-key`): any text, the same on every member.
  public init(_ secret: String) { self.init(bytes: Array(secret.utf8)) }

  public init(bytes: [UInt8]) {
    var key = bytes
    if key.count > SHA256.blockBytes { key = SHA256.hash(key) }
    key += [UInt8](repeating: 0, count: SHA256.blockBytes - key.count)
    inner = key.map { $0 ^ 0x36 }
    outer = key.map { $0 ^ 0x5c }
  }

  /// The whole HMAC-SHA-256 of `message` (32 bytes).
  public func authenticationCode(_ message: some Collection<UInt8>) -> [UInt8] {
    var first = SHA256()
    first.update(inner)
    first.update(message)
    var second = SHA256()
    second.update(outer)
    second.update(first.finish())
    return second.finish()
  }

  public func tag(_ message: some Collection<UInt8>) -> [UInt8] {
    Array(authenticationCode(message).prefix(GroupMessage.tagBytes))
  }

  /// Compared in constant time: how many leading bytes matched must not show in how long it took.
  public func verify(_ tag: GroupMessage.Tag) -> Bool {
    let expected = self.tag(tag.covered)
    guard tag.bytes.count == expected.count else { return false }
    var difference: UInt8 = 0
    for (one, other) in zip(tag.bytes, expected) { difference |= one ^ other }
    return difference == 0
  }
}
