/// The player's connection life cycle, free of I/O: events go in, actions come out, and a driver
/// (`SlimProtoClient`) performs them. Every state is explicit; nothing hides in flags.
public struct ConnectionStateMachine: Sendable {
  /// Why a TCP connect is being attempted; decides the HELO flags and what a failure means.
  public enum Purpose: Equatable, Sendable {
    /// The first registration of this process.
    case initial
    /// Coming back after a connection ended; the player kept its stream and buffers.
    case reconnect
    /// A `serv` command moved the player; on failure it returns to `fallback`.
    case switchServer(fallback: ServerAddress)
  }

  public enum State: Equatable, Sendable {
    case idle
    /// Broadcasting discovery requests; `failures` counts rounds with no answer.
    case discovering(failures: Int)
    case connecting(ServerAddress, purpose: Purpose, failures: Int)
    case connected(ServerAddress)
    /// The connection is being closed so the player can move to another server.
    case switching(from: ServerAddress, to: ServerAddress)
    /// Waiting out a backoff delay before `next`.
    case waiting(next: NextStep, failures: Int)
    /// Kept off the server (the listener stays offline): nothing is attempted, no HELO is sent,
    /// until `release()`; then `next`.
    case held(next: NextStep)
    case stopped
  }

  public enum NextStep: Equatable, Sendable {
    case discover
    case connect(ServerAddress, Purpose)
  }

  public enum Action: Equatable, Sendable {
    case discover
    case connect(ServerAddress)
    /// Send HELO; `isReconnect` sets the 0x4000 bit and reports the real bytes received.
    case sendHello(isReconnect: Bool)
    /// Start the backoff timer; `failures` picks the delay (0 = quick retry).
    case scheduleRetry(failures: Int)
    case closeConnection
    case none
  }

  /// The `-s` server, if any. Without one the player discovers, and rediscovers after repeated
  /// connect failures in case the server moved.
  public let configuredServer: ServerAddress?
  /// Connect failures after which a discovered server is looked up again.
  public let rediscoverAfterFailures: Int

  public private(set) var state: State = .idle
  /// True once any HELO was sent: later HELOs carry the reconnect bit.
  public private(set) var hasRegistered = false
  /// The last server the player was registered with.
  public private(set) var lastServer: ServerAddress?

  public init(configuredServer: ServerAddress?, rediscoverAfterFailures: Int = 5) {
    self.configuredServer = configuredServer
    self.rediscoverAfterFailures = rediscoverAfterFailures
  }

  public mutating func start() -> Action {
    guard case .idle = state else { return .none }
    return begin(firstStep(), failures: 0)
  }

  public mutating func discoveryFinished(found server: ServerAddress?) -> Action {
    guard case .discovering(let failures) = state else { return .none }
    guard let server else {
      state = .waiting(next: .discover, failures: failures + 1)
      return .scheduleRetry(failures: failures + 1)
    }
    return begin(.connect(server, hasRegistered ? .reconnect : .initial), failures: 0)
  }

  public mutating func connectSucceeded() -> Action {
    guard case .connecting(let server, let purpose, _) = state else { return .none }
    state = .connected(server)
    lastServer = server
    // squeezelite clears the bit after `serv`: the new server never knew this player's stream.
    let isReconnect: Bool
    switch purpose {
    case .initial: isReconnect = false
    case .reconnect: isReconnect = hasRegistered
    case .switchServer: isReconnect = false
    }
    hasRegistered = true
    return .sendHello(isReconnect: isReconnect)
  }

  public mutating func connectFailed() -> Action {
    guard case .connecting(let server, let purpose, let failures) = state else { return .none }
    if case .switchServer(let fallback) = purpose {
      return begin(.connect(fallback, .reconnect), failures: 0)
    }
    let next: NextStep =
      configuredServer == nil && failures + 1 >= rediscoverAfterFailures
      ? .discover : .connect(server, purpose)
    state = .waiting(next: next, failures: failures + 1)
    return .scheduleRetry(failures: failures + 1)
  }

  /// The TCP connection closed: by the server, by an error, or because the driver closed it.
  public mutating func connectionClosed() -> Action {
    switch state {
    case .connected(let server):
      state = .waiting(next: .connect(server, .reconnect), failures: 0)
      return .scheduleRetry(failures: 0)
    case .switching(let from, let to):
      return begin(.connect(to, .switchServer(fallback: from)), failures: 0)
    case .connecting:
      return connectFailed()
    case .idle, .discovering, .waiting, .held, .stopped:
      return .none
    }
  }

  /// No frame from the server for too long: treat it as gone.
  public mutating func serverTimedOut() -> Action {
    guard case .connected = state else { return .none }
    return .closeConnection
  }

  /// `serv`: move to another server, falling back to this one if that fails.
  public mutating func switchRequested(to server: ServerAddress) -> Action {
    guard case .connected(let current) = state else { return .none }
    state = .switching(from: current, to: server)
    return .closeConnection
  }

  /// Stops connecting until `release()`. A connect under way is dropped when it completes (closed
  /// before any HELO); a connection that is up is left alone.
  public mutating func hold() -> Action {
    switch state {
    case .waiting(let next, _): state = .held(next: next)
    case .connecting(let server, let purpose, _): state = .held(next: .connect(server, purpose))
    case .discovering: state = .held(next: .discover)
    case .idle: state = .held(next: firstStep())
    case .connected, .switching, .held, .stopped: break
    }
    return .none
  }

  /// Connects again, at once, where the hold left off.
  public mutating func release() -> Action {
    guard case .held(let next) = state else { return .none }
    return begin(next, failures: 0)
  }

  public mutating func retryTimerFired() -> Action {
    guard case .waiting(let next, let failures) = state else { return .none }
    return begin(next, failures: failures)
  }

  public mutating func stop() -> Action {
    let wasConnected: Bool
    switch state {
    case .connected, .connecting, .switching: wasConnected = true
    default: wasConnected = false
    }
    state = .stopped
    return wasConnected ? .closeConnection : .none
  }

  private func firstStep() -> NextStep {
    configuredServer.map { .connect($0, .initial) } ?? .discover
  }

  private mutating func begin(_ step: NextStep, failures: Int) -> Action {
    switch step {
    case .discover:
      state = .discovering(failures: failures)
      return .discover
    case .connect(let server, let purpose):
      state = .connecting(server, purpose: purpose, failures: failures)
      return .connect(server)
    }
  }
}
