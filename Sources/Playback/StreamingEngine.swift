import AudioBuffers
import AudioOutput
import Decoders
import Logging
import NIOCore
import SlimConnection
import SlimProto
import StreamFetch
import Support

/// The audio pipeline behind the protocol session: `strm s` opens a stream into the stream ring,
/// the decoder thread fills the output ring, the output thread plays it. This class lives on the
/// control event loop and turns what the three report into STAT events.
public final class StreamingEngine: PlaybackEngine, StreamFetcherDelegate, @unchecked Sendable {
  public struct Configuration: Sendable {
    /// Buffers, output thread and resampling.
    public var pipeline: AudioPipeline.Configuration
    /// What HELO reports as `MaxSampleRate`.
    public var maximumSampleRate: Int

    public init(pipeline: AudioPipeline.Configuration, maximumSampleRate: Int) {
      self.pipeline = pipeline
      self.maximumSampleRate = maximumSampleRate
    }
  }

  /// Everything the engine says (`EngineEvent`), on the control loop.
  public var onEvent: ((EngineEvent) -> Void)?
  public let maximumSampleRate: Int
  let eventLoop: any EventLoop
  let logger: Logger
  /// Rings, threads and sources; this class keeps the tracks and the protocol's view of them.
  private(set) var pipeline: AudioPipeline!
  var input: StreamInput { pipeline.input }
  var output: FrameOutput { pipeline.output }
  var fetcher: StreamFetcher { pipeline.fetcher }
  var worker: DecoderWorker { pipeline.worker }
  var player: OutputPlayer { pipeline.player }
  let deviceName: String
  /// `-V` / `-U`: the DAC's mixer.
  let hardwareVolume: HardwareVolume?
  /// The last device failure logged, so a device that stays absent is not logged every second.
  var deviceFailure: (message: String, count: Int)?

  var tracks: [PlaybackTrack] = []
  var nextTrackID = 1
  private var nextDecodeJob = 1
  /// Format `?` streams wait for `codc` before their decoder can be chosen.
  var pendingCodec: (trackID: Int, codec: Codec?, pcm: PCMParameters?)?
  private var heartbeat: AlignedTick?
  var outputRunning = false
  /// Where the server's latest stream comes from: a LocalPlayer file reports its end and byte
  /// count like a network stream (StreamingEngine+ServersFile); the cache's files report neither.
  enum StreamOrigin { case network, serversFile }
  var streamOrigin = StreamOrigin.network

  public init(
    configuration: Configuration, device: any OutputDevice, eventLoop: any EventLoop,
    hardwareVolume: HardwareVolume? = nil, logger: Logger
  ) {
    self.hardwareVolume = hardwareVolume
    self.maximumSampleRate = configuration.maximumSampleRate
    self.eventLoop = eventLoop
    self.logger = logger
    deviceName = device.name
    let loop = eventLoop
    pipeline = AudioPipeline(
      configuration: configuration.pipeline, device: device, eventLoop: eventLoop, logger: logger,
      // The threads end with the pipeline; an event on its way keeps the engine until it is handled.
      decoderEvent: { [weak self] event in
        guard let self else { return }
        loop.execute { self.handle(event) }
      },
      outputEvent: { [weak self] event in
        guard let self else { return }
        loop.execute { self.handle(event) }
      })
    pipeline.fetcher.delegate = self
    reportServersFileEnds()
    pipeline.start()
  }

  // MARK: PlaybackEngine

