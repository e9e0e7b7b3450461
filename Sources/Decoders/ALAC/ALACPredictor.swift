/// Apple Lossless's two reconstruction stages for one channel: the adaptive-Golomb residuals
/// and the sign-adaptive FIR predictor. Integer arithmetic as the format defines it: 32-bit
/// wrapping, arithmetic right shifts, unsigned Rice state.
enum AdaptiveGolomb {
  static let qbShift: UInt32 = 9
  static let maxPrefix = 9

  /// Decodes `count` residuals. `chanBits` is the width of an escaped value.
  static func decode(
    _ bits: inout ALACBitReader, into out: UnsafeMutablePointer<Int32>, count: Int, chanBits: Int, pb: UInt32,
    mb initial: UInt32, kb: UInt32
  ) throws(DecodeError) {
    let wb: UInt32 = kb >= 32 ? .max : (1 << kb) - 1
    var mb = initial
    var zmode: UInt32 = 0
    var c = 0
    while c < count {
      let m = mb >> qbShift
      let k = min(UInt32(31 - (m &+ 3).leadingZeroBitCount), kb)
      let n = get(&bits, m: (1 << k) - 1, k: k, escapeBits: chanBits)
      let nd = n &+ zmode
      out[c] = nd & 1 == 0 ? Int32(bitPattern: nd >> 1) : 0 &- Int32(bitPattern: (nd >> 1) &+ 1)
      c += 1
      mb = pb &* nd &+ mb &- ((pb &* mb) >> qbShift)
      if n > 0xFFFF { mb = 0xFFFF }
      zmode = 0
      // mb < 128 (the format's `(mb << 2) < 512`, without the wrap a hostile stream could use)
      if mb < 128 && c < count {
        zmode = 1
        let k = UInt32(mb.leadingZeroBitCount) &- 24 &+ ((mb &+ 16) >> 6)
        let run = Int(get(&bits, m: ((1 << k) - 1) & wb, k: k, escapeBits: 16))
        guard run <= count - c else { throw .corrupt("ALAC: a run of \(run) zeros past the packet's end") }
        (out + c).initialize(repeating: 0, count: run)
        c += run
        if run >= 65535 { zmode = 0 }
        mb = 0
      }
      if bits.overran { throw .corrupt("ALAC: residuals run past the packet's end") }
    }
  }

  /// One Rice code: a unary prefix (ones) and `k` bits, or after 9 ones an escaped raw value.
  @inline(__always)
  private static func get(_ bits: inout ALACBitReader, m: UInt32, k: UInt32, escapeBits: Int) -> UInt32 {
    let prefix = (~bits.peek32()).leadingZeroBitCount
    if prefix >= maxPrefix {
      bits.skip(maxPrefix)
      return bits.read(escapeBits)
    }
    bits.skip(prefix + 1)
    let pre = UInt32(prefix)
    if k == 1 { return pre }
    let v = bits.peek32() >> (32 - k)
    if v >= 2 {
      bits.skip(Int(k))
      return pre &* m &+ v &- 1
    }
    bits.skip(Int(k) - 1)
    return pre &* m
  }
}

enum ALACPredictor {
  /// Turns residuals into samples in place. `order` 0: they are the samples; 31: first-order
  /// prediction; otherwise an adaptive FIR of that order whose coefficients adapt by the sign
  /// of each residual.
  static func run(
    _ s: UnsafeMutablePointer<Int32>, frames: Int, coefs: inout [Int16], order: Int, denShift: Int, chanBits: Int
  ) {
    guard frames > 1, order > 0 else { return }
    let shift = Int32(32 - chanBits)
    @inline(__always) func extend(_ x: Int32) -> Int32 { (x &<< shift) >> shift }
    if order == 31 {
      var previous = s[0]
      for j in 1..<frames {
        previous = extend(s[j] &+ previous)
        s[j] = previous
      }
      return
    }
    let warmUp = min(order, frames - 1)
    for j in 1...warmUp { s[j] = extend(s[j] &+ s[j - 1]) }
    guard frames > order + 1 else { return }
    let den = Int32(denShift)
    let half: Int32 = 1 << (den - 1)
    coefs.withUnsafeMutableBufferPointer { c in
      for j in (order + 1)..<frames {
        let top = s[j - order - 1]
        var sum: Int32 = 0
        for k in 0..<order { sum = sum &+ Int32(c[k]) &* (s[j - 1 - k] &- top) }
        let e = s[j]
        s[j] = extend(e &+ top &+ ((sum &+ half) >> den))
        var e0 = e
        if e > 0 {
          var k = order - 1
          while k >= 0 {
            let dd = top &- s[j - 1 - k]
            let sign: Int32 = dd > 0 ? 1 : (dd < 0 ? -1 : 0)
            c[k] = c[k] &- Int16(sign)
            e0 = e0 &- Int32(order - k) &* ((sign &* dd) >> den)
            if e0 <= 0 { break }
            k -= 1
          }
        } else if e < 0 {
          var k = order - 1
          while k >= 0 {
            let dd = top &- s[j - 1 - k]
            let sign: Int32 = dd > 0 ? 1 : (dd < 0 ? -1 : 0)
            c[k] = c[k] &+ Int16(sign)
            e0 = e0 &- Int32(order - k) &* ((0 &- sign &* dd) >> den)
            if e0 >= 0 { break }
            k -= 1
          }
        }
      }
    }
  }
}
