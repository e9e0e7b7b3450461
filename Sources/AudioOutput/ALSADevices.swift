import AudioBuffers
import CALSA
import CSupport

/// ALSA PCM names and what the hardware behind them supports.
public enum ALSADevices {
  public struct Device: Equatable, Sendable {
    public var name: String
    public var description: String
  }

  /// Sends alsa-lib's own messages to `sink` instead of standard error, where a device retried
  /// every second would print one each time.
  public static func routeLibraryMessages(to sink: @convention(c) (UnsafePointer<CChar>?) -> Void) {
    slimplay_alsa_set_message_sink(sink)
  }

  /// Playback PCMs from ALSA's name hints (what `aplay -L` shows).
  public static func list() -> [Device] {
    var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
    guard snd_device_name_hint(-1, "pcm", &hints) == 0, let hints else { return [] }
    defer { snd_device_name_free_hint(hints) }
    var devices: [Device] = []
    var cursor = hints
    while let hint = cursor.pointee {
      defer { cursor += 1 }
      let name = takeString(snd_device_name_get_hint(hint, "NAME"))
      let description = takeString(snd_device_name_get_hint(hint, "DESC"))
      let direction = takeString(snd_device_name_get_hint(hint, "IOID"))
      // A missing IOID means the PCM does both directions.
      guard let name, direction == nil || direction == "Output" else { continue }
      devices.append(Device(name: name, description: (description ?? "").replacingNewlines()))
    }
    return devices
  }

  /// Which of `rates` the device accepts, or nil if it cannot be opened now.
  public static func supportedRates(of device: String, among rates: [Int]) -> [Int]? {
    withParameterSpace(of: device) { pcm, params in
      rates.filter { snd_pcm_hw_params_test_rate(pcm, params, UInt32($0), 0) == 0 }
    }
  }

  /// The highest rate the device accepts, or nil if it cannot be opened now.
  public static func maximumRate(of device: String) -> Int? {
    withParameterSpace(of: device) { _, params in
      var rate: UInt32 = 0
      var direction: Int32 = 0
      return snd_pcm_hw_params_get_rate_max(params, &rate, &direction) == 0 ? Int(rate) : nil
    }
  }

  /// The highest frame rate at which the device takes native DSD in `format`; nil when it takes
  /// no such format, or cannot be opened now.
  public static func maximumRate(of device: String, nativeDSD format: NativeDSDFormat) -> Int? {
    withParameterSpace(of: device) { pcm, params in
      guard snd_pcm_hw_params_set_format(pcm, params, format.alsa) == 0 else { return nil }
      var rate: UInt32 = 0
      var direction: Int32 = 0
      return snd_pcm_hw_params_get_rate_max(params, &rate, &direction) == 0 ? Int(rate) : nil
    }
  }

  /// Opens `device` briefly and hands `body` every configuration it allows.
  private static func withParameterSpace<Result>(
    of device: String, _ body: (OpaquePointer, OpaquePointer) -> Result?
  ) -> Result? {
    var pcm: OpaquePointer?
    guard snd_pcm_open(&pcm, device, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK) == 0, let pcm else {
      return nil
    }
    defer { snd_pcm_close(pcm) }
    var params: OpaquePointer?
    guard snd_pcm_hw_params_malloc(&params) == 0, let params else { return nil }
    defer { snd_pcm_hw_params_free(params) }
    guard snd_pcm_hw_params_any(pcm, params) >= 0 else { return nil }
    return body(pcm, params)
  }

  private static func takeString(_ pointer: UnsafeMutablePointer<CChar>?) -> String? {
    guard let pointer else { return nil }
    defer { free(pointer) }
    return String(cString: pointer)
  }
}

extension String {
  fileprivate func replacingNewlines() -> String {
    split(separator: "\n").joined(separator: " — ")
  }
}