  public func handle(_ message: ServerMessage) {
    switch message {
    case .stream(let command):
      handle(command)
    case .audioGain(let gain):
      let (left, right) = gain.effectiveGains
      if let hardwareVolume, hardwareVolume.role == .volume {
        // The DAC does the volume; the samples go out untouched.
        hardwareVolume.setGain(left: left, right: right)
      } else {
        player.setGain(left: left, right: right)
      }
    case .audioEnable(let enable):
      logger.info("output \(enable.isPoweredOn ? "on" : "off")")
      player.setPowered(enable.isPoweredOn)
      onEvent?(.powerChanged(on: enable.isPoweredOn))
    case .continueStream(let request):
      if let pending = pendingCodec, let codec = pending.codec {
        decode(pending.trackID, codec: codec, pcm: pending.pcm)
        pendingCodec = nil
      }
      fetcher.releaseBody(metaInterval: Int(request.metaInterval))
    case .codec(let change):
      guard pendingCodec != nil else { return }
      pendingCodec?.codec = change.format.codec
      pendingCodec?.pcm = change.pcm.decoderParameters
    case .bodyRequest:
      logger.info("ignoring body request: playlist bodies are not forwarded")
    default:
      break
    }
  }

  public func snapshot(at instant: UInt64) -> PlaybackSnapshot {
    var snapshot = PlaybackSnapshot()
    snapshot.streamBufferSize = UInt32(clamping: input.ring.capacity)
    snapshot.streamBufferFullness = UInt32(clamping: input.ring.fill)
    snapshot.bytesReceived = streamBytesReceived
    snapshot.outputBufferSize = UInt32(clamping: output.ring.capacity)
    snapshot.outputBufferFullness = UInt32(clamping: output.ring.fill)
    let position = player.currentPosition()
    if position.trackID >= 0 {
      snapshot.elapsedMilliseconds = UInt32(clamping: position.elapsedMilliseconds(at: instant))
    }
    return snapshot
  }

  // MARK: strm

  private func handle(_ command: StreamCommand) {
    switch command.command {
    case .start: start(command)
    case .stop: stop()
    case .flush: flushPrefetched()
    case .pause:
      if command.value == 0 {
        player.pause()
        outputRunning = false
        onEvent?(.status(.paused))
      } else {
        adjustForSync(command)
      }
    case .unpause:
      if command.value == 0 {
        // The start of a track the server held until it loaded waits, as an automatic start
        // does, for the device's start threshold; a resume plays at once.
        let starting = tracks.first.map { !$0.started } ?? false
        player.start(starting ? .buffered(tenths: 0) : .now)
      } else {
        player.start(.at(nanoseconds: Self.monotonicTime(ofJiffies: command.value)))
      }
      outputRunning = true
      onEvent?(.status(.resumed))
    case .skipAhead:
      adjustForSync(command)
    case .status:
      break
    }
  }

  private func start(_ command: StreamCommand) {
    onEvent?(.streamRequested)
    onEvent?(.status(.flushed))
    if pipeline.sourceIsOpen || input.ring.fill > 0 {
      // A new stream replaces one that is still arriving: its bytes are of no use now.
      pipeline.reset(output: .keep)
      tracks.removeAll { $0.phase == .streaming }
    }
    input.reopen()
    // Behind a track that plays or is paused, the new one starts when the output reaches it.
    let queuedBehind = outputRunning || isPaused
    let id = nextTrackID
    nextTrackID += 1
    tracks.append(PlaybackTrack(id: id, command: command))
    applyTreatment(of: command, toTrack: id)
    onEvent?(.trackCreated(id: id))

    if command.format == .unknown {
      pendingCodec = (id, nil, nil)
    } else if let codec = command.format.codec {
      decode(id, codec: codec, pcm: command.pcm.decoderParameters)
    } else {
      logger.error("stream format \(command.format) is not supported")
      onEvent?(.status(.notSupported))
      return
    }
    streamOrigin = command.localFilePath == nil ? .network : .serversFile
    if let path = command.localFilePath {
      openServersFile(path)
    } else {
      // The session resolved server IP 0 (the SlimProto server itself) to its address.
      let server = ServerAddress(ipv4: command.serverIP, port: Int(command.serverPort))
      pipeline.openStream(
        host: server.host, port: server.port, request: command.request, holdBody: command.autostart.isDirect,
        tls: command.usesTLS, oggMetadata: command.carriesOgg)
    }
    // A start posted for a queued track could undo a pause (a paused player, or a pause that
    // lands in the same batch of output requests).
    if command.autostart.startsAutomatically, !queuedBehind {
      player.start(.buffered(tenths: Int(command.outputThreshold)))
      outputRunning = true
    }
    heartbeatIfNeeded()
  }

