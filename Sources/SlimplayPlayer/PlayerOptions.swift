import AudioBuffers
import SlimConnection
import SlimProto
import Support

/// Where decoded audio goes (`-o`).
public enum OutputTarget: Equatable, Sendable {
  /// An ALSA PCM by name (`default`, `hw:1,0`, `pulse`…).
  case alsa(String)
  /// Raw interleaved little-endian PCM on standard output (`-o -`).
  case standardOutput
  /// Discarded, but paced at real time (`-o null`).
  case null

  public init(_ text: String) {
    switch text {
    case "-": self = .standardOutput
    case "null": self = .null
    default: self = .alsa(text)
    }
  }
}

/// `-a`: for ALSA `buffer:period:format:mmap`; for `-o -` just the sample size.
public struct OutputParameters: Equatable, Sendable {
  public enum SampleFormat: String, Equatable, Sendable, CaseIterable {
    case s16 = "16"
    case s24 = "24"
    case s24_3 = "24_3"
    case s32 = "32"
  }

  /// Below 500: milliseconds; otherwise frames (as squeezelite's code does). nil: the device's
  /// default (40 ms on hardware, more through a sound server).
  public var buffer: Int?
  /// Below 50: a period count; otherwise a period size in frames.
  public var period: Int = 4
  /// nil = probe S32_LE → S24_LE → S24_3LE → S16_LE (ALSA), 32-bit on stdout.
  public var format: SampleFormat?
  public var mmap = true

  public init() {}

  public init(parsing text: String, forStandardOutput: Bool) throws(OptionError) {
    if forStandardOutput {
      guard let format = SampleFormat(rawValue: text), format != .s24_3 else {
        throw .invalid("-a", text, "with -o - the sample size must be 16, 24 or 32")
      }
      self.format = format
      return
    }
    let fields = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
    guard fields.count <= 4 else { throw .invalid("-a", text, "expected buffer:period:format:mmap") }
    if fields.count > 0, !fields[0].isEmpty {
      guard let value = Int(fields[0]), value > 0 else { throw .invalid("-a", text, "bad buffer") }
      buffer = value
    }
    if fields.count > 1, !fields[1].isEmpty {
      guard let value = Int(fields[1]), value > 0 else { throw .invalid("-a", text, "bad period") }
      period = value
    }
    if fields.count > 2, !fields[2].isEmpty {
      guard let value = SampleFormat(rawValue: fields[2]) else {
        throw .invalid("-a", text, "format must be 16, 24, 24_3 or 32")
      }
      format = value
    }
    if fields.count > 3, !fields[3].isEmpty {
      guard fields[3] == "0" || fields[3] == "1" else { throw .invalid("-a", text, "mmap must be 0 or 1") }
      mmap = fields[3] == "1"
    }
  }
}

/// `-b stream:output` in KB. Defaults as squeezelite: 2 MiB and 10 s of 44.1 kHz stereo s32;
/// with offline mode on, 1 MiB and 6 s.
public struct BufferSizes: Equatable, Sendable {
  public var streamBytes = 2 * 1024 * 1024
  public var outputBytes = 44_100 * 8 * 10
  /// `-b` named the output size: resampling leaves it as it is.
  public private(set) var outputIsGiven = false

  public init() {}

  /// The output buffer with tracks resampled up to `maximumRate`: as squeezelite sizes it, as many
  /// seconds at that rate (up to 8 times the bytes), unless `-b` gave the size.
  public func outputBytes(resamplingTo maximumRate: Int) -> Int {
    outputIsGiven ? outputBytes : outputBytes * min(8, max(1, maximumRate / 44100))
  }

