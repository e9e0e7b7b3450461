import Logging
import NIOCore
import NIOPosix
import NetworkSupport
import SlimProto

#if canImport(Glibc)
  import Glibc
#endif

/// Drives `ConnectionStateMachine` with real sockets and timers and carries the `PlayerSession`'s
/// messages. All of its state is touched on `eventLoop` only, which is why it may be shared with
/// the channel handlers (`@unchecked Sendable`).
public final class SlimProtoClient: @unchecked Sendable {
  public struct Configuration: Sendable {
    public var server: ServerAddress?
    public var discovery: ServerDiscovery
    public var connectTimeout: TimeAmount
    /// LMS sends `strm t` every 4–5 s; this long without any frame means the server is gone.
    /// It also bounds how long sent data may stay unacknowledged (TCP_USER_TIMEOUT), so a
    /// connection into a dead network fails on its own.
    public var serverTimeout: TimeAmount
    public var backoff: Backoff
    /// Judges a silent server gone before `serverTimeout` when the player needs it.
    public var liveness: ServerLiveness

    public init(
      server: ServerAddress?, discovery: ServerDiscovery = ServerDiscovery(),
      connectTimeout: TimeAmount = .seconds(5), serverTimeout: TimeAmount = .seconds(12),
      backoff: Backoff = Backoff(), liveness: ServerLiveness = ServerLiveness()
    ) {
      self.liveness = liveness
      self.server = server
      self.discovery = discovery
      self.connectTimeout = connectTimeout
      self.serverTimeout = serverTimeout
      self.backoff = backoff
    }
  }

  /// Opens a connection to a server on `eventLoop`, with the pipeline `configure` sets up: a TCP
  /// socket (`sockets`), or in tests an `EmbeddedChannel`.
  public typealias Connector =
    @Sendable (
      _ server: ServerAddress, _ eventLoop: any EventLoop,
      _ configure: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
    ) -> EventLoopFuture<any Channel>

  /// TCP, giving up on a connect after `timeout`.
  public static func sockets(connectTimeout timeout: TimeAmount) -> Connector {
    { server, eventLoop, configure in
      ClientBootstrap(group: eventLoop).connectTimeout(timeout).channelInitializer(configure)
        .connect(hostOrAddress: server.host, port: server.port)
    }
  }

  public let eventLoop: any EventLoop
  /// Told (on the loop) about each server found by discovery, with its reply's TLVs (the JSON
  /// port among them). Set before `start()`.
  public var discovered: ((DiscoveryReply) -> Void)?
  private let configuration: Configuration
  private let connector: Connector
  private let session: PlayerSession
  private let logger: Logger
  private var machine: ConnectionStateMachine
  private var channel: (any Channel)?
  private var retryTimer: Scheduled<Void>?
  private var random = SystemRandomNumberGenerator()
  private let stoppedPromise: EventLoopPromise<Void>
  private var livenessCheck: AlignedTick?

  public init(
    configuration: Configuration, session: PlayerSession, eventLoop: any EventLoop, logger: Logger,
    connector: Connector? = nil
  ) {
    self.configuration = configuration
    self.connector = connector ?? Self.sockets(connectTimeout: configuration.connectTimeout)
    self.session = session
    self.eventLoop = eventLoop
    self.logger = logger
    self.machine = ConnectionStateMachine(configuredServer: configuration.server)
    self.stoppedPromise = eventLoop.makePromise()
    session.requestServerSwitch = { [unowned self] server in
      self.perform(self.machine.switchRequested(to: server))
    }
    session.holdConnection = { [unowned self] hold in
      self.eventLoop.execute {
        self.logger.notice(hold ? "kept off the server until the listener returns" : "returning to the server")
        self.perform(hold ? self.machine.hold() : self.machine.release())
      }
    }
    session.requestReconnect = { [unowned self] in
      guard case .connected = self.machine.state else { return }
      self.logger.warning("the server is judged gone: reconnecting on a fresh connection")
      self.perform(self.machine.serverTimedOut())
    }
  }

