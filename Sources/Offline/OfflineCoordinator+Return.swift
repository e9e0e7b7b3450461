import LMSControl
import NIOCore
import SlimConnection
import Support

/// `--return-to-server`: what the player does when the server comes back while it plays from its
/// cache.
public enum ReturnToServer: String, Equatable, Sendable, CaseIterable {
  /// It reconnects, and the resync hands playback back at the next track boundary.
  case auto
  /// It stays off the server (no connection, no HELO) until the listener returns, or the music
  /// it plays runs out; meanwhile it watches the server's web side to say when it is back.
  case ask
}

/// Where the listener's choice stands.
public enum ServerReturn: Equatable, Sendable {
  /// Connections go on as usual (`auto`, online, or nothing to choose yet).
  case free
  /// Kept off the server. `serverSeen`: its web side answers; `stayed`: the listener chose to stay
  /// offline (the page stops asking).
  case held(serverSeen: Bool, stayed: Bool)
  /// The listener returned: the player reconnects and resyncs; free again once it is online.
  case returning
}

extension OfflineCoordinator {
  /// After each decision: offline with `ask`, the connection is held; once the resync has brought
  /// the player back online, the choice is over.
  func followReturnChoice() {
    guard configuration.returnToServer == .ask, let hold = holdServerConnection else { return }
    switch serverReturn {
    case .free:
      guard machine.state == .offline, !machine.isConnected else { return }
      serverReturn = .held(serverSeen: false, stayed: false)
      hold(true)
      logger.notice("offline: --return-to-server ask: the player stays off the server until the listener returns")
      watchTheServer()
    case .held:
      if machine.playedOut != nil {
        chooseReturn(because: "the music it plays offline has ended")
      }
    case .returning:
      if machine.state != .offline { serverReturn = .free }
    }
  }

  /// The listener's answer to "the server is back": return to it.
  public func chooseReturn() { chooseReturn(because: "the listener chose to") }

  /// The listener's answer: stay offline (the page stops asking; the player stays off the server).
  public func chooseStayOffline() {
    guard case .held(let seen, _) = serverReturn else { return }
    serverReturn = .held(serverSeen: seen, stayed: true)
    logger.notice("offline: the listener stays offline")
  }

  private func chooseReturn(because reason: String) {
    guard case .held = serverReturn else { return }
    returnProbe?.cancel()
    returnProbe = nil
    serverReturn = .returning
    logger.notice("offline: returning to the server: \(reason)")
    holdServerConnection?(false)
  }

  /// Every 2 s while held: whether the server's web side answers (`serverstatus`, asked for no
  /// player, so LMS learns nothing of this one).
  private func watchTheServer() {
    returnProbe = AlignedTick(on: eventLoop, every: .seconds(2)) { [weak self] in
      guard let self, case .held = serverReturn else { return }
      client.request(["serverstatus", 0, 0], asPlayer: false).whenComplete { [weak self] result in
        guard let self, case .held(let seen, let stayed) = serverReturn else { return }
        let answers = (try? result.get()) != nil
        guard answers != seen else { return }
        serverReturn = .held(serverSeen: answers, stayed: stayed)
        logger.notice(
          answers ? "offline: the server is back; the listener chooses" : "offline: the server is away again")
      }
    }
  }
}