  /// With offline mode on, outages are bridged by the cache, not by the buffers: a stalled
  /// stream is handed to its cached copy while audio is left, however little is buffered
  /// (`ServerLiveness`). The buffers only carry playback over the network's unevenness and the
  /// next track's start: together still over 15 s of a 16-bit/44.1 kHz FLAC stream (1 MiB of
  /// stream, 6 s of output), about 4 s of 24-bit/96 kHz. Every byte of them is resident once
  /// played through, 1.9 MB less than squeezelite's sizes.
  public static func withCache() -> BufferSizes {
    var sizes = BufferSizes()
    sizes.streamBytes = 1024 * 1024
    sizes.outputBytes = 44_100 * 8 * 6
    return sizes
  }

  /// Sizes given as `-b`; a field left empty keeps its value in `defaults`.
  public init(parsing text: String, defaults: BufferSizes = BufferSizes()) throws(OptionError) {
    self = defaults
    let fields = text.split(separator: ":", omittingEmptySubsequences: false)
    guard fields.count == 2 || fields.count == 1 else {
      throw .invalid("-b", text, "expected stream:output in KB")
    }
    if !fields[0].isEmpty {
      guard let kb = Int(fields[0]), kb >= 64 else { throw .invalid("-b", text, "stream buffer must be ≥ 64 KB") }
      streamBytes = kb * 1024
    }
    if fields.count == 2, !fields[1].isEmpty {
      guard let kb = Int(fields[1]), kb >= 64 else { throw .invalid("-b", text, "output buffer must be ≥ 64 KB") }
      outputBytes = kb * 1024
      outputIsGiven = true
    }
  }
}

/// `-c`/`-e` over the codec vocabulary.
extension Codec {
  /// Names squeezelite's `-c`/`-e` know for codecs this player does not decode yet: a squeezelite
  /// line that names them still starts (`-c` leaves them out, `-e` has nothing to remove).
  public static let squeezeliteOnlyNames: Set<String> = ["wma"]

  /// `-c` picks and orders codecs; `-e` removes some. Also returns the squeezelite names `-c`
  /// asked for that are left out.
  public static func selection(
    include: String?, exclude: String?
  ) throws(OptionError) -> (codecs: [Codec], leftOut: [String]) {
    let known = "known: dsd, alac, aac, flac, opus, ogg, mp3, pcm"
    var codecs = defaultOrder
    var leftOut: [String] = []
    if let include {
      codecs = []
      for name in include.split(separator: ",").map(String.init) {
        guard let codec = Codec(name: name) else {
          guard squeezeliteOnlyNames.contains(name) else {
            throw .invalid("-c", include, "unknown codec '\(name)' (\(known))")
          }
          leftOut.append(name)
          continue
        }
        if !codecs.contains(codec) { codecs.append(codec) }
      }
    }
    if let exclude {
      for name in exclude.split(separator: ",").map(String.init) where !squeezeliteOnlyNames.contains(name) {
        guard let codec = Codec(name: name) else {
          throw .invalid("-e", exclude, "unknown codec '\(name)' (\(known))")
        }
        codecs.removeAll { $0 == codec }
      }
    }
    guard !codecs.isEmpty else { throw .invalid("-c/-e", include ?? exclude ?? "", "no codec left") }
    return (codecs, leftOut)
  }
}

/// `-r`: the rates the output supports: `max`, `min-max` or a list `r1,r2,…` (an optional `:delay`
/// in ms of silence on a rate change).
public struct RateSpecification: Equatable, Sendable {
  public var rates: [Int]
  public var changeDelayMilliseconds: Int

  /// The rates squeezelite tries on a device (its TEST_RATES), highest first.
  public static let probeRates = [
    1_536_000, 1_411_200, 768000, 705600, 384000, 352800, 192000, 176400, 96000, 88200, 48000, 44100, 32000, 24000,
    22050, 16000, 12000, 11025, 8000,
  ]

  public init(rates: [Int], changeDelayMilliseconds: Int = 0) {
    self.rates = rates
    self.changeDelayMilliseconds = changeDelayMilliseconds
  }

