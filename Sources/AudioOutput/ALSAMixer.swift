import CALSA

#if canImport(Glibc)
  import Glibc
#endif

/// One control of an ALSA simple mixer (`-V`, `-U`): the DAC's own volume, so the samples sent to
/// it stay bit-exact. Not thread-safe; `HardwareVolume` confines it to one queue.
public final class ALSAMixer {
  public enum MixerError: Error, Equatable, CustomStringConvertible {
    case cannotOpen(device: String, reason: String)
    case noSuchControl(device: String, control: String)

    public var description: String {
      switch self {
      case .cannotOpen(let device, let reason): "cannot open mixer \(device): \(reason)"
      case .noSuchControl(let device, let control): "mixer \(device) has no playback control '\(control)'"
      }
    }
  }

  /// How a gain reaches the control: in dB when the control says what its steps are worth,
  /// otherwise spread evenly over the raw range as −72…0 dB (a control without a dB scale).
  public enum Scale: Equatable, Sendable {
    /// Hundredths of a dB.
    case decibels(minimum: Int, maximum: Int)
    case raw(minimum: Int, maximum: Int)
  }

  /// Below this span a dB scale is too coarse to use as one (as squeezelite decides too).
  static let minimumDecibelSpan = 1000
  /// The span a raw control stands for.
  public static let rawSpanDecibels = 72.0

  public let device: String
  public let control: String
  public let scale: Scale
  private let mixer: OpaquePointer
  private let element: OpaquePointer

  /// `control` may carry an index: `Digital,1`. `linear` (`-X`): the raw scale even when the
  /// control has a usable dB scale.
  public init(device: String, control: String, linear: Bool = false) throws(MixerError) {
    self.device = device
    self.control = control
    let (name, index) = Self.split(control)
    var handle: OpaquePointer?
    var result = snd_mixer_open(&handle, 0)
    guard result == 0, let handle else { throw .cannotOpen(device: device, reason: alsaError(result)) }
    result = snd_mixer_attach(handle, device)
    if result == 0 { result = snd_mixer_selem_register(handle, nil, nil) }
    if result == 0 { result = snd_mixer_load(handle) }
    guard result == 0 else {
      snd_mixer_close(handle)
      throw .cannotOpen(device: device, reason: alsaError(result))
    }
    var identifier: OpaquePointer?
    snd_mixer_selem_id_malloc(&identifier)
    defer { snd_mixer_selem_id_free(identifier) }
    snd_mixer_selem_id_set_name(identifier, name)
    snd_mixer_selem_id_set_index(identifier, index)
    guard let element = snd_mixer_find_selem(handle, identifier), snd_mixer_selem_has_playback_volume(element) != 0
    else {
      snd_mixer_close(handle)
      throw .noSuchControl(device: device, control: control)
    }
    mixer = handle
    self.element = element
    var low = 0
    var high = 0
    if !linear, snd_mixer_selem_get_playback_dB_range(element, &low, &high) == 0, high - low >= Self.minimumDecibelSpan
    {
      scale = .decibels(minimum: low, maximum: high)
    } else {
      snd_mixer_selem_get_playback_volume_range(element, &low, &high)
      scale = .raw(minimum: low, maximum: high)
    }
  }

  deinit { snd_mixer_close(mixer) }

  /// Sets the server's 16.16 gains (65536 = 0 dB; 0 = silent). False when the mixer is gone
  /// (a DAC unplugged, a sound server restarted): it must be opened again.
  @discardableResult
  public func setGain(left: UInt32, right: UInt32) -> Bool {
    let muted = left == 0 && right == 0
    var worst: Int32 = 0
    if snd_mixer_selem_has_playback_switch(element) != 0 {
      worst = min(worst, snd_mixer_selem_set_playback_switch_all(element, muted ? 0 : 1))
    }
    if snd_mixer_selem_is_playback_mono(element) != 0 {
      worst = min(worst, set(SND_MIXER_SCHN_MONO, gain: max(left, right)))
    } else {
      worst = min(worst, set(SND_MIXER_SCHN_FRONT_LEFT, gain: left))
      worst = min(worst, set(SND_MIXER_SCHN_FRONT_RIGHT, gain: right))
    }
    return worst >= 0
  }