  func stop() {
    streamOrigin = .network
    pipeline.reset(output: .everything)
    tracks.removeAll()
    pendingCodec = nil
    outputRunning = false
    onEvent?(.status(.flushed))
  }

  /// `strm f`: keep the track that plays, drop what was fetched after it.
  private func flushPrefetched() {
    guard let index = tracks.firstIndex(where: { !$0.started }) else {
      pipeline.closeSource()
      return
    }
    // Frames after the last started track's end are the prefetched ones.
    pipeline.reset(output: .tracks(after: index > 0 ? tracks[index - 1].id : 0))
    tracks.removeSubrange(index...)
    onEvent?(.status(.flushed))
  }

  // MARK: Events

  /// Hands track `id` to the decoder; its events count only while this job is the track's.
  func decode(_ id: Int, codec: Codec, pcm: PCMParameters? = nil, start: DecodeJob.Start = .beginning) {
    let number = nextDecodeJob
    nextDecodeJob += 1
    update(id) {
      $0.decodeJob = number
      $0.codec = codec
    }
    worker.enqueue(DecodeJob(number: number, trackID: id, codec: codec, pcm: pcm, start: start))
  }

  func handle(_ event: DecoderEvent) {
    let job: Int
    switch event {
    case .formatKnown(let number, _, _), .finished(let number, _, _), .failed(let number, _, _): job = number
    }
    // A reset cancels the decoder's job, but what it reported just before may still be on its
    // way: acting on it (closing the source, above all) would hit the job that replaced it.
    guard let id = tracks.first(where: { $0.decodeJob == job })?.id else {
      logger.debug("decoder: event of cancelled job \(job) dropped")
      return
    }
    switch event {
    case .formatKnown(_, let format, let content):
      let codec = tracks.first { $0.id == id }?.codec?.rawValue ?? "?"
      logger.info("track \(id): \(codec)\(content.map { " (\($0))" } ?? "") \(format)")
      update(id) { $0.format = format }
      announceLoadedIfReady()
    case .finished(_, let frames, let damage):
      if damage.stretches > 0 {
        logger.warning("track \(id): damaged stretches skipped: \(damage.stretches) (the last: \(damage.last))")
      }
      update(id) {
        $0.phase = .decoded
        $0.decodedFrames = frames
      }
      onEvent?(.trackDecoded(id: id, frames: frames, sampleRate: tracks.first { $0.id == id }?.format?.sampleRate))
      reportDecoded(id)
    case .failed(_, let frames, let message):
      logger.error("track \(id): cannot decode: \(message)")
      let beganAsAudio = tracks.first(where: { $0.id == id })?.format != nil
      update(id) {
        $0.phase = .failed
        $0.decodedFrames = frames
      }
      pipeline.closeSource()
      onEvent?(.trackFailed(id: id))
      guard beganAsAudio else {
        onEvent?(.status(.notSupported))
        return
      }
      // Audio that broke off is over where its audio ends, as squeezelite reports it (STMd: its
      // decoders end a damaged stream rather than fail it), so the server goes on to the next
      // track. LMS 7.9.1 answers an STMn that comes while the previous track plays by streaming
      // the failed track again, five times, then stopping the queue.
      reportDecoded(id)
    }
  }

  /// STMd for track `id`, whose last frame is in the output ring, and what follows from it.
  private func reportDecoded(_ id: Int) {
    onEvent?(.status(.decoderReady))
    announceLoadedIfReady()
    reportEndOfPlaybackIfDrained()
    // A track shorter than the output's start threshold starts now (a timed start keeps its time).
    if tracks.first?.id == id, tracks.first?.started == false, outputRunning {
      player.allBuffered()
    }
  }

