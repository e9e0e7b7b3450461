import AudioBuffers
import CALSA

#if canImport(Glibc)
  import Glibc
#endif

/// Plays through an ALSA PCM at the track's own rate. The device is opened by the output thread
/// and reopened when the rate or the mode (PCM, a native DSD format) changes; xruns are
/// recovered; a vanished device is reported so the output can retry it.
public final class ALSAOutput: OutputDevice {
  public struct Parameters: Sendable {
    /// Below 500: buffer time in ms; otherwise a size in frames. nil: 40 ms on a hardware device,
    /// 200 ms through a sound server's plugin, which underruns (and loses audio) on short buffers.
    public var buffer: Int?
    /// Below 50: number of periods; otherwise a period size in frames.
    public var period = 4
    /// nil = probe S32_LE → S24_LE → S24_3LE → S16_LE.
    public var format: SampleFormat?
    /// Write through ALSA's mmap interface when the device offers it (else read/write).
    public var mmap: Bool

    public init(buffer: Int? = nil, period: Int = 4, format: SampleFormat? = nil, mmap: Bool = true) {
      self.buffer = buffer
      self.period = period
      self.format = format
      self.mmap = mmap
    }
  }

  public let name: String
  private let parameters: Parameters
  private var pcm: OpaquePointer?
  public private(set) var sampleRate = 44100
  public private(set) var chunkFrames = 1024
  /// The device buffer in frames, as ALSA granted it.
  public private(set) var bufferSize = 0
  public var bufferFrames: Int { bufferSize }
  /// Whether the open device took mmap access.
  public private(set) var usesMmap = false
  private var packer = SamplePacker(format: .s16)
  private var scratch: UnsafeMutableRawBufferPointer

  public init(name: String, parameters: Parameters) {
    self.name = name
    self.parameters = parameters
    scratch = .allocate(byteCount: 16384 * 8, alignment: 16)
  }

  deinit {
    close()
    scratch.deallocate()
  }

  public var isOpen: Bool { pcm != nil }
  public var sampleFormat: SampleFormat { packer.format }
  public var nativeDSD: NativeDSDFormat? { packer.nativeDSD }

  public func open(sampleRate rate: Int) throws(OutputError) {
    try open(sampleRate: rate, nativeDSD: nil)
  }

  public func open(sampleRate rate: Int, nativeDSD: NativeDSDFormat?) throws(OutputError) {
    close()
    var handle: OpaquePointer?
    var result = snd_pcm_open(&handle, name, SND_PCM_STREAM_PLAYBACK, 0)
    guard result == 0, let handle else { throw .cannotOpen(device: name, reason: alsaError(result)) }
    var hw: OpaquePointer?
    snd_pcm_hw_params_malloc(&hw)
    defer { snd_pcm_hw_params_free(hw) }
    snd_pcm_hw_params_any(handle, hw)
    // A plugin PCM (PulseAudio, PipeWire, JACK) only emulates mmap with an extra copy, and at the
    // end of a stream it held back the last frames: mmap is for devices that really map memory.
    let isPluginPCM = snd_pcm_type(handle) == SND_PCM_TYPE_IOPLUG || snd_pcm_type(handle) == SND_PCM_TYPE_EXTPLUG
    usesMmap =
      parameters.mmap && !isPluginPCM
      && snd_pcm_hw_params_set_access(handle, hw, SND_PCM_ACCESS_MMAP_INTERLEAVED) == 0
    if !usesMmap { snd_pcm_hw_params_set_access(handle, hw, SND_PCM_ACCESS_RW_INTERLEAVED) }
    // A `hw:` device plays only what the hardware does; anything else may resample in ALSA.
    // DSD bits are never resampled.
    snd_pcm_hw_params_set_rate_resample(handle, hw, name.hasPrefix("hw:") || nativeDSD != nil ? 0 : 1)
    let candidates = parameters.format.map { [$0] } ?? [.s32, .s24, .s24_3, .s16]
    let format: SampleFormat
    if let nativeDSD {
      result = snd_pcm_hw_params_set_format(handle, hw, nativeDSD.alsa)
      guard result == 0 else {
        snd_pcm_close(handle)
        throw .cannotOpen(device: name, reason: "\(nativeDSD.alsaName) not supported: \(alsaError(result))")
      }
      format = packer.format
    } else if let found = candidates.first(where: { snd_pcm_hw_params_set_format(handle, hw, $0.alsa) == 0 }) {
      format = found
    } else {
      snd_pcm_close(handle)
      throw .cannotOpen(device: name, reason: "no supported sample format")
    }
    snd_pcm_hw_params_set_channels(handle, hw, 2)
    result = snd_pcm_hw_params_set_rate(handle, hw, UInt32(rate), 0)
    guard result == 0 else {
      snd_pcm_close(handle)
      throw .cannotOpen(device: name, reason: "rate \(rate) Hz not supported: \(alsaError(result))")
    }
    var direction: Int32 = 0
    let buffer = parameters.buffer ?? (isPluginPCM ? 200 : 40)
    if buffer < 500 {
      var microseconds = UInt32(buffer * 1000)
      snd_pcm_hw_params_set_buffer_time_near(handle, hw, &microseconds, &direction)
    } else {
      var frames = snd_pcm_uframes_t(buffer)
      snd_pcm_hw_params_set_buffer_size_near(handle, hw, &frames)
    }
    if parameters.period < 50 {
      var periods = UInt32(parameters.period)
      snd_pcm_hw_params_set_periods_near(handle, hw, &periods, &direction)
    } else {
      var frames = snd_pcm_uframes_t(parameters.period)
      snd_pcm_hw_params_set_period_size_near(handle, hw, &frames, &direction)
    }
    result = snd_pcm_hw_params(handle, hw)
    guard result == 0 else {
      snd_pcm_close(handle)
      throw .cannotOpen(device: name, reason: alsaError(result))
    }
    var periodFrames: snd_pcm_uframes_t = 0
    snd_pcm_hw_params_get_period_size(hw, &periodFrames, &direction)
    // Start as soon as one period is queued: the default (a full buffer) never starts a short
    // track on a device with a long buffer, such as PulseAudio's.
    var sw: OpaquePointer?
    snd_pcm_sw_params_malloc(&sw)
    defer { snd_pcm_sw_params_free(sw) }
    snd_pcm_sw_params_current(handle, sw)
    snd_pcm_sw_params_set_start_threshold(handle, sw, periodFrames)
    snd_pcm_sw_params_set_avail_min(handle, sw, periodFrames)
    result = snd_pcm_sw_params(handle, sw)
    guard result == 0 else {
      snd_pcm_close(handle)
      throw .cannotOpen(device: name, reason: "software parameters: \(alsaError(result))")
    }
    var bufferFrames: snd_pcm_uframes_t = 0
    snd_pcm_hw_params_get_buffer_size(hw, &bufferFrames)
    bufferSize = Int(bufferFrames)
    chunkFrames = max(64, min(Int(periodFrames), scratch.count / 8))
    pcm = handle
    sampleRate = rate
    packer = SamplePacker(format: format, nativeDSD: nativeDSD)
  }

