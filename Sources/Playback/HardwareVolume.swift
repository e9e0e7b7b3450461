import AudioOutput
import Dispatch
import Logging

/// The mixer side of `-V` and `-U`, on a queue of its own: a mixer call may be a round trip to a
/// sound server, which neither the control loop nor the output thread should wait for. The mixer
/// is opened lazily and again after a failure, so a DAC that appears after start is picked up.
public final class HardwareVolume: @unchecked Sendable {
  public enum Role: Equatable, Sendable {
    /// `-V`: the server's volume goes to this control.
    case volume
    /// `-U`: unmuted and set to full at each open of the output; the player's own gain does the volume.
    case fullScale
  }

  public let device: String
  public let control: String
  public let role: Role
  /// `-X`: the control's raw steps spread evenly over −72…0 dB, whatever its dB scale says.
  public let linear: Bool
  private let queue = DispatchQueue(label: "slimplay.mixer")
  private let logger: Logger
  // On `queue` only.
  private var mixer: ALSAMixer?
  private var gain: (left: UInt32, right: UInt32)?
  private var lastFailure: String?

  public init(device: String, control: String, role: Role, linear: Bool = false, logger: Logger) {
    self.device = device
    self.control = control
    self.role = role
    self.linear = linear
    self.logger = logger
  }

  /// The server's 16.16 gains (`audg`), for the `-V` control.
  public func setGain(left: UInt32, right: UInt32) {
    queue.async { [self] in
      gain = (left, right)
      apply()
    }
  }

  /// The output opened the device: the mixer may be new (a DAC plugged in again, a sound server
  /// restarted), so the setting is applied again; `-U` sets its control to full again too.
  public func deviceOpened() {
    queue.async { [self] in apply() }
  }

  /// Waits for the settings queued so far (tests, shutdown).
  public func settle() { queue.sync {} }

  private func apply() {
    // A mixer handle outlives its device: when setting fails, open it again and retry once.
    for attempt in 0..<2 {
      guard let mixer = openMixer() else { return }
      if set(mixer) { return }
      self.mixer = nil
      if attempt == 0 { logger.notice("mixer \(device) \(control): gone; opening it again") }
    }
  }

  private func set(_ mixer: ALSAMixer) -> Bool {
    switch role {
    case .volume:
      guard let gain else { return true }
      guard mixer.setGain(left: gain.left, right: gain.right) else { return false }
      logger.debug("mixer \(device) \(control): gain \(gain.left)/\(gain.right) → raw \(mixer.rawValue())")
    case .fullScale:
      guard mixer.setToMaximum() else { return false }
      logger.debug("mixer \(device) \(control): unmuted at full scale")
    }
    return true
  }

  private func openMixer() -> ALSAMixer? {
    if let mixer { return mixer }
    do {
      let opened = try ALSAMixer(device: device, control: control, linear: linear)
      mixer = opened
      lastFailure = nil
      logger.info("mixer \(device) \(control): \(opened.scale)")
      return opened
    } catch {
      // Logged once per distinct failure: a missing DAC at boot would otherwise fill the log.
      if lastFailure != error.description {
        logger.error("\(error.description); trying again when the output opens")
        lastFailure = error.description
      }
      return nil
    }
  }
}
