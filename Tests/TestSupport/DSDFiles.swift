#if canImport(Glibc)
  import Glibc
#endif

/// DSD files made in the tests (no Debian tool writes them): DSF and DSDIFF around bits from a
/// seeded generator or from a 2nd-order sigma-delta modulator of a sine, and the DoP frames the
/// standard makes of them.
public enum DSDFiles {
  public static let dsd64 = 2_822_400

  /// MSB-first bytes per channel (in time order), as a modulator makes them.
  public typealias Channels = [[UInt8]]

  public static func reverseBits(_ byte: UInt8) -> UInt8 {
    var r: UInt8 = 0
    for k in 0..<8 where byte & (1 << k) != 0 { r |= 0x80 >> k }
    return r
  }

  public static func le(_ value: UInt64, _ count: Int) -> [UInt8] {
    (0..<count).map { UInt8((value >> (8 * $0)) & 0xFF) }
  }
  public static func be(_ value: UInt64, _ count: Int) -> [UInt8] { le(value, count).reversed() }

  /// A DSF file: LSB first, blocks of `blockSize` per channel; the last block padded with zeros
  /// (the header counts the real samples); `tag` (an ID3 chunk) after the audio, as the format's
  /// metadata.
  public static func dsf(
    _ channels: Channels, rate: Int = dsd64, blockSize: Int = 4096, samples: Int? = nil, tag: [UInt8]? = nil
  ) -> [UInt8] {
    let perChannel = channels[0].count
    let blocks = (perChannel + blockSize - 1) / blockSize
    var data: [UInt8] = []
    for block in 0..<blocks {
      for channel in channels {
        for i in 0..<blockSize {
          let index = block * blockSize + i
          data.append(index < channel.count ? reverseBits(channel[index]) : 0)
        }
      }
    }
    var fmt: [UInt8] = Array("fmt ".utf8) + le(52, 8) + le(1, 4) + le(0, 4) + le(2, 4)
    fmt += le(UInt64(channels.count), 4) + le(UInt64(rate), 4) + le(1, 4)
    fmt += le(UInt64(samples ?? perChannel * 8), 8) + le(UInt64(blockSize), 4) + le(0, 4)
    let dataChunk = Array("data".utf8) + le(UInt64(12 + data.count), 8) + data
    let audioEnd = 28 + fmt.count + dataChunk.count
    let total = audioEnd + (tag?.count ?? 0)
    // In steps: Swift 6.2's type checker gives up on the whole sum as one expression.
    var file: [UInt8] = Array("DSD ".utf8) + le(28, 8) + le(UInt64(total), 8)
    file += le(tag == nil ? 0 : UInt64(audioEnd), 8)
    return file + fmt + dataChunk + (tag ?? [])
  }

  /// A DSDIFF file: one byte per channel in turn, MSB first, with the usual property chunks.
  /// A DSDIFF file; `trailing` chunks (name and body) after the audio, as taggers write them.
  public static func dff(
    _ channels: Channels, rate: Int = dsd64, compression: String = "DSD ", trailing: [(String, [UInt8])] = []
  ) -> [UInt8] {
    func chunk(_ id: String, _ body: [UInt8]) -> [UInt8] {
      Array(id.utf8) + be(UInt64(body.count), 8) + body + (body.count % 2 == 1 ? [0] : [])
    }
    let ids = ["SLFT", "SRGT", "C   ", "LFE "].prefix(channels.count).flatMap { Array($0.utf8) }
    let name = Array("not compressed".utf8)
    var prop: [UInt8] = Array("SND ".utf8)
    prop += chunk("FS  ", be(UInt64(rate), 4))
    prop += chunk("CHNL", be(UInt64(channels.count), 2) + ids)
    prop += chunk("CMPR", Array(compression.utf8) + [UInt8(name.count)] + name)
    prop += chunk("ABSS", be(0, 8))
    var interleaved: [UInt8] = []
    for i in 0..<channels[0].count { for channel in channels { interleaved.append(channel[i]) } }
    var body = Array("DSD ".utf8) + chunk("FVER", be(0x0105_0000, 4)) + chunk("PROP", prop) + chunk("DSD ", interleaved)
    for (id, content) in trailing { body += chunk(id, content) }
    return Array("FRM8".utf8) + be(UInt64(body.count), 8) + body
  }

  public static func randomChannels(_ count: Int, bytes: Int, seed: UInt64) -> Channels {
    var state = seed
    func next() -> UInt64 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
    return (0..<count).map { _ in (0..<bytes).map { _ in UInt8(truncatingIfNeeded: next()) } }
  }

  /// A 2nd-order sigma-delta modulator of `amplitude` × sin at `frequency` (stereo: the right
  /// channel a quarter period later), `bytes` bytes per channel.
  public static func modulatedSine(frequency: Double, amplitude: Double, bytes: Int, rate: Int = dsd64) -> Channels {
    (0..<2).map { (channel: Int) -> [UInt8] in
      var first = 0.0
      var second = 0.0
      var out = [UInt8](repeating: 0, count: bytes)
      for n in 0..<bytes * 8 {
        let x = amplitude * sin(2 * .pi * frequency * Double(n) / Double(rate) + Double(channel) * .pi / 2)
        let y: Double = second >= 0 ? 1 : -1
        first += x - y
        second += first - y
        if y > 0 { out[n / 8] |= 0x80 >> (n % 8) }
      }
      return out
    }
  }

  /// Native DSD as ALSA's `DSD_U8`… formats define it, byte for byte: each sample holds `bytes`
  /// DSD bytes of its channel in time order, the earliest the most significant, stored big- or
  /// little-endian; left then right; a last sample short of bytes completed with DSD silence 0x69.
  public static func expectedNativeBytes(_ channels: Channels, bytes: Int, littleEndian: Bool) -> [UInt8] {
    let left = channels[0]
    let right = channels.count > 1 ? channels[1] : channels[0]
    var out: [UInt8] = []
    for start in stride(from: 0, to: left.count, by: bytes) {
      for side in [left, right] {
        let sample = (start..<start + bytes).map { $0 < side.count ? side[$0] : 0x69 }
        out += littleEndian ? sample.reversed() : sample
      }
    }
    return out
  }

  /// The output ring's samples for native DSD: each sample's bytes as the big-endian formats
  /// store them (the earliest DSD byte on top), left-justified in 32 bits.
  public static func expectedNativeSamples(_ channels: Channels, bytes: Int) -> [Int32] {
    let stored = expectedNativeBytes(channels, bytes: bytes, littleEndian: false)
    return stride(from: 0, to: stored.count, by: bytes).map { start in
      let word = stored[start..<start + bytes].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
      return Int32(bitPattern: word << (32 - 8 * UInt32(bytes)))
    }
  }

  /// DoP frames as the standard writes them: per frame two bytes of each channel behind a marker
  /// byte, 0x05 and 0xFA in turn; an odd last byte completed with 0x69.
  public static func expectedDoP(_ channels: Channels) -> [Int32] {
    let left = channels[0]
    let right = channels.count > 1 ? channels[1] : channels[0]
    var out: [Int32] = []
    for f in 0..<(left.count + 1) / 2 {
      let marker: UInt32 = f % 2 == 0 ? 0x05 : 0xFA
      for side in [left, right] {
        let second = 2 * f + 1 < side.count ? side[2 * f + 1] : 0x69
        out.append(Int32(bitPattern: marker << 24 | UInt32(side[2 * f]) << 16 | UInt32(second) << 8))
      }
    }
    return out
  }
}
