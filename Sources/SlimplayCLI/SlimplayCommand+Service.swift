import AudioOutput
import Logging
import Playback
import SlimConnection
import SlimProto
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// `--create-service` and `--print-service` (with `--template`, the unit of several players).
extension SlimplayCommand {
  func service() throws {
    let scope: ServiceUnit.Scope = user ? .user : .system
    let executable = serviceExecutable ?? ServiceUnit.currentExecutable()
    if printService {
      let text = ServiceUnit.text(scope: scope, executable: executable, template: template)
      Self.printOutput(text)
      return
    }
    let written: ServiceUnit.Written
    do {
      written = try ServiceUnit.install(
        scope: scope, executable: executable, environment: Environment.current(["HOME", "XDG_CONFIG_HOME"]),
        template: template)
    } catch {
      Self.printError("slimplay: \(error)")
      throw ExitStatus.failure
    }
    let systemctl = user ? "systemctl --user" : "systemctl"
    var text = "wrote \(written.unitPath)\n"
    if let config = written.configPath { text += "wrote \(config)\n" }
    if template {
      let config = user ? "~/.config/slimplay/NAME.conf" : "/etc/default/slimplay-NAME"
      text += "for each player, write \(config) (its own -n, -m and output), then: "
      text += "\(systemctl) daemon-reload && \(systemctl) enable --now slimplay@NAME\n"
    } else {
      text += "start it now and at every boot with: \(systemctl) daemon-reload && \(systemctl) enable --now slimplay\n"
    }
    Self.printOutput(text)
  }
}