  private func handle(_ event: OutputEvent) {
    switch event {
    case .trackStarted(let id):
      // Tracks before this one are over.
      tracks.removeAll { $0.id < id }
      update(id) { $0.started = true }
      onEvent?(.status(.trackStarted))
      onEvent?(.trackStarted(id: id))
    case .ranDry:
      guard outputRunning else { return }
      let streaming = tracks.contains { $0.phase == .streaming }
      if streaming {
        if let index = tracks.firstIndex(where: { $0.phase == .streaming }) {
          // Once per dry spell: the output reports the next only after frames came again.
          logger.notice("output: underrun: the buffer ran dry while track \(tracks[index].id) was streaming")
          if !tracks[index].reportedUnderrun {
            tracks[index].reportedUnderrun = true
            onEvent?(.status(.outputUnderrun))
          }
        }
      } else {
        reportEndOfPlaybackIfDrained()
      }
    case .pauseHeard:
      // The STMp left before the device played out; LMS times a synced resume by the last report.
      if !outputRunning { onEvent?(.status(.heartbeat)) }
    case .deviceOpened, .deviceFailed, .deviceClosed, .realtimePriority, .startChecked:
      handleDeviceEvent(event)
    }
  }

  /// STMu: nothing is streaming or decoding and the output has played everything. Checked when
  /// the output runs dry and when the decoder finishes, since either may come last.
  private func reportEndOfPlaybackIfDrained() {
    guard outputRunning, !tracks.contains(where: { $0.phase == .streaming }),
      tracks.contains(where: { $0.started }), output.ring.fill == 0, output.boundaries.count == 0
    else { return }
    outputRunning = false
    tracks.removeAll()
    onEvent?(.status(.underrun))
    onEvent?(.playbackEnded)
  }

  /// STMl: a manually started stream has buffered its threshold and the decoder is ready.
  private func announceLoadedIfReady() {
    guard let index = tracks.firstIndex(where: { !$0.started && !$0.announcedLoaded }) else { return }
    let track = tracks[index]
    guard !track.command.autostart.startsAutomatically, track.format != nil || track.phase == .decoded else {
      return
    }
    let threshold = UInt64(track.command.threshold) * 1024
    guard streamBytesReceived >= threshold || input.hasEnded else { return }
    tracks[index].announcedLoaded = true
    onEvent?(.status(.bufferLoaded))
  }

  func update(_ id: Int, _ change: (inout PlaybackTrack) -> Void) {
    if let index = tracks.firstIndex(where: { $0.id == id }) { change(&tracks[index]) }
  }

  func heartbeatIfNeeded() {
    guard heartbeat == nil else { return }
    heartbeat = AlignedTick(on: eventLoop, every: .seconds(1)) { [weak self] in
      guard let self, self.outputRunning, self.player.currentPosition().isRunning else { return }
      self.onEvent?(.status(.heartbeat))
    }
  }

  // MARK: StreamFetcherDelegate

  public func streamConnected() { onEvent?(.status(.connecting)) }
  public func streamReceivedHead(_ head: HTTPResponseHead) { onEvent?(.message(.response(head.raw))) }
  public func streamReceivedMetadata(_ block: [UInt8]) { onEvent?(.message(.metadata(block))) }

  public func streamReceivedData() {
    worker.wakeup.signal(when: { input.isWorthWaking })
    announceLoadedIfReady()
  }

  public func streamEnded(_ reason: DisconnectReason) {
    worker.wakeup.signalAlways()
    onEvent?(.message(.disconnected(reason)))
    announceLoadedIfReady()
    if reason != .closedNormally, let track = tracks.last(where: { $0.phase == .streaming }) {
      onEvent?(.streamFailed(id: track.id, reason: reason))
    }
  }

  // MARK: Helpers
}