  public func close() {
    guard let pcm else { return }
    snd_pcm_drain(pcm)
    snd_pcm_close(pcm)
    self.pcm = nil
  }

  public func write(_ samples: UnsafeBufferPointer<Int32>, dither: Bool) throws(OutputError) -> Int {
    guard let pcm else { throw .writeFailed("device not open") }
    let frames = min(samples.count / 2, chunkFrames)
    _ = packer.pack(UnsafeBufferPointer(rebasing: samples[0..<frames * 2]), into: scratch, dither: dither)
    var offset = 0
    while offset < frames {
      let pointer = scratch.baseAddress! + offset * packer.bytesPerFrame
      let count = snd_pcm_uframes_t(frames - offset)
      let written = usesMmap ? snd_pcm_mmap_writei(pcm, pointer, count) : snd_pcm_writei(pcm, pointer, count)
      if written >= 0 {
        offset += written
        continue
      }
      let code = Int32(written)
      if code == -ENODEV || code == -EBADFD {
        throw .disconnected(alsaError(code))
      }
      // Underrun (-EPIPE) or suspend (-ESTRPIPE): recover and go on.
      let recovered = snd_pcm_recover(pcm, code, 1)
      if recovered < 0 { throw .writeFailed(alsaError(recovered)) }
    }
    return frames
  }

  public func delayFrames() -> Int {
    guard let pcm else { return 0 }
    var delay: snd_pcm_sframes_t = 0
    return snd_pcm_delay(pcm, &delay) == 0 ? max(0, delay) : 0
  }

  /// Pushes the last frames through by writing one buffer of silence behind them, then waits for
  /// the buffer to empty. Without the padding a sound server such as PulseAudio keeps the tail of
  /// the last track in its own queue; `snd_pcm_drain` followed by `prepare` can drop it outright.
  /// (After DSD the output thread pushes DSD silence through itself.)
  public func playOutQueued() {
    guard let pcm else { return }
    memset(scratch.baseAddress!, 0, scratch.count)
    var remaining = bufferSize
    while remaining > 0 {
      let count = min(remaining, chunkFrames)
      let written =
        usesMmap
        ? snd_pcm_mmap_writei(pcm, scratch.baseAddress!, snd_pcm_uframes_t(count))
        : snd_pcm_writei(pcm, scratch.baseAddress!, snd_pcm_uframes_t(count))
      if written < 0 {
        guard snd_pcm_recover(pcm, Int32(written), 1) == 0 else { return }
        continue
      }
      remaining -= written
    }
  }

  public var isClocked: Bool { true }

  public func startQueued() {
    guard let pcm, snd_pcm_state(pcm) == SND_PCM_STATE_PREPARED else { return }
    snd_pcm_start(pcm)
  }

  public func discardQueued() {
    guard let pcm else { return }
    snd_pcm_drop(pcm)
    snd_pcm_prepare(pcm)
  }
}

extension SampleFormat {
  var alsa: snd_pcm_format_t {
    switch self {
    case .s32: SND_PCM_FORMAT_S32_LE
    case .s24: SND_PCM_FORMAT_S24_LE
    case .s24_3: SND_PCM_FORMAT_S24_3LE
    case .s16: SND_PCM_FORMAT_S16_LE
    }
  }
}

extension NativeDSDFormat {
  var alsa: snd_pcm_format_t {
    switch self {
    case .u8: SND_PCM_FORMAT_DSD_U8
    case .u16le: SND_PCM_FORMAT_DSD_U16_LE
    case .u16be: SND_PCM_FORMAT_DSD_U16_BE
    case .u32le: SND_PCM_FORMAT_DSD_U32_LE
    case .u32be: SND_PCM_FORMAT_DSD_U32_BE
    }
  }
}

func alsaError(_ code: Int32) -> String {
  String(cString: snd_strerror(code))
}
