#if canImport(Glibc)
  import Glibc
#endif

/// DSD to 24-bit PCM, for outputs that take neither DoP nor native DSD: a linear-phase low-pass
/// FIR over the 1-bit stream, evaluated once per output sample.
///
/// The filter is the same in hertz at every DSD rate: a windowed sinc (Blackman) with its −6 dB
/// point at 50.4 kHz (54.9 kHz in the 48 kHz family), 128 taps at DSD64 and as many more as the
/// rate is higher (`multiple` × 16 bytes of history). The audio band passes within 0.6 dB, and the
/// modulator's noise is down by about 100 dB where a decimation to 352.8 kHz folds it onto the
/// audio band, and by about 79 dB for 176.4 kHz. Because the input is bits, each byte of history
/// contributes one of 256 sums, looked up: 16 × `multiple` lookups and adds per output sample
/// and channel, one output sample every `bytesPerSample` DSD bytes. A bit is +1 or −1 (full
/// modulation is full scale); SACD's 0 dB, half modulation, lands at −6 dBFS.
struct DSDToPCM {
  /// The filter's span in bytes.
  let historyBytes: Int
  /// DSD bytes per output sample: the decimation over 8.
  let bytesPerSample: Int

  /// `tables[j * 256 + b]`: the sum contributed by byte `b` sitting `j` bytes back.
  private let tables: [Float]

  /// `multiple`: the DSD rate over DSD64's of its family (1, 2, 4…).
  init(multiple: Int, bytesPerSample: Int) {
    historyBytes = 16 * multiple
    self.bytesPerSample = bytesPerSample
    let taps = historyBytes * 8
    let cutoff = 1.0 / (56.0 * Double(multiple))  // cycles per DSD sample
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
    var tables = [Float](repeating: 0, count: historyBytes * 256)
    for j in 0..<historyBytes {
      for b in 0..<256 {
        // Bit k from the LSB of the byte j back is the sample 8j + k before the newest one.
        var acc = 0.0
        for k in 0..<8 { acc += h[8 * j + k] / sum * (((b >> k) & 1) == 1 ? 1 : -1) }
        tables[j * 256 + b] = Float(acc)
      }
    }
    self.tables = tables
  }

  /// One channel's filter state: the last `historyBytes` bytes, newest at `newest`, and the bytes
  /// taken since its last output sample.
  struct Channel {
    var history: [UInt8]
    var newest = 0
    var sinceOutput = 0
  }

  func makeChannel() -> Channel {
    Channel(history: [UInt8](repeating: 0x69, count: historyBytes))  // DSD silence
  }

  /// Converts `count` MSB-first DSD bytes of one channel into 24-bit samples, left-justified, at
  /// `destination[0]`, `destination[stride]`, …; returns how many.
  @discardableResult
  func convert(
    _ bytes: UnsafePointer<UInt8>, count: Int, channel: inout Channel, into destination: UnsafeMutablePointer<Int32>,
    stride: Int
  ) -> Int {
    let span = historyBytes
    let step = bytesPerSample
    var written = 0
    tables.withUnsafeBufferPointer { tables in
      channel.history.withUnsafeMutableBufferPointer { history in
        var newest = channel.newest
        var since = channel.sinceOutput
        for i in 0..<count {
          newest = newest == span - 1 ? 0 : newest + 1
          history[newest] = bytes[i]
          since += 1
          guard since == step else { continue }
          since = 0
          var acc: Float = 0
          var slot = newest
          for j in 0..<span {
            acc += tables[j &* 256 &+ Int(history[slot])]
            slot = slot == 0 ? span - 1 : slot - 1
          }
          let scaled = (acc * 8_388_607).rounded()
          let sample = Int32(max(-8_388_608, min(8_388_607, scaled)))
          destination[written * stride] = sample << 8
          written += 1
        }
        channel.newest = newest
        channel.sinceOutput = since
      }
    }
    return written
  }
}