  /// Completes once `stop()` has closed everything.
  public var stopped: EventLoopFuture<Void> { stoppedPromise.futureResult }

  public func start() {
    eventLoop.execute {
      self.perform(self.machine.start())
      // A silent server with a stalled stream is gone well before the timeout: reconnect at once
      // (and, offline mode on, hand playback to the cache) while audio is still buffered. The
      // rules count whole seconds (ServerLiveness), so a check a second is enough.
      self.livenessCheck = AlignedTick(on: self.eventLoop, every: .seconds(1)) { [unowned self] in
        let health = session.streamHealth
        let liveness = configuration.liveness
        if liveness.serverIsGone(silence: session.secondsSinceServerMessage, health: health) {
          if liveness.isStarving(health), let left = health.secondsBuffered {
            let waitedFor = health.stalledSeconds != nil ? "the stream stalled" : "no next track came"
            logger.warning(
              "\(waitedFor) with \(Int(left * 1000)) ms of audio left: server judged gone, the cache continues")
          }
          session.abandonConnection()
        }
      }
    }
  }

  public func stop() {
    eventLoop.execute {
      self.livenessCheck?.cancel()
      self.livenessCheck = nil
      self.retryTimer?.cancel()
      self.perform(self.machine.stop())
      if let channel = self.channel {
        channel.closeFuture.cascade(to: self.stoppedPromise)
      } else {
        self.stoppedPromise.succeed()
      }
    }
  }

  private func perform(_ action: ConnectionStateMachine.Action) {
    eventLoop.preconditionInEventLoop()
    switch action {
    case .none:
      break
    case .discover:
      discover()
    case .connect(let server):
      connect(to: server)
    case .sendHello(let isReconnect):
      sendHello(isReconnect: isReconnect)
    case .scheduleRetry(let failures):
      let delay = configuration.backoff.delay(afterFailures: failures, using: &random)
      logger.info("retrying in \(formatted(delay)) (attempt \(failures + 1))")
      retryTimer?.cancel()
      retryTimer = eventLoop.scheduleTask(in: .nanoseconds(delay.nanoseconds)) {
        self.perform(self.machine.retryTimerFired())
      }
    case .closeConnection:
      channel?.close(promise: nil)
    }
  }

  private func discover() {
    logger.info("looking for a server (discovery to \(configuration.discovery.target))")
    configuration.discovery.discover(on: eventLoop, logger: logger).hop(to: eventLoop).whenComplete {
      result in
      let found = try? result.get()
      if let found {
        self.discovered?(found.reply)
        let name = found.reply.name.map { " '\($0)'" } ?? ""
        let version = found.reply.version.map { " version \($0)" } ?? ""
        self.logger.notice("discovered server\(name) at \(found.server)\(version)")
      }
      self.perform(self.machine.discoveryFinished(found: found?.server))
    }
  }

  /// Connection attempts that failed in a row.
  private var connectFailures = 0

