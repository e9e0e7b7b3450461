import Logging
import SlimProto
import Support

/// The player's side of one SlimProto conversation: builds HELO, answers the server's commands
/// that concern the player itself (heartbeat, name, server switch) and hands audio commands to the
/// playback engine. Confined to the control event loop.
public final class PlayerSession {
  public struct Identity: Sendable {
    public var mac: MACAddress
    /// `Model=`: what LMS and its plugins key features on (squeezelite's, by default).
    public var model: String
    public var modelName: String
    public var firmware: String
    /// Format tokens in preference order.
    public var formats: [String]
    /// `CanHTTPS=1`: LMS may hand the player `https` streams directly.
    public var canHTTPS: Bool

    public init(
      mac: MACAddress, model: String = "squeezelite", modelName: String, firmware: String, formats: [String],
      canHTTPS: Bool = false
    ) {
      self.mac = mac
      self.model = model
      self.modelName = modelName
      self.firmware = firmware
      self.formats = formats
      self.canHTTPS = canHTTPS
    }
  }

  public let identity: Identity
  public private(set) var name: String?
  private let nameStore: NameStore
  private let engine: any PlaybackEngine
  private let logger: Logger

  /// Writes a message to the server; nil while disconnected.
  var transmit: ((PlayerMessage) -> Void)?
  /// Asks the connection to move to another server (`serv`).
  var requestServerSwitch: ((ServerAddress) -> Void)?
  /// Asks the connection to give up on this server and reconnect afresh.
  var requestReconnect: (() -> Void)?
  /// Keeps the connection off the server (true: no connect, no HELO) or lets it connect again
  /// (false): the listener's choice to stay offline (`--return-to-server ask`). Any thread.
  public internal(set) var holdConnection: (@Sendable (Bool) -> Void)?
  /// The connection came up (HELO about to be sent) or went down, after the engine was told:
  /// for what follows the server without being the engine (the control API's view).
  public var onConnectionChange: ((Bool) -> Void)?
  /// When the server last sent anything (CLOCK_MONOTONIC ns; 0 before the first message).
  public private(set) var lastMessageNanoseconds: UInt64 = 0
  /// Where the server is, shared with the JSON-RPC side.
  public let location: ServerLocation
  /// The server the session is talking to, for resolving `serv` and stream addresses.
  public var server: ServerAddress? { location.server }
  private var pendingSyncGroupID: String?
  /// Player and server on one address: `loc` is offered, so LMS's LocalPlayer extension can name
  /// files instead of streaming them.
  private(set) var sharesServerAddress = false

  public init(
    identity: Identity, name: String?, nameStore: NameStore, engine: any PlaybackEngine,
    location: ServerLocation = ServerLocation(), logger: Logger
  ) {
    self.identity = identity
    self.location = location
    self.name = name
    self.nameStore = nameStore
    self.engine = engine
    self.logger = logger
    engine.onEvent = { [weak self] event in self?.engineEvent(event) }
  }

  public var capabilities: Capabilities {
    Capabilities(
      model: identity.model, modelName: identity.modelName, firmware: identity.firmware,
      maxSampleRate: engine.maximumSampleRate, canHTTPS: identity.canHTTPS, syncGroupID: pendingSyncGroupID,
      formats: identity.formats + (sharesServerAddress ? ["loc"] : []))
  }

  func makeHello(isReconnect: Bool) -> Hello {
    let hello = Hello(
      mac: identity.mac, isReconnect: isReconnect,
      bytesReceived: isReconnect ? engine.snapshot().bytesReceived : 0,
      capabilities: capabilities.encoded)
    // The sync group travels in one HELO only, the one right after `serv`.
    pendingSyncGroupID = nil
    return hello
  }

  /// `peerIPv4`: the address the connection reached (a host name resolved), for `strm` with
  /// server IP 0; `localIPv4`: this end's address, the same on one machine.
  func connected(to server: ServerAddress, peerIPv4: String? = nil, localIPv4: String? = nil) {
    sharesServerAddress = peerIPv4 != nil && peerIPv4 == localIPv4
    location.connected(
      to: server, ipv4: peerIPv4.flatMap(ServerLocation.ipv4Number) ?? ServerLocation.ipv4Number(server.host))
    lastMessageNanoseconds = MonotonicClock.nanoseconds()
    engine.serverConnectionChanged(true)
    onConnectionChange?(true)
  }

  func disconnected() {
    transmit = nil
    engine.serverConnectionChanged(false)
    onConnectionChange?(false)
  }

  /// The engine's view, for the liveness check.
  var streamHealth: StreamHealth { engine.streamHealth }

