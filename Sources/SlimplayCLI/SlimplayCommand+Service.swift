import AudioOutput
import Logging
import Playback
import SlimConnection
import SlimProto

#if canImport(Glibc)
  import Glibc
#endif

/// `--create-service` and `--print-service`.
extension SlimplayCommand {
  func service() throws {
    let scope: ServiceUnit.Scope = user ? .user : .system
    let executable = serviceExecutable ?? ServiceUnit.currentExecutable()
    if printService {
      let text = ServiceUnit.text(scope: scope, executable: executable)
      Self.printOutput(text)
      return
    }
    let written: ServiceUnit.Written
    do {
      written = try ServiceUnit.install(
        scope: scope, executable: executable, environment: Environment.current(["HOME", "XDG_CONFIG_HOME"]))
    } catch {
      Self.printError("slimplay: \(error)")
      throw ExitStatus.failure
    }
    let systemctl = user ? "systemctl --user" : "systemctl"
    var text = "wrote \(written.unitPath)\n"
    if let config = written.configPath { text += "wrote \(config)\n" }
    text += "start it now and at every boot with: \(systemctl) daemon-reload && \(systemctl) enable --now slimplay\n"
    Self.printOutput(text)
  }
}