  private func connect(to server: ServerAddress) {
    logger.info("connecting to \(server)")
    let serverTimeout = configuration.serverTimeout
    let logger = self.logger
    connector(server, eventLoop) { channel in
      channel.eventLoop.makeCompletedFuture {
        try channel.pipeline.syncOperations.addHandlers(
          IdleStateHandler(readTimeout: serverTimeout),
          FrameCodecHandler(logger: logger),
          ConnectionEventsHandler(client: self))
      }
    }
    .hop(to: eventLoop)
    .whenComplete { result in
      switch result {
      case .success(let channel):
        guard case .connecting = self.machine.state else {
          channel.close(promise: nil)  // stopped meanwhile
          return
        }
        self.channel = channel
        if self.connectFailures > 1 {
          self.logger.notice("reached \(server) after \(self.connectFailures) failed attempts")
        }
        self.connectFailures = 0
        // Small frames should leave at once; some sandboxes refuse the option to ordinary users,
        // which must not cost the connection.
        channel.setOption(.socketOption(.tcp_nodelay), value: 1).whenFailure { error in
          logger.debug("TCP_NODELAY not set: \(error)")
        }
        self.setLivenessOptions(on: channel, timeout: serverTimeout)
        self.session.connected(
          to: server, peerIPv4: channel.remoteAddress?.ipAddress, localIPv4: channel.localAddress?.ipAddress)
        self.session.transmit = { [weak channel] message in
          channel?.writeAndFlush(message, promise: nil)
        }
        self.perform(self.machine.connectSucceeded())
      case .failure(let error):
        // A server that is down (or boots after the player) would otherwise log a line per
        // attempt: the first failure is a warning, then a reminder about once a minute.
        self.connectFailures += 1
        if self.connectFailures == 1 {
          self.logger.warning("cannot connect to \(server): \(error); retrying")
        } else if self.connectFailures % 60 == 0 {
          self.logger.notice("still cannot connect to \(server) (\(self.connectFailures) attempts)")
        } else {
          self.logger.debug("cannot connect to \(server): \(error)")
        }
        self.perform(self.machine.connectFailed())
      }
    }
  }

  /// Keepalive probes while the connection is quiet, and a bound on unacknowledged data: a
  /// half-open connection (the server's machine or the network gone) then errors out by itself
  /// instead of holding the state machine in `connected`.
  private func setLivenessOptions(on channel: any Channel, timeout: TimeAmount) {
    let seconds = max(1, Int32(timeout.nanoseconds / 1_000_000_000))
    let tcp = SocketOptionLevel(IPPROTO_TCP)
    let options: [(SocketOptionLevel, Int32, Int32, String)] = [
      (SocketOptionLevel(SOL_SOCKET), SO_KEEPALIVE, 1, "SO_KEEPALIVE"),
      (tcp, TCP_KEEPIDLE, max(1, seconds / 2), "TCP_KEEPIDLE"),
      (tcp, TCP_KEEPINTVL, max(1, seconds / 4), "TCP_KEEPINTVL"),
      (tcp, TCP_KEEPCNT, 2, "TCP_KEEPCNT"),
      (tcp, TCP_USER_TIMEOUT, seconds * 1000, "TCP_USER_TIMEOUT"),
    ]
    for (level, name, value, label) in options {
      channel.setOption(.socket(level, SocketOptionName(name)), value: Int(value)).whenFailure { error in
        self.logger.debug("\(label) not set: \(error)")
      }
    }
  }

  private func sendHello(isReconnect: Bool) {
    let hello = session.makeHello(isReconnect: isReconnect)
    let server = session.server.map(String.init(describing:)) ?? "?"
    let detail = isReconnect ? " (reconnect, \(hello.bytesReceived) bytes received)" : ""
    logger.notice("connected to \(server), sending HELO\(detail)")
    logger.debug("capabilities: \(hello.capabilities)")
    session.send(.hello(hello))
  }

  // MARK: Events from the channel pipeline (on the event loop)

  func received(_ message: ServerMessage, on channel: any Channel) {
    guard channel === self.channel else { return }
    session.handle(message)
  }

  func serverWentSilent(on channel: any Channel) {
    guard channel === self.channel else { return }
    logger.warning(
      "no message from the server for \(configuration.serverTimeout.nanoseconds / 1_000_000_000) s: reconnecting")
    perform(machine.serverTimedOut())
  }

  func connectionFailed(with error: any Error, on channel: any Channel) {
    guard channel === self.channel else { return }
    logger.error("connection to the server failed: \(error)")
  }

  func connectionClosed(_ channel: any Channel) {
    guard channel === self.channel else { return }
    self.channel = nil
    session.disconnected()
    if case .stopped = machine.state { return }
    logger.warning("connection to the server closed")
    perform(machine.connectionClosed())
  }
}

private func formatted(_ duration: Duration) -> String {
  let ms = duration.nanoseconds / 1_000_000
  return ms < 1000 ? "\(ms) ms" : "\(Double(ms / 100) / 10) s"
}