  /// `-U`: unmuted and at full volume; the volume is then the player's own. False when the
  /// mixer is gone.
  @discardableResult
  public func setToMaximum() -> Bool {
    var switched: Int32 = 0
    if snd_mixer_selem_has_playback_switch(element) != 0 {
      switched = snd_mixer_selem_set_playback_switch_all(element, 1)
    }
    var low = 0
    var high = 0
    snd_mixer_selem_get_playback_volume_range(element, &low, &high)
    return snd_mixer_selem_set_playback_volume_all(element, high) >= 0 && switched >= 0
  }

  /// The control's raw value on the left (or only) channel, as `amixer` shows it.
  public func rawValue() -> Int {
    var value = 0
    snd_mixer_handle_events(mixer)
    snd_mixer_selem_get_playback_volume(element, SND_MIXER_SCHN_FRONT_LEFT, &value)
    return value
  }

  private func set(_ channel: snd_mixer_selem_channel_id_t, gain: UInt32) -> Int32 {
    switch Self.setting(for: gain, scale: scale) {
    case .decibels(let hundredths):
      snd_mixer_selem_set_playback_dB(element, channel, hundredths, 1)
    case .raw(let value):
      snd_mixer_selem_set_playback_volume(element, channel, value)
    }
  }

  public enum Setting: Equatable {
    case decibels(Int)
    case raw(Int)
  }

  /// What a 16.16 gain becomes on a control with this scale: 20·log10(gain / 65536) dB, clamped
  /// to what the control can do; gain 0 is the control's minimum.
  public static func setting(for gain: UInt32, scale: Scale) -> Setting {
    let decibels = gain == 0 ? -Double.infinity : 20 * log10(Double(gain) / 65536)
    switch scale {
    case .decibels(let minimum, let maximum):
      guard decibels.isFinite else { return .decibels(minimum) }
      return .decibels(min(maximum, max(minimum, Int((decibels * 100).rounded()))))
    case .raw(let minimum, let maximum):
      guard decibels.isFinite else { return .raw(minimum) }
      let fraction = min(1, max(0, (decibels + rawSpanDecibels) / rawSpanDecibels))
      return .raw(minimum + Int((fraction * Double(maximum - minimum)).rounded()))
    }
  }

  static func split(_ control: String) -> (name: String, index: UInt32) {
    guard let comma = control.lastIndex(of: ","), let index = UInt32(control[control.index(after: comma)...]) else {
      return (control, 0)
    }
    return (String(control[..<comma]), index)
  }

  /// Playback controls with a volume on a mixer device (`-L`).
  public static func controls(device: String) -> [String] {
    var handle: OpaquePointer?
    guard snd_mixer_open(&handle, 0) == 0, let handle else { return [] }
    defer { snd_mixer_close(handle) }
    guard snd_mixer_attach(handle, device) == 0, snd_mixer_selem_register(handle, nil, nil) == 0,
      snd_mixer_load(handle) == 0
    else { return [] }
    var names: [String] = []
    var element = snd_mixer_first_elem(handle)
    while let current = element {
      if snd_mixer_selem_has_playback_volume(current) != 0, let name = snd_mixer_selem_get_name(current) {
        let index = snd_mixer_selem_get_index(current)
        names.append(String(cString: name) + (index == 0 ? "" : ",\(index)"))
      }
      element = snd_mixer_elem_next(current)
    }
    return names
  }

  /// The mixer device of an output PCM: `hw:1,0` → `hw:1`, `hw:CARD=x,DEV=0` → `hw:CARD=x`; other
  /// names as they are (`default`, `pulse`).
  public static func device(forOutput output: String) -> String {
    for prefix in ["hw:", "plughw:", "sysdefault:", "front:", "iec958:"] where output.hasPrefix(prefix) {
      let card = output.dropFirst(prefix.count).split(separator: ",").first.map(String.init) ?? ""
      return "hw:" + card
    }
    return output
  }
}