  public init(parsing text: String) throws(OptionError) {
    let (ratePart, delayPart) = text.splitOnce(":")
    var delay = 0
    if let delayPart {
      guard let value = Int(delayPart), value >= 0 else { throw .invalid("-r", text, "bad delay") }
      delay = value
    }
    var rates: [Int] = []
    if ratePart.contains("-") {
      let (low, high) = ratePart.splitOnce("-")
      guard let first = Int(low), let secondText = high, let second = Int(secondText), first > 0, second > 0 else {
        throw .invalid("-r", text, "expected min-max")
      }
      // As squeezelite: the maximum itself, then every rate it tries down to the minimum (either
      // way round).
      let (min, max) = (Swift.min(first, second), Swift.max(first, second))
      rates = [max] + Self.probeRates.filter { $0 >= min && $0 < max }
    } else {
      for item in ratePart.split(separator: ",") {
        guard let rate = Int(item), rate > 0 else { throw .invalid("-r", text, "bad rate '\(item)'") }
        rates.append(rate)
      }
      // A single value is a maximum, as in squeezelite: it, then every lower rate tried ("48000," is
      // a list of one).
      if rates.count == 1 && !ratePart.contains(",") {
        rates = [rates[0]] + Self.probeRates.filter { $0 < rates[0] }
      }
    }
    guard !rates.isEmpty else { throw .invalid("-r", text, "no rate") }
    self.init(rates: Array(Set(rates)).sorted(by: >), changeDelayMilliseconds: delay)
  }

  public var maximum: Int { rates.max() ?? 44100 }
}

/// `-D [delay][:format]`: the output takes DSD. `dop` (the default), `dop24`, `dop24_3`: DSD over
/// PCM, whatever the device's 24- or 32-bit sample format; `u8`, `u16le`, `u16be`, `u32le`,
/// `u32be`: native DSD in ALSA's `DSD_U8`… formats. `delay`: milliseconds of silence around a
/// switch between PCM and DSD, for DACs that mute while they change mode.
public struct DSDOutputOption: Equatable, Sendable {
  public enum Format: String, Equatable, Sendable, CaseIterable {
    case dop, dop24, dop24_3, u8, u16le, u16be, u32le, u32be

    public var isDoP: Bool { self == .dop || self == .dop24 || self == .dop24_3 }

    /// The native format, for `u8`…`u32be`.
    public var nativeDSD: NativeDSDFormat? { NativeDSDFormat(rawValue: rawValue) }
  }

  public var format: Format
  public var switchDelayMilliseconds: Int

  public init(format: Format = .dop, switchDelayMilliseconds: Int = 0) {
    self.format = format
    self.switchDelayMilliseconds = switchDelayMilliseconds
  }

  /// `-D` alone is an empty text.
  public init(parsing text: String) throws(OptionError) {
    let (delayPart, formatPart) = text.splitOnce(":")
    var delay = 0
    if !delayPart.isEmpty {
      guard let value = Int(delayPart), (0...10_000).contains(value) else {
        throw .invalid("-D", text, "delay must be 0 to 10000 ms")
      }
      delay = value
    }
    var format = Format.dop
    if let formatPart, !formatPart.isEmpty {
      guard let value = Format(rawValue: formatPart) else {
        throw .invalid("-D", text, "format is one of " + Format.allCases.map(\.rawValue).joined(separator: ", "))
      }
      format = value
    }
    self.init(format: format, switchDelayMilliseconds: delay)
  }
}

public struct OptionError: Error, CustomStringConvertible, Equatable {
  public let description: String

  public static func invalid(_ flag: String, _ value: String, _ reason: String) -> OptionError {
    OptionError(description: "invalid \(flag) '\(value)': \(reason)")
  }
}

extension String {
  func splitOnce(_ separator: Character) -> (String, String?) {
    guard let index = firstIndex(of: separator) else { return (self, nil) }
    return (String(self[..<index]), String(self[self.index(after: index)...]))
  }
}
