import AudioOutput
import Decoders
import Logging
import Resampling

/// The rates the player offers LMS and plays at, and how DSD reaches the output: `-r`, `-Z`, `-R`
/// and `-D` weighed against what the output device takes.
extension Player {
  /// `-R`: the recipe and the rates the output takes (`-r`, else what the device accepts, else
  /// every common rate); nil without `-R` or without libsoxr.
  func resamplingSettings() -> ResamplingSettings? {
    guard let recipe = settings.resampling else { return nil }
    let logger = Logger(label: LogConfiguration.Category.decode.rawValue)
    if let problem = Resampler.libraryProblem() {
      logger.warning("resampling off: libsoxr cannot be loaded (\(problem)); install libsoxr0")
      return nil
    }
    let rates = outputRates()
    logger.info("resampling on: recipe \(recipe), output rates \(rates.map(String.init).joined(separator: ","))")
    return ResamplingSettings(recipe: recipe, supportedRates: rates)
  }

  /// DoP when `-D` asks for it, up to the highest DoP rate the output plays as it is (DoP never
  /// goes through the resampler); else, and on a 16-bit output, which cannot carry DoP's 24 bits,
  /// PCM. Native DSD when `-D` names a format the output takes, up to its highest frame rate in
  /// that format (and `-r`'s); else PCM, at a rate the output plays.
  func dsdOutput() -> DSDOutput {
    let pcmLimit = playableRate()
    let pcm = DSDOutput(delivery: .pcm, maximumPCMRate: pcmLimit)
    guard let option = settings.dsdOutput else { return pcm }
    let logger = Logger(label: LogConfiguration.Category.output.rawValue)
    if let native = option.format.nativeDSD {
      let deviceLimit: Int
      switch settings.output {
      case .standardOutput, .null:
        deviceLimit = pcmLimit
      case .alsa(let device):
        guard let limit = ALSADevices.maximumRate(of: device, nativeDSD: native) else {
          logger.warning("-D: \(device) takes no \(native.alsaName) (or cannot be opened now); DSD is converted to PCM")
          return pcm
        }
        deviceLimit = limit
      }
      let limit = min(deviceLimit, settings.rates?.maximum ?? Int.max)
      // A limit beyond ALSA's 32-bit rates is no limit (stdout, null, ALSA's own null device).
      let shown = limit >= Int(UInt32.max) ? "any frame rate" : "frame rates up to \(limit) Hz"
      logger.info("-D: native DSD as \(native.alsaName), \(shown)")
      return DSDOutput(delivery: .native(native), maximumRate: limit, maximumPCMRate: pcmLimit)
    }
    if settings.outputParameters.format == .s16 {
      logger.warning("-D: a 16-bit output cannot carry DoP; DSD is converted to PCM")
      return pcm
    }
    // As squeezelite: DoP only at a rate the output claims (-Z is what the server is told, not this).
    let limit = pcmLimit
    // DoP rates: a sixteenth of DSD64 to DSD1024, in both families.
    let dopRates = [1, 2, 4, 8, 16].flatMap { [176_400 * $0, 192_000 * $0] }
    let playable = dopRates.filter { $0 <= limit && (settings.rates?.rates.contains($0) ?? true) }
    return DSDOutput(delivery: .dop, maximumRate: playable.max() ?? 0, maximumPCMRate: pcmLimit)
  }

  /// The rates the output claims, highest first, by squeezelite's rules: `-r` for every output;
  /// else standard output only 44.1 kHz (squeezelite's output_stdout.c), the null output every
  /// rate squeezelite tries (it is ALSA's null device there), ALSA what the device accepts of them.
  /// `-R` resamples to these; the highest is what the server is told (unless `-Z`) and bounds DoP
  /// and native DSD.
  func outputRates() -> [Int] {
    if let rates = settings.rates { return rates.rates }
    switch settings.output {
    case .standardOutput: return [44100]
    case .null: return RateSpecification.probeRates
    case .alsa(let device):
      let accepted = ALSADevices.supportedRates(of: device, among: RateSpecification.probeRates) ?? []
      // A device that cannot be probed now (a DAC off at start, busy): the rates up to 384 kHz, which
      // most take (squeezelite would not start; -r says better).
      return accepted.isEmpty ? RateSpecification.probeRates.filter { $0 <= Self.unprobedMaximum } : accepted
    }
  }

  static var unprobedMaximum: Int { 384_000 }

  /// The highest rate the output claims (`outputRates`).
  func playableRate() -> Int {
    if let rates = settings.rates { return rates.maximum }
    switch settings.output {
    case .standardOutput, .null: return outputRates().max() ?? 44100
    case .alsa(let device): return ALSADevices.maximumRate(of: device) ?? Self.unprobedMaximum
    }
  }

  /// `MaxSampleRate` in HELO: `-Z` when given, else the highest rate the output claims, as squeezelite
  /// (built with its resampler, as Debian's is) tells the server.
  func maximumSampleRate() -> Int {
    let playable = playableRate()
    if let limit = settings.maximumRateLimit, limit > playable, settings.resampling == nil,
      case .alsa(let device) = settings.output
    {
      Logger(label: LogConfiguration.Category.output.rawValue).warning(
        "-Z \(limit): \(device) plays at most \(playable) Hz and -R is off: the server may send what it cannot play")
    }
    return settings.maximumRateLimit ?? playable
  }
}
