import SlimConnection
import Testing

@Suite("ConnectionStateMachine")
struct ConnectionStateMachineTests {
  static let serverA = ServerAddress(host: "192.168.1.10")
  static let serverB = ServerAddress(host: "192.168.1.20", port: 3484)
  static let serverC = ServerAddress(host: "10.0.0.5")

  /// A machine registered with `server` (connected after its first HELO).
  static func connected(to server: ServerAddress = serverA) -> ConnectionStateMachine {
    var machine = ConnectionStateMachine(configuredServer: server)
    _ = machine.start()
    _ = machine.connectSucceeded()
    return machine
  }

  @Test func configuredServerConnectsAndRegistersFresh() {
    var machine = ConnectionStateMachine(configuredServer: Self.serverA)
    #expect(machine.state == .idle)
    #expect(machine.start() == .connect(Self.serverA))
    #expect(machine.state == .connecting(Self.serverA, purpose: .initial, failures: 0))
    #expect(!machine.hasRegistered)
    #expect(machine.connectSucceeded() == .sendHello(isReconnect: false))
    #expect(machine.state == .connected(Self.serverA))
    #expect(machine.hasRegistered)
    #expect(machine.lastServer == Self.serverA)
  }

  @Test func reconnectAfterAWorkingConnectionSetsTheReconnectBit() {
    var machine = Self.connected()
    #expect(machine.connectionClosed() == .scheduleRetry(failures: 0))
    #expect(machine.state == .waiting(next: .connect(Self.serverA, .reconnect), failures: 0))
    #expect(machine.retryTimerFired() == .connect(Self.serverA))
    #expect(machine.connectSucceeded() == .sendHello(isReconnect: true))
    #expect(machine.state == .connected(Self.serverA))
  }

  /// The listener stays offline: a retry due, a connect under way or a discovery is held, no HELO
  /// goes out (a connect that completes finds the machine held, and the driver closes it), and a
  /// release reconnects at once where it left off.
  @Test func aHeldConnectionSendsNoHeloUntilReleased() {
    var waiting = Self.connected()
    _ = waiting.connectionClosed()
    #expect(waiting.hold() == .none)
    #expect(waiting.state == .held(next: .connect(Self.serverA, .reconnect)))
    #expect(waiting.retryTimerFired() == .none)
    #expect(waiting.connectSucceeded() == .none)
    #expect(waiting.connectionClosed() == .none)
    #expect(waiting.release() == .connect(Self.serverA))
    #expect(waiting.connectSucceeded() == .sendHello(isReconnect: true))
    #expect(waiting.release() == .none)

    var connecting = Self.connected()
    _ = connecting.connectionClosed()
    _ = connecting.retryTimerFired()
    _ = connecting.hold()
    #expect(connecting.connectSucceeded() == .none)
    #expect(connecting.connectFailed() == .none)
    #expect(connecting.release() == .connect(Self.serverA))

    // Up and registered, a hold changes nothing: the resync is already on its way.
    var up = Self.connected()
    #expect(up.hold() == .none)
    #expect(up.state == .connected(Self.serverA))
  }

  @Test func repeatedConnectFailuresGrowTheFailureCount() {
    var machine = ConnectionStateMachine(configuredServer: Self.serverA, rediscoverAfterFailures: 3)
    #expect(machine.start() == .connect(Self.serverA))
    for failures in 1...10 {
      #expect(machine.connectFailed() == .scheduleRetry(failures: failures))
      // A configured server is never replaced by discovery.
      #expect(machine.retryTimerFired() == .connect(Self.serverA))
    }
    #expect(machine.connectSucceeded() == .sendHello(isReconnect: false))
  }

  @Test func successResetsTheFailureCount() {
    var machine = Self.connected()
    _ = machine.connectionClosed()
    _ = machine.retryTimerFired()
    #expect(machine.connectFailed() == .scheduleRetry(failures: 1))
    _ = machine.retryTimerFired()
    #expect(machine.connectFailed() == .scheduleRetry(failures: 2))
    _ = machine.retryTimerFired()
    #expect(machine.connectSucceeded() == .sendHello(isReconnect: true))
    #expect(machine.connectionClosed() == .scheduleRetry(failures: 0))
    _ = machine.retryTimerFired()
    #expect(machine.connectFailed() == .scheduleRetry(failures: 1))
  }

