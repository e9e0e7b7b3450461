import AudioBuffers
import CSupport
import Logging
import NIOCore
import SlimConnection
import SlimProto
import Support

/// What a LIRC event sends the server with `-i`, as squeezelite's: Slim remote codes (LMS's
/// IR/Slim_Devices_Remote.ir), which LMS's default button map turns into commands (`pause`
/// toggles, `fwd` goes to the next track, `volup` raises the volume on every repeat).
public enum InfraredCodes {
  /// The `config =` strings of a lircrc entry with `prog = squeezelite`.
  static let commands: [String: UInt32] = [
    "voldown": 0x7689_00ff, "volup": 0x7689_807f, "rew": 0x7689_c03f, "fwd": 0x7689_a05f, "pause": 0x7689_20df,
    "play": 0x7689_10ef, "power": 0x7689_40bf, "muting": 0x7689_c43b, "power_on": 0x7689_8f70,
    "power_off": 0x7689_8778, "preset_1": 0x7689_8a75, "preset_2": 0x7689_4ab5, "preset_3": 0x7689_ca35,
    "preset_4": 0x7689_2ad5, "preset_5": 0x7689_aa55, "preset_6": 0x7689_6a95,
  ]

  /// Button names of LIRC's namespace, used when no lircrc entry names a command: the code, and
  /// whether holding the button repeats it.
  static let buttons: [String: (code: UInt32, repeats: Bool)] = [
    "KEY_VOLUMEDOWN": (0x7689_00ff, true), "KEY_VOLUMEUP": (0x7689_807f, true),
    "KEY_PREVIOUS": (0x7689_c03f, true), "KEY_REWIND": (0x7689_c03f, true), "KEY_NEXT": (0x7689_a05f, true),
    "KEY_FORWARD": (0x7689_a05f, true), "KEY_PAUSE": (0x7689_20df, true), "KEY_PLAY": (0x7689_10ef, false),
    "KEY_POWER": (0x7689_40bf, false), "KEY_MUTE": (0x7689_c43b, false), "KEY_0": (0x7689_9867, true),
    "KEY_1": (0x7689_f00f, true), "KEY_2": (0x7689_08f7, true), "KEY_3": (0x7689_8877, true),
    "KEY_4": (0x7689_48b7, true), "KEY_5": (0x7689_c837, true), "KEY_6": (0x7689_28d7, true),
    "KEY_7": (0x7689_a857, true), "KEY_8": (0x7689_6897, true), "KEY_9": (0x7689_e817, true),
    "KEY_FAVORITES": (0x7689_18e7, false), "KEY_SEARCH": (0x7689_58a7, false), "KEY_SHUFFLE": (0x7689_d827, false),
    "KEY_SLEEP": (0x7689_b847, false), "KEY_INSERT": (0x7689_609f, false), "KEY_UP": (0x7689_e01f, true),
    "KEY_LEFT": (0x7689_906f, true), "KEY_RIGHT": (0x7689_d02f, true), "KEY_DOWN": (0x7689_b04f, true),
    "KEY_HOME": (0x7689_22dd, false), "KEY_MEDIA_REPEAT": (0x7689_38c7, false), "KEY_AGAIN": (0x7689_38c7, false),
  ]

  /// The code for one event: lircd's line ("<code> <repeat> <button> <remote>") and the command
  /// its lircrc entry gave (empty: none). The command first; else the button's name, a repeat
  /// only for a button that repeats (lircd counts "00", inputlirc "0"); nil: nothing to send.
  public static func code(line: String, command: String) -> UInt32? {
    if let code = commands[command] { return code }
    let fields = line.split(whereSeparator: { $0 == " " || $0 == "\n" })
    guard fields.count >= 3, let button = buttons[String(fields[2])] else { return nil }
    let first = fields[1].allSatisfy { $0 == "0" }
    return button.repeats || first ? button.code : nil
  }
}

/// `-i [lircrc]`: a thread waits for lircd's events and the player sends each as an `IR  ` message,
/// which LMS handles as a press of the Squeezebox remote.
final class InfraredRemote: Sendable {
  private let logger: Logger

  init(logger: Logger) { self.logger = logger }

  /// Connects to lircd and starts the thread; false (logged) without the library or lircd.
  func start(lircrc: String, send: @escaping @Sendable (UInt32) -> Void) -> Bool {
    let file = lircrc.isEmpty ? "~/.lircrc" : lircrc
    switch slimplay_lirc_open("squeezelite", file) {
    case -1:
      logger.error("ir: liblirc_client.so.0 not found (install liblirc-client0): no remote")
      return false
    case -2:
      logger.error("ir: cannot connect to lircd: no remote")
      return false
    case 1:
      logger.warning("ir: cannot read \(file): the buttons' own names are used")
    default:
      logger.info("ir: lircd connected, commands from \(file)")
    }
    let logger = self.logger
    _ = RealtimeThread(name: "slimplay-ir") {
      var line = [CChar](repeating: 0, count: 256)
      var command = [CChar](repeating: 0, count: 64)
      while slimplay_lirc_next(&line, line.count, &command, command.count) == 0 {
        let lineText = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let commandText = String(decoding: command.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let code = InfraredCodes.code(line: lineText, command: commandText) else {
          logger.debug("ir: '\(lineText)' sends nothing")
          continue
        }
        logger.debug("ir: '\(lineText)' -> \(Hex.string(code, width: 8))")
        send(code)
      }
      logger.warning("ir: lircd closed the connection: no remote until the player restarts")
    }
    return true
  }
}
