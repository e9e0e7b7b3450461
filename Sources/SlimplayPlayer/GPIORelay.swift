import CSupport
import Logging
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// `-G chip:line:H|L`, as squeezelite writes it: the chip by number (`0`, or `gpiochip0`) or path,
/// the line's offset on it, and whether the relay is switched on by the high or the low level.
public struct GPIORelaySpecification: Equatable, Sendable {
  public var chipPath: String
  public var line: UInt32
  public var activeLow: Bool

  public init(parsing text: String) throws(OptionError) {
    let fields = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
    guard fields.count == 3 else { throw .invalid("-G", text, "expected chip:line:H|L, e.g. 0:18:H") }
    let chip = fields[0]
    if let number = UInt32(chip) {
      chipPath = "/dev/gpiochip\(number)"
    } else if chip.hasPrefix("gpiochip"), UInt32(chip.dropFirst("gpiochip".count)) != nil {
      chipPath = "/dev/" + chip
    } else if chip.hasPrefix("/") {
      chipPath = chip
    } else {
      throw .invalid("-G", text, "chip '\(chip)' is not a number, gpiochipN or a path")
    }
    guard let line = UInt32(fields[1]) else { throw .invalid("-G", text, "line '\(fields[1])' is not a number") }
    self.line = line
    switch fields[2] {
    case "H", "h": activeLow = false
    case "L", "l": activeLow = true
    default: throw .invalid("-G", text, "the relay is active High or Low: H or L")
    }
  }
}

/// The amplifier relay on a GPIO line, with `-S`'s rules: off at start, then on / off whenever the
/// server powers the player on / off. A line that cannot be had is logged and playback goes on.
final class GPIORelay {
  private let specification: GPIORelaySpecification
  private let logger: Logger
  private var descriptor: Int32 = -1
  private var lastState: Bool?

  init(_ specification: GPIORelaySpecification, logger: Logger) {
    self.specification = specification
    self.logger = logger
    let result = slimplay_gpio_request_output(
      specification.chipPath, specification.line, specification.activeLow ? 1 : 0, "slimplay")
    let location = "\(specification.chipPath) line \(specification.line)"
    if result < 0 {
      logger.error("GPIO relay: cannot drive \(location): \(errorText(-result)); playing without it")
    } else {
      descriptor = result
      logger.info("GPIO relay on \(location), active \(specification.activeLow ? "low" : "high"): off")
    }
  }

  deinit {
    if descriptor >= 0 { close(descriptor) }
  }

  /// Control loop: the server's `aude`; only a change switches the line.
  func powerChanged(isOn: Bool) {
    guard lastState != isOn, descriptor >= 0 else { return }
    lastState = isOn
    let result = slimplay_gpio_set(descriptor, isOn ? 1 : 0)
    if result < 0 {
      logger.error("GPIO relay: cannot switch \(isOn ? "on" : "off"): \(errorText(-result))")
    } else {
      logger.info("GPIO relay \(isOn ? "on" : "off")")
    }
  }
}