  @Test func connectionClosedWhileConnectingCountsAsAFailure() {
    var machine = ConnectionStateMachine(configuredServer: Self.serverA)
    _ = machine.start()
    #expect(machine.connectionClosed() == .scheduleRetry(failures: 1))
    #expect(machine.state == .waiting(next: .connect(Self.serverA, .initial), failures: 1))
  }

  @Test func withoutAServerItDiscovers() {
    var machine = ConnectionStateMachine(configuredServer: nil)
    #expect(machine.start() == .discover)
    #expect(machine.state == .discovering(failures: 0))
    #expect(machine.discoveryFinished(found: nil) == .scheduleRetry(failures: 1))
    #expect(machine.retryTimerFired() == .discover)
    #expect(machine.discoveryFinished(found: nil) == .scheduleRetry(failures: 2))
    #expect(machine.retryTimerFired() == .discover)
    #expect(machine.discoveryFinished(found: Self.serverB) == .connect(Self.serverB))
    #expect(machine.state == .connecting(Self.serverB, purpose: .initial, failures: 0))
    #expect(machine.connectSucceeded() == .sendHello(isReconnect: false))
    #expect(machine.lastServer == Self.serverB)
  }

  @Test(arguments: [1, 3, 5])
  func rediscoversAfterRepeatedConnectFailures(_ limit: Int) {
    var machine = ConnectionStateMachine(configuredServer: nil, rediscoverAfterFailures: limit)
    #expect(machine.rediscoverAfterFailures == limit)
    #expect(machine.start() == .discover)
    #expect(machine.discoveryFinished(found: Self.serverB) == .connect(Self.serverB))
    for failures in 1..<limit {
      #expect(machine.connectFailed() == .scheduleRetry(failures: failures))
      #expect(machine.retryTimerFired() == .connect(Self.serverB))
    }
    #expect(machine.connectFailed() == .scheduleRetry(failures: limit))
    #expect(machine.state == .waiting(next: .discover, failures: limit))
    #expect(machine.retryTimerFired() == .discover)
  }

  @Test func defaultRediscoveryThresholdIsFive() {
    var machine = ConnectionStateMachine(configuredServer: nil)
    _ = machine.start()
    _ = machine.discoveryFinished(found: Self.serverB)
    for _ in 1..<5 {
      _ = machine.connectFailed()
      #expect(machine.retryTimerFired() == .connect(Self.serverB))
    }
    _ = machine.connectFailed()
    #expect(machine.retryTimerFired() == .discover)
  }

  @Test func rediscoveredServerGetsAReconnectHello() {
    var machine = ConnectionStateMachine(configuredServer: nil, rediscoverAfterFailures: 2)
    _ = machine.start()
    _ = machine.discoveryFinished(found: Self.serverB)
    #expect(machine.connectSucceeded() == .sendHello(isReconnect: false))
    #expect(machine.connectionClosed() == .scheduleRetry(failures: 0))
    #expect(machine.retryTimerFired() == .connect(Self.serverB))
    _ = machine.connectFailed()
    _ = machine.retryTimerFired()
    _ = machine.connectFailed()
    #expect(machine.retryTimerFired() == .discover)
    #expect(machine.discoveryFinished(found: Self.serverC) == .connect(Self.serverC))
    #expect(machine.state == .connecting(Self.serverC, purpose: .reconnect, failures: 0))
    #expect(machine.connectSucceeded() == .sendHello(isReconnect: true))
    #expect(machine.lastServer == Self.serverC)
  }

  @Test func serverTimeoutClosesOnlyAnOpenConnection() {
    var machine = Self.connected()
    #expect(machine.serverTimedOut() == .closeConnection)
    #expect(machine.connectionClosed() == .scheduleRetry(failures: 0))
    #expect(machine.serverTimedOut() == .none)

    var idle = ConnectionStateMachine(configuredServer: Self.serverA)
    #expect(idle.serverTimedOut() == .none)
    _ = idle.start()
    #expect(idle.serverTimedOut() == .none)
  }

