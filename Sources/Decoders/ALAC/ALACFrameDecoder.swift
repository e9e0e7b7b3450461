/// Decodes Apple Lossless packets (one MP4 sample each) into per-channel 32-bit samples, right-
/// justified at the stream's bit depth. Pure computation, no I/O: every buffer is allocated when
/// it is created (from the configuration), none per packet.
///
/// A packet is a run of elements: single channels (SCE, and LFE alike), channel pairs (CPE, the
/// second channel coded as a difference and unmixed), data and fill elements (skipped), and END.
/// Each channel's residuals are adaptive-Golomb coded and pass through an adaptive FIR predictor;
/// 24- and 32-bit streams carry their low bytes uncompressed in a "shift buffer".
final class ALACFrameDecoder {
  let config: ALACConfig
  /// Decoded samples of each channel, `config.frameLength` each.
  private let channelSamples: UnsafeMutablePointer<Int32>
  /// Residuals / predictor output of the one or two channels of an element.
  private let residualU: UnsafeMutablePointer<Int32>
  private let residualV: UnsafeMutablePointer<Int32>
  private let shifted: UnsafeMutablePointer<UInt32>
  private var coefsU = [Int16](repeating: 0, count: 32)
  private var coefsV = [Int16](repeating: 0, count: 32)

  init(config: ALACConfig) {
    self.config = config
    let n = config.frameLength
    channelSamples = .allocate(capacity: n * config.channels)
    residualU = .allocate(capacity: n)
    residualV = .allocate(capacity: n)
    shifted = .allocate(capacity: n * 2)
  }

  deinit {
    channelSamples.deallocate()
    residualU.deallocate()
    residualV.deallocate()
    shifted.deallocate()
  }

  /// Channel `index`'s samples of the last packet decoded.
  func samples(ofChannel index: Int) -> UnsafePointer<Int32> {
    UnsafePointer(channelSamples + index * config.frameLength)
  }

  private enum Element: UInt32 {
    case single = 0, pair = 1, coupling = 2, lowFrequency = 3, data = 4, programConfig = 5, fill = 6, end = 7
  }

  /// Decodes one packet; returns its frames (samples a channel).
  func decode(packet: UnsafeRawBufferPointer) throws(DecodeError) -> Int {
    guard packet.count > 0 else { throw .corrupt("ALAC: empty packet") }
    var bits = ALACBitReader(packet)
    var channel = 0
    var frames = config.frameLength
    elements: while channel < config.channels {
      guard let element = Element(rawValue: bits.read(3)) else { break }
      switch element {
      case .single, .lowFrequency:
        frames = try decodeElement(&bits, pair: false, into: channel, frames: frames)
        channel += 1
      case .pair:
        guard channel + 2 <= config.channels else { throw .corrupt("ALAC: a channel pair beyond channel \(channel)") }
        frames = try decodeElement(&bits, pair: true, into: channel, frames: frames)
        channel += 2
      case .data:
        bits.skip(4)
        let aligned = bits.read(1) == 1
        var count = Int(bits.read(8))
        if count == 255 { count += Int(bits.read(8)) }
        if aligned { bits.alignToByte() }
        bits.skip(count * 8)
      case .fill:
        var count = Int(bits.read(4))
        if count == 15 { count += Int(bits.read(8)) - 1 }
        bits.skip(count * 8)
      case .end:
        break elements
      case .coupling, .programConfig:
        throw .unsupportedStream("ALAC element \(element) (not in Apple Lossless streams)")
      }
      guard !bits.overran else { throw .corrupt("ALAC: packet of \(packet.count) bytes ends inside an element") }
    }
    if channel < config.channels {
      (channelSamples + channel * config.frameLength).initialize(
        repeating: 0, count: (config.channels - channel) * config.frameLength)
    }
    return frames
  }

