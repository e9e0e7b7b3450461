import CSoxr

#if canImport(Glibc)
  import Glibc
#endif

/// squeezelite's `-R`/`-u` argument, `recipe:flags:attenuation:precision:passband_end:stopband_begin:phase_response`,
/// every field optional:
/// - recipe letters: quality `v`ery high, `h`igh (the default), `m`edium, `l`ow, `q`uick; phase `L`inear
///   (the default), `I`ntermediate, `M`inimum; `s` steep filter; `E` resample only a rate the output
///   lacks; `X` resample to the output's highest rate instead of the highest "sync" rate;
/// - flags: libsoxr's quality flags, in hex;
/// - attenuation in dB (default 1, against clipping), precision in bits, passband end and stopband
///   begin in per cent of Nyquist, phase response 0 (minimum) … 50 (linear) … 100.
public struct ResampleRecipe: Equatable, Sendable, CustomStringConvertible {
  public enum Quality: UInt, Sendable {
    case quick = 0
    case low = 1
    case medium = 2
    case high = 4
    case veryHigh = 6
  }

  public enum Phase: UInt, Sendable {
    case linear = 0x00
    case intermediate = 0x10
    case minimum = 0x30
  }

  public var quality = Quality.high
  public var phase = Phase.linear
  public var steepFilter = false
  /// `E`: a rate the output supports plays as it is.
  public var onlyUnsupportedRates = false
  /// `X`: always the output's highest rate.
  public var toHighestRate = false
  public var flags: UInt = 0
  public var attenuationDecibels = 1.0
  public var precisionBits: Double?
  public var passbandEndPercent: Double?
  public var stopbandBeginPercent: Double?
  public var phaseResponse: Double?

  public init() {}

  public init(parsing text: String) throws(RecipeError) {
    let fields = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
    guard fields.count <= 7 else {
      throw .invalid(text, "at most 7 fields (recipe:flags:attenuation:precision:passband:stopband:phase)")
    }
    func field(_ index: Int) -> String? {
      index < fields.count && !fields[index].isEmpty ? fields[index] : nil
    }
    if let letters = field(0) {
      for letter in letters {
        switch letter {
        case "v": quality = .veryHigh
        case "h": quality = .high
        case "m": quality = .medium
        case "l": quality = .low
        case "q": quality = .quick
        case "L": phase = .linear
        case "I": phase = .intermediate
        case "M": phase = .minimum
        case "s": steepFilter = true
        case "E": onlyUnsupportedRates = true
        case "X": toHighestRate = true
        default: throw .invalid(text, "unknown recipe letter '\(letter)' (known: v h m l q, L I M, s, E X)")
        }
      }
    }
    if let value = field(1) {
      guard let parsed = UInt(value.hasPrefix("0x") ? String(value.dropFirst(2)) : value, radix: 16) else {
        throw .invalid(text, "flags '\(value)' are not hexadecimal")
      }
      flags = parsed
    }
    func number(_ index: Int, _ name: String, in range: ClosedRange<Double>) throws(RecipeError) -> Double? {
      guard let value = field(index) else { return nil }
      guard let parsed = Double(value), range.contains(parsed) else {
        throw .invalid(text, "\(name) '\(value)' is not a number in \(range.lowerBound)…\(range.upperBound)")
      }
      return parsed
    }
    if let decibels = try number(2, "attenuation", in: 0...96) { attenuationDecibels = decibels }
    precisionBits = try number(3, "precision", in: 1...33)
    passbandEndPercent = try number(4, "passband end", in: 1...100)
    stopbandBeginPercent = try number(5, "stopband begin", in: 1...200)
    phaseResponse = try number(6, "phase response", in: 0...100)
    if let passbandEndPercent, let stopbandBeginPercent, stopbandBeginPercent <= passbandEndPercent {
      throw .invalid(text, "the stopband must begin after the passband ends")
    }
  }

  public var description: String {
    let quality: String =
      switch self.quality {
      case .quick: "quick"
      case .low: "low"
      case .medium: "medium"
      case .high: "high"
      case .veryHigh: "very high"
      }
    var words = ["\(quality) quality", "\(phase) phase"]
    if steepFilter { words.append("steep") }
    if onlyUnsupportedRates { words.append("only rates the output lacks") }
    if toHighestRate { words.append("to the highest rate") }
    words.append("-\(attenuationDecibels) dB")
    return words.joined(separator: ", ")
  }

  /// The gain the resampler applies.
  public var scale: Double { Self.decibelsToGain(-attenuationDecibels) }

  var soxrSpec: slimplay_soxr_spec {
    slimplay_soxr_spec(
      recipe: UInt(quality.rawValue | phase.rawValue | (steepFilter ? UInt(SLIMPLAY_SOXR_STEEP_FILTER) : 0)),
      flags: flags, precision: precisionBits ?? 0, passband_end: (passbandEndPercent ?? 0) / 100,
      stopband_begin: (stopbandBeginPercent ?? 0) / 100, phase_response: phaseResponse ?? -1, scale: scale)
  }

  static func decibelsToGain(_ decibels: Double) -> Double { pow(10, decibels / 20) }
}

public struct RecipeError: Error, Equatable, CustomStringConvertible {
  public let description: String

  static func invalid(_ text: String, _ reason: String) -> RecipeError {
    RecipeError(description: "invalid resampling recipe '\(text)': \(reason)")
  }
}