  @Test func switchMovesToTheNewServerWithAFreshHello() {
    var machine = Self.connected()
    #expect(machine.switchRequested(to: Self.serverB) == .closeConnection)
    #expect(machine.state == .switching(from: Self.serverA, to: Self.serverB))
    #expect(machine.connectionClosed() == .connect(Self.serverB))
    #expect(machine.state == .connecting(Self.serverB, purpose: .switchServer(fallback: Self.serverA), failures: 0))
    // The new server never knew this player's stream: no reconnect bit.
    #expect(machine.connectSucceeded() == .sendHello(isReconnect: false))
    #expect(machine.lastServer == Self.serverB)
    // Later drops reconnect to the new server.
    #expect(machine.connectionClosed() == .scheduleRetry(failures: 0))
    #expect(machine.retryTimerFired() == .connect(Self.serverB))
  }

  @Test func failedSwitchFallsBackToTheOldServerAtOnce() {
    var machine = Self.connected()
    _ = machine.switchRequested(to: Self.serverB)
    #expect(machine.connectionClosed() == .connect(Self.serverB))
    #expect(machine.connectFailed() == .connect(Self.serverA))
    #expect(machine.state == .connecting(Self.serverA, purpose: .reconnect, failures: 0))
    #expect(machine.connectSucceeded() == .sendHello(isReconnect: true))
    #expect(machine.lastServer == Self.serverA)
  }

  @Test func switchConnectionDroppedWhileConnectingAlsoFallsBack() {
    var machine = Self.connected()
    _ = machine.switchRequested(to: Self.serverB)
    _ = machine.connectionClosed()
    #expect(machine.connectionClosed() == .connect(Self.serverA))
  }

  @Test func switchIsIgnoredUnlessConnected() {
    var machine = ConnectionStateMachine(configuredServer: Self.serverA)
    #expect(machine.switchRequested(to: Self.serverB) == .none)
    _ = machine.start()
    #expect(machine.switchRequested(to: Self.serverB) == .none)
    #expect(machine.state == .connecting(Self.serverA, purpose: .initial, failures: 0))
  }

  @Test func stopClosesAnOpenConnectionAndIgnoresLaterEvents() {
    var machine = Self.connected()
    #expect(machine.stop() == .closeConnection)
    #expect(machine.state == .stopped)
    #expect(machine.connectionClosed() == .none)
    #expect(machine.retryTimerFired() == .none)
    #expect(machine.start() == .none)
    #expect(machine.connectSucceeded() == .none)
    #expect(machine.connectFailed() == .none)
    #expect(machine.discoveryFinished(found: Self.serverB) == .none)
    #expect(machine.serverTimedOut() == .none)
    #expect(machine.switchRequested(to: Self.serverB) == .none)
    #expect(machine.state == .stopped)
  }

  @Test func stopWhileConnectingOrSwitchingClosesTheSocket() {
    var connecting = ConnectionStateMachine(configuredServer: Self.serverA)
    _ = connecting.start()
    #expect(connecting.stop() == .closeConnection)

    var switching = Self.connected()
    _ = switching.switchRequested(to: Self.serverB)
    #expect(switching.stop() == .closeConnection)
    #expect(switching.connectionClosed() == .none)
  }

  @Test func stopWhileIdleWaitingOrDiscoveringHasNothingToClose() {
    var idle = ConnectionStateMachine(configuredServer: Self.serverA)
    #expect(idle.stop() == .none)
    #expect(idle.start() == .none)

    var waiting = Self.connected()
    _ = waiting.connectionClosed()
    #expect(waiting.stop() == .none)
    #expect(waiting.retryTimerFired() == .none)

    var discovering = ConnectionStateMachine(configuredServer: nil)
    _ = discovering.start()
    #expect(discovering.stop() == .none)
    #expect(discovering.discoveryFinished(found: Self.serverA) == .none)
    #expect(discovering.state == .stopped)
  }

  @Test func eventsOutOfTurnAreIgnored() {
    var machine = ConnectionStateMachine(configuredServer: Self.serverA)
    #expect(machine.connectSucceeded() == .none)
    #expect(machine.connectFailed() == .none)
    #expect(machine.retryTimerFired() == .none)
    #expect(machine.connectionClosed() == .none)
    #expect(machine.discoveryFinished(found: Self.serverB) == .none)
    #expect(machine.state == .idle)
    _ = machine.start()
    #expect(machine.start() == .none)
    #expect(machine.retryTimerFired() == .none)
    #expect(machine.discoveryFinished(found: Self.serverB) == .none)
    _ = machine.connectSucceeded()
    #expect(machine.connectSucceeded() == .none)
    #expect(machine.retryTimerFired() == .none)
    #expect(machine.state == .connected(Self.serverA))
  }
}
