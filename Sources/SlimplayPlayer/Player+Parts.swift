import AudioOutput
import CSupport
import Decoders
import GroupSync
import LMSControl
import LocalControl
import Logging
import NIOCore
import NIOPosix
import Offline
import Playback
import Resampling
import SlimConnection
import SlimProto
import StreamFetch
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// The parts a player is built from: its JSON-RPC client, its offline side, its audio pipeline.
extension Player {
  /// The JSON-RPC client of the server the session is connected to.
  func makeLMSClient(loop: any EventLoop, location: ServerLocation) throws(PlayerError) -> LMSClient {
    let offline = settings.offline
    var credentials: LMSEndpoint.Credentials?
    if let user = offline.lmsUser {
      var password = ""
      if let file = offline.lmsPasswordFile {
        guard let text = FileIO.readText(file) else { throw PlayerError.unreadablePasswordFile(file) }
        password = String(text.split(separator: "\n", omittingEmptySubsequences: false).first ?? "")
      }
      credentials = .init(user: user, password: password)
    }
    let explicitPort = offline.lmsPort
    let login = credentials
    // Before the first connection (a player started with its server away), the server `-s` names:
    // its web side can be watched for its return, and its cache keys are known.
    let configured = settings.server
    return LMSClient(eventLoop: loop, playerID: mac.description) {
      (location.server ?? configured).map {
        LMSEndpoint(
          host: $0.host, port: explicitPort ?? location.discoveredHTTPPort ?? 9000, credentials: login)
      }
    }
  }

  /// The status poller, cache, downloads and the offline coordinator between them; nil when
  /// there is no folder for the cache.
  func makeOfflineCoordinator(
    engine: StreamingEngine, client: LMSClient, downloadLoop: any EventLoop, stateFolder: String?
  ) -> OfflineCoordinator? {
    let offline = settings.offline
    let logger = Logger(label: LogConfiguration.Category.cache.rawValue)
    let poller = StatusPoller(
      client: client, configuration: .init(entries: offline.prefetch + 1),
      logger: Logger(label: LogConfiguration.Category.lms.rawValue))
    guard let folder = offline.cacheDirectory ?? stateFolder.map({ $0 + "/cache" }) else {
      logger.warning("offline cache off: no folder for it (give --cache-dir or --state-dir)")
      return nil
    }
    // One player to a cache: its index is rewritten whole by the player that owns it. (A folder
    // that cannot be used at all is the store's to report.)
    var owner: FolderLock?
    switch FolderLock.acquire(folder) {
    case .success(let lock): owner = lock
    case .failure(.held(let folder, let pid)):
      logger.error(
        "offline cache off: \(FolderLock.Failure.held(folder: folder, pid: pid)): give each player its own --cache-dir")
      return nil
    case .failure: owner = nil
    }
    let store = CacheStore(
      directory: folder, capacityBytes: offline.cacheMegabytes << 20, pinCapacityBytes: offline.pinMegabytes << 20,
      logger: logger, owner: owner)
    // The pins first: their files are spared by the eviction that checks the cap at load.
    store.load(pinned: PinList.load(from: PinList.path(in: folder))?.keys ?? [])
    let downloads = DownloadManager(
      eventLoop: downloadLoop, store: store, logger: logger, endpoint: { client.endpoint },
      playbackIsFilling: { engine.playbackIsFilling })
    return OfflineCoordinator(
      engine: engine, poller: poller, client: client, store: store, downloads: downloads,
      configuration: .init(
        prefetch: offline.prefetch,
        savedPlaybackPath: stateFolder.map { $0 + "/playback.json" },
        returnToServer: offline.returnToServer,
        streamStallSeconds: settings.liveness.stallSeconds,
        groupLink: offline.syncPort == 0
          ? nil
          : GroupLink.Configuration(
            port: offline.syncPort, interfaceAddress: nil, key: offline.syncKey.map { GroupKey($0) })),
      eventLoop: client.eventLoop, logger: logger, groupLogger: Logger(label: LogConfiguration.Category.group.rawValue))
  }

  /// The audio pipeline with the output `-o` names.
  func makeEngine(eventLoop: any EventLoop) -> StreamingEngine {
    var visualiser: VisualiserExport?
    if settings.visualiser {
      switch VisualiserExport.open(mac: mac.description) {
      case .success(let export):
        visualiser = export
        logger.notice("visualiser: the output's samples in \(export.segmentName)")
      case .failure(let error):
        logger.error("visualiser off: \(error)")
      }
    }
    let device: any OutputDevice
    let format = settings.outputParameters.format?.deviceFormat
    switch settings.output {
    case .standardOutput:
      device = StandardOutput(format: format ?? .s32)
    case .null:
      device = NullOutput()
    case .alsa(let name):
      device = ALSAOutput(
        name: name,
        parameters: .init(
          buffer: settings.outputParameters.buffer, period: settings.outputParameters.period, format: format,
          mmap: settings.outputParameters.mmap))
    }
    let hardwareVolume = settings.mixer.map {
      HardwareVolume(
        device: $0.device, control: $0.control, role: $0.role, linear: $0.linear,
        logger: Logger(label: LogConfiguration.Category.output.rawValue))
    }
    if let hardwareVolume, hardwareVolume.role == .fullScale { hardwareVolume.deviceOpened() }
    let resampling = resamplingSettings()
    let outputBytes =
      resampling.map { settings.buffers.outputBytes(resamplingTo: $0.supportedRates.max() ?? 44100) }
      ?? settings.buffers.outputBytes
    return StreamingEngine(
      configuration: .init(
        pipeline: .init(
          streamBufferBytes: settings.buffers.streamBytes, outputBufferBytes: outputBytes,
          output: .init(
            realtimePriority: settings.realtimePriority, idleCloseSeconds: settings.idleCloseSeconds,
            dopSwitchMilliseconds: settings.dsdOutput?.switchDelayMilliseconds ?? 0,
            visualiser: visualiser),
          resampling: resampling, dsd: dsdOutput()),
        maximumSampleRate: maximumSampleRate()),
      device: device, eventLoop: eventLoop, hardwareVolume: hardwareVolume,
      logger: Logger(label: LogConfiguration.Category.stream.rawValue))
  }
}

extension OutputParameters.SampleFormat {
  var deviceFormat: SampleFormat {
    switch self {
    case .s16: .s16
    case .s24: .s24
    case .s24_3: .s24_3
    case .s32: .s32
    }
  }
}