  private func decodeElement(
    _ bits: inout ALACBitReader, pair: Bool, into channel: Int, frames: Int
  ) throws(DecodeError) -> Int {
    bits.skip(4)  // element instance tag
    guard bits.read(12) == 0 else { throw .corrupt("ALAC: element header's reserved bits set") }
    let partial = bits.read(1) == 1
    let bytesShifted = Int(bits.read(2))
    let escaped = bits.read(1) == 1
    guard bytesShifted < 3 else { throw .corrupt("ALAC: \(bytesShifted) bytes shifted") }
    var frames = frames
    if partial {
      frames = Int(bits.read(32))
      guard (1...config.frameLength).contains(frames) else {
        throw .corrupt("ALAC: packet of \(frames) frames, more than \(config.frameLength)")
      }
    }
    let channels = pair ? 2 : 1
    let out0 = channelSamples + channel * config.frameLength
    let out1 = channelSamples + (channel + 1) * config.frameLength
    if escaped {
      // Uncompressed: chanBits-wide two's complement samples, interleaved.
      let width = config.bitDepth
      for i in 0..<frames {
        out0[i] = signExtend(bits.read(width), width)
        if pair { out1[i] = signExtend(bits.read(width), width) }
      }
      return frames
    }
    let chanBits = config.bitDepth - 8 * bytesShifted + (pair ? 1 : 0)
    guard chanBits >= 1 && chanBits <= 32 else { throw .corrupt("ALAC: \(chanBits)-bit channel") }
    let mixBits = Int32(bits.read(8))
    let mixRes = Int32(Int8(truncatingIfNeeded: bits.read(8)))
    let u = try readPredictorParameters(&bits, coefs: &coefsU)
    let v = pair ? try readPredictorParameters(&bits, coefs: &coefsV) : u
    let shiftPosition = bits.position
    bits.skip(8 * bytesShifted * channels * frames)
    guard !bits.overran else { throw .corrupt("ALAC: packet ends inside its shift buffer") }

    try AdaptiveGolomb.decode(
      &bits, into: residualU, count: frames, chanBits: chanBits, pb: config.pb * UInt32(u.pbFactor) / 4,
      mb: config.mb, kb: config.kb)
    predict(residualU, frames: frames, coefs: &coefsU, parameters: u, chanBits: chanBits)
    if pair {
      try AdaptiveGolomb.decode(
        &bits, into: residualV, count: frames, chanBits: chanBits, pb: config.pb * UInt32(v.pbFactor) / 4,
        mb: config.mb, kb: config.kb)
      predict(residualV, frames: frames, coefs: &coefsV, parameters: v, chanBits: chanBits)
    }
    if bytesShifted > 0 {
      var shiftBits = bits
      shiftBits.seek(to: shiftPosition)
      let width = 8 * bytesShifted
      for i in 0..<frames * channels { shifted[i] = shiftBits.read(width) }
    }
    let shift = Int32(8 * bytesShifted)
    if pair {
      for i in 0..<frames {
        var left = residualU[i]
        var right = residualV[i]
        if mixRes != 0 {
          left = residualU[i] &+ residualV[i] &- ((mixRes &* residualV[i]) >> mixBits)
          right = left &- residualV[i]
        }
        if bytesShifted > 0 {
          left = (left &<< shift) | Int32(bitPattern: shifted[2 * i])
          right = (right &<< shift) | Int32(bitPattern: shifted[2 * i + 1])
        }
        out0[i] = left
        out1[i] = right
      }
    } else {
      for i in 0..<frames {
        out0[i] = bytesShifted > 0 ? (residualU[i] &<< shift) | Int32(bitPattern: shifted[i]) : residualU[i]
      }
    }
    return frames
  }

  private struct PredictorParameters {
    var mode: Int
    var denShift: Int
    var pbFactor: Int
    var order: Int
  }

  private func readPredictorParameters(
    _ bits: inout ALACBitReader, coefs: inout [Int16]
  ) throws(DecodeError) -> PredictorParameters {
    let mode = Int(bits.read(4))
    let denShift = Int(bits.read(4))
    let pbFactor = Int(bits.read(3))
    let order = Int(bits.read(5))
    for i in 0..<order { coefs[i] = Int16(truncatingIfNeeded: bits.read(16)) }
    guard denShift > 0 || order == 0 || order == 31 else { throw .corrupt("ALAC: predictor shift 0") }
    return PredictorParameters(mode: mode, denShift: denShift, pbFactor: pbFactor, order: order)
  }

  private func predict(
    _ samples: UnsafeMutablePointer<Int32>, frames: Int, coefs: inout [Int16], parameters: PredictorParameters,
    chanBits: Int
  ) {
    if parameters.mode != 0 {
      ALACPredictor.run(samples, frames: frames, coefs: &coefs, order: 31, denShift: 0, chanBits: chanBits)
    }
    ALACPredictor.run(
      samples, frames: frames, coefs: &coefs, order: parameters.order, denShift: parameters.denShift,
      chanBits: chanBits)
  }
}

@inline(__always)
func signExtend(_ value: UInt32, _ bits: Int) -> Int32 {
  let shift = Int32(32 - bits)
  return (Int32(bitPattern: value) &<< shift) >> shift
}