  /// Seconds since the server last sent anything; nil while disconnected.
  public var secondsSinceServerMessage: Double? {
    guard transmit != nil else { return nil }
    return Double(MonotonicClock.nanoseconds() &- lastMessageNanoseconds) / 1e9
  }

  /// The server is judged gone while the connection still looks open (a half-open TCP
  /// connection, a partitioned network): close it and reconnect on a fresh one.
  public func abandonConnection() {
    requestReconnect?()
  }

  public func handle(_ message: ServerMessage) {
    lastMessageNanoseconds = MonotonicClock.nanoseconds()
    switch message {
    case .stream(let command) where command.command == .status:
      // Answered at once: LMS and aioslimproto drop a player that stays silent.
      sendStatus(.heartbeat, serverTimestamp: command.rawTimestamp)
    case .stream(var command) where command.command == .start && command.serverIP == 0:
      // Server IP 0: the stream comes from the SlimProto server itself.
      guard let ipv4 = location.ipv4 else {
        logger.error("strm s from 'the server' while its address is unknown; ignored")
        return
      }
      command.serverIP = ipv4
      engine.handle(.stream(command))
    case .stream, .audioGain, .audioEnable, .continueStream, .codec, .bodyRequest:
      engine.handle(message)
    case .setting(let setting):
      handleSetting(setting)
    case .switchServer(let request):
      handleSwitch(request)
    case .version(let version):
      logger.info("server version \(version)")
    case .disconnect:
      logger.error("server refused this device (dsco)")
    case .unknown(let frame):
      logger.debug("ignoring unhandled server command '\(frame.command)' (\(frame.payload.count) bytes)")
    }
  }

  private func handleSetting(_ setting: SettingCommand) {
    guard setting.setting == .playerName else {
      logger.debug("ignoring setd id \(setting.id)")
      return
    }
    if setting.isQuery {
      if let name { send(.name(name)) }
      return
    }
    guard let newName = setting.nameValue, !newName.isEmpty else { return }
    name = newName
    logger.notice("server set the player name to '\(newName)'")
    do {
      try nameStore.save(newName)
    } catch {
      logger.error("name not saved: \(error)")
    }
    send(.name(newName))
  }

  private func handleSwitch(_ request: ServerSwitch) {
    guard let current = server else { return }
    // 0.0.0.1 once meant mysqueezebox.com, which no longer exists.
    guard request.serverIP > 1 else {
      logger.warning("ignoring serv to \(request.serverIP): no such server")
      return
    }
    let target = ServerAddress(ipv4: request.serverIP, port: current.port)
    pendingSyncGroupID = request.syncGroupID
    logger.notice("server asked to switch to \(target)")
    requestServerSwitch?(target)
  }

  /// What the engine has for the server goes out; the rest is its owners' business.
  func engineEvent(_ event: EngineEvent) {
    switch event {
    case .status(let status, let errorCode): sendStatus(status, errorCode: errorCode)
    case .message(let message): send(message)
    case .trackCreated, .trackStarted, .trackDecoded, .trackFailed, .streamFailed, .playbackEnded, .powerChanged,
      .streamRequested:
      break
    }
  }

  public func send(_ message: PlayerMessage) {
    guard let transmit else {
      logger.trace("not connected: dropping \(message.opcode)")
      return
    }
    transmit(message)
  }

  func sendStatus(_ event: StatusEvent, serverTimestamp: UInt32 = 0, errorCode: UInt16 = 0) {
    // The position is the one heard as the jiffies turned (LMS dates the report by them).
    let now = MonotonicClock.milliseconds()
    let snapshot = engine.snapshot(at: now * 1_000_000)
    var status = PlayerStatus(event: event)
    status.streamBufferSize = snapshot.streamBufferSize
    status.streamBufferFullness = snapshot.streamBufferFullness
    status.bytesReceived = snapshot.bytesReceived
    status.jiffies = UInt32(truncatingIfNeeded: now)
    status.outputBufferSize = snapshot.outputBufferSize
    status.outputBufferFullness = snapshot.outputBufferFullness
    status.elapsedSeconds = snapshot.elapsedMilliseconds / 1000
    status.elapsedMilliseconds = snapshot.elapsedMilliseconds
    status.serverTimestamp = serverTimestamp
    status.errorCode = errorCode
    let output = status.outputBufferFullness
    if event != .heartbeat {
      logger.debug("\(event.rawValue): elapsed \(status.elapsedMilliseconds) ms, output \(output) bytes")
    } else {
      // Once a second: only where a synced resume is timed by the last report is it worth reading.
      logger.trace("STMt: elapsed \(status.elapsedMilliseconds) ms, output \(output) bytes")
    }
    send(.status(status))
  }
}
