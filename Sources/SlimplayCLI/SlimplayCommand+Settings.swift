import AudioOutput
import Logging
import Offline
import Playback
import Resampling
import SlimConnection
import SlimProto
import SlimplayPlayer
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// Flags to validated settings: every check the command line gets, with the message it gives.
extension SlimplayCommand {
  /// The validated settings the player runs with.
  public func settings() throws -> PlayerSettings {
    var settings = PlayerSettings()
    if let server {
      guard let address = ServerAddress(parsing: server) else {
        throw UsageError("invalid -s '\(server)': expected host[:port]")
      }
      settings.server = address
    }
    guard let discovery = ServerAddress(parsing: discoverTo) else {
      throw UsageError("invalid --discover-to '\(discoverTo)': expected host[:port]")
    }
    settings.discoveryTarget = discovery
    if let mac {
      guard let address = MACAddress(mac) else {
        throw UsageError("invalid -m '\(mac)': expected six hex bytes like 00:11:22:33:44:55")
      }
      settings.mac = address
    }
    settings.name = name
    settings.nameFile = nameFile
    settings.stateDirectory = stateDir
    guard !model.isEmpty, model.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
      throw UsageError("invalid --model '\(model)': letters, digits, - and _ only")
    }
    settings.model = model
    settings.modelName = modelName
    settings.output = OutputTarget(output)
    settings.listDevices = listDevices
    do {
      if let outputParameters {
        settings.outputParameters = try OutputParameters(
          parsing: outputParameters, forStandardOutput: settings.output == .standardOutput)
      }
      let defaultBuffers = noOffline ? BufferSizes() : BufferSizes.withCache()
      settings.buffers =
        try buffers.map { text throws(OptionError) in try BufferSizes(parsing: text, defaults: defaultBuffers) }
        ?? defaultBuffers
      let selection = try Codec.selection(include: codecs, exclude: excludedCodecs)
      settings.codecs = selection.codecs
      for name in selection.leftOut {
        settings.ignoredOptions.append("-c \(name): not decoded by this player yet; left out of the formats offered")
      }
      if let rates { settings.rates = try RateSpecification(parsing: rates) }
      for item in logLevels { try settings.logging.apply(item) }
    } catch {
      throw UsageError(error.description)
    }
    if volumeControl != nil && unmuteControl != nil {
      throw UsageError("-V and -U cannot be combined: one control does the volume, or none")
    }
    if let control = volumeControl ?? unmuteControl {
      guard case .alsa(let output) = settings.output else {
        throw UsageError("-V and -U need an ALSA output (-o)")
      }
      settings.mixer = MixerSettings(
        device: mixerDevice ?? ALSAMixer.device(forOutput: output), control: control,
        role: volumeControl != nil ? .volume : .fullScale, linear: linearMixer)
    }
    if listMixerControls {
      guard case .alsa(let output) = settings.output else { throw UsageError("-L needs an ALSA output (-o)") }
      settings.listMixerDevice = mixerDevice ?? ALSAMixer.device(forOutput: output)
    }
    guard (1...99).contains(priority) else { throw UsageError("invalid -p '\(priority)': must be 1-99") }
    settings.realtimePriority = priority
    if let idleClose {
      guard idleClose >= 0 else { throw UsageError("invalid -C '\(idleClose)': must be ≥ 0") }
      settings.idleCloseSeconds = idleClose
    }
    guard serverTimeout >= 1 else { throw UsageError("--server-timeout must be at least 1 s") }
    settings.serverTimeoutSeconds = serverTimeout
    guard serverSilence >= 1 else { throw UsageError("--server-silence must be at least 1 s") }
    guard streamStall >= 1 else { throw UsageError("--stream-stall must be at least 1 s") }
    // Silence past the timeout is moot: the timeout has already closed the connection.
    settings.liveness = ServerLiveness(
      silenceSeconds: Double(min(serverSilence, serverTimeout)), stallSeconds: Double(streamStall))
    settings.pidFile = pidFile
    try squeezeliteOptions(into: &settings)
    if let powerScript {
      guard access(powerScript, X_OK) == 0 else { throw UsageError("-S \(powerScript): not an executable file") }
      settings.powerScript = powerScript
    }
    guard (0...15).contains(prefetch) else { throw UsageError("--prefetch must be between 0 and 15") }
    guard cacheSize >= 1 else { throw UsageError("--cache-size must be at least 1 MB") }
    guard pinSize >= 0 else { throw UsageError("--pin-size must be 0 MB or more") }
    guard let returnChoice = ReturnToServer(rawValue: returnToServer) else {
      throw UsageError("--return-to-server must be auto or ask")
    }
    if let lmsPort, !(1...65535).contains(lmsPort) { throw UsageError("invalid --lms-port \(lmsPort)") }
    guard (0...65535).contains(syncPort) else { throw UsageError("invalid --sync-port \(syncPort)") }
    if let syncKey, syncKey.isEmpty { throw UsageError("--sync-key must not be empty") }
    if lmsPasswordFile != nil && lmsUser == nil {
      throw UsageError("--lms-password-file needs --lms-user")
    }
    if control != "off" {
      guard let address = ServerAddress(parsing: control), address.port > 0 else {
        throw UsageError("invalid --control '\(control)': expected addr:port or off")
      }
      let loopback = address.host == "127.0.0.1" || address.host == "localhost" || address.host == "::1"
      if !loopback && controlToken == nil {
        throw UsageError("--control beyond loopback needs --control-token")
      }
      settings.control = ControlSettings(
        host: address.host, port: address.port, token: controlToken,
        furtherPorts: control == Self.defaultControl ? ControlSettings.defaultFurtherPorts : 0)
    } else {
      settings.control = nil
    }
    settings.offline = OfflineSettings(
      enabled: !noOffline, cacheDirectory: cacheDir, cacheMegabytes: cacheSize, pinMegabytes: pinSize,
      prefetch: prefetch,
      lmsPort: lmsPort, lmsUser: lmsUser, lmsPasswordFile: lmsPasswordFile, syncPort: syncPort, syncKey: syncKey)
    settings.offline.returnToServer = returnChoice
    return settings
  }

  /// squeezelite's options with no counterpart here yet: taken, so a squeezelite set-up starts,
  /// and named in the log.
  private func squeezeliteOptions(into settings: inout PlayerSettings) throws {
    if let maximumRate {
      guard (8000...1_536_000).contains(maximumRate) else {
        throw UsageError("invalid -Z '\(maximumRate)': expected a sample rate such as 96000")
      }
      settings.maximumRateLimit = maximumRate
    }
    if linearMixer && volumeControl == nil {
      settings.ignoredOptions.append("-X applies to the -V control; without -V it changes nothing")
    }
    settings.waveFiles = readWaveHeaders
    settings.logFile = logFile
    settings.daemonize = daemonize
    if let dsdOutput {
      do {
        let option = try DSDOutputOption(parsing: dsdOutput)
        settings.dsdOutput = option
      } catch {
        throw UsageError(error.description)
      }
    }
    if let resampling {
      do {
        settings.resampling = try ResampleRecipe(parsing: resampling)
      } catch {
        throw UsageError(error.description)
      }
    }
    if let gpioRelay {
      guard powerScript == nil else { throw UsageError("-G and -S cannot be combined (as in squeezelite)") }
      do {
        settings.gpioRelay = try GPIORelaySpecification(parsing: gpioRelay)
      } catch {
        throw UsageError(error.description)
      }
    }
    settings.infrared = infrared
    settings.visualiser = visualiser
  }
}
