#if canImport(Glibc)
  import Glibc
#endif

/// DSD to PCM at an eighth of the DSD rate (DSD64 → 352.8 kHz), for outputs that take neither
/// DoP nor native DSD: a linear-phase low-pass FIR over the 1-bit stream, evaluated once per
/// output sample, that is once per DSD byte.
///
/// The filter is `taps` long (16 bytes of history, 128 bits): a windowed sinc (Blackman) with
/// its −6 dB point at 1/56 of the DSD rate (50.4 kHz for DSD64), so the audio band passes flat and
/// the modulator's noise is down by the window's 70 dB and more where the decimation folds it.
/// Because the input is bits, each byte of history contributes one of 256 sums, looked up:
/// 16 lookups and adds per output sample and channel. A bit is +1 or −1 (full modulation is
/// full scale); SACD's 0 dB, half modulation, lands at −6 dBFS.
struct DSDToPCM {
  static let historyBytes = 16
  static let taps = historyBytes * 8

  /// `tables[j * 256 + b]`: the sum contributed by byte `b` sitting `j` bytes back.
  private let tables: [Float]

  init() {
    let taps = Self.taps
    let cutoff = 1.0 / 56.0  // cycles per DSD sample
    var h = [Double](repeating: 0, count: taps)
    let centre = Double(taps - 1) / 2
    for t in 0..<taps {
      let x = Double(t) - centre
      let sinc = x == 0 ? 2 * cutoff : sin(2 * Double.pi * cutoff * x) / (Double.pi * x)
      let phase = 2 * Double.pi * Double(t) / Double(taps - 1)
      let window = 0.42 - 0.5 * cos(phase) + 0.08 * cos(2 * phase)
      h[t] = sinc * window
    }
    let sum = h.reduce(0, +)
    var tables = [Float](repeating: 0, count: Self.historyBytes * 256)
    for j in 0..<Self.historyBytes {
      for b in 0..<256 {
        // Bit k from the LSB of the byte j back is the sample 8j + k before the newest one.
        var acc = 0.0
        for k in 0..<8 { acc += h[8 * j + k] / sum * (((b >> k) & 1) == 1 ? 1 : -1) }
        tables[j * 256 + b] = Float(acc)
      }
    }
    self.tables = tables
  }

  /// One channel's filter state: the last `historyBytes` bytes, newest at `newest`.
  struct Channel {
    var history = [UInt8](repeating: 0x69, count: DSDToPCM.historyBytes)  // DSD silence
    var newest = 0
  }

  /// Converts `count` MSB-first DSD bytes of one channel into 24-bit samples, left-justified, at
  /// `destination[0]`, `destination[stride]`, …
  func convert(
    _ bytes: UnsafePointer<UInt8>, count: Int, channel: inout Channel, into destination: UnsafeMutablePointer<Int32>,
    stride: Int
  ) {
    let span = Self.historyBytes
    tables.withUnsafeBufferPointer { tables in
      channel.history.withUnsafeMutableBufferPointer { history in
        var newest = channel.newest
        for i in 0..<count {
          newest = newest == span - 1 ? 0 : newest + 1
          history[newest] = bytes[i]
          var acc: Float = 0
          var slot = newest
          for j in 0..<span {
            acc += tables[j &* 256 &+ Int(history[slot])]
            slot = slot == 0 ? span - 1 : slot - 1
          }
          let scaled = (acc * 8_388_607).rounded()
          let sample = Int32(max(-8_388_608, min(8_388_607, scaled)))
          destination[i * stride] = sample << 8
        }
        channel.newest = newest
      }
    }
  }
}
