import GroupSync
import LMSControl
import NIOCore
import SlimProto
import Support

/// The slimplay members of an LMS sync group keep each other's time on the LAN, online and while
/// the server is away: LMS corrects a member only once it looks 10 ms off by its reports' timestamps
/// (and not at all while it is gone); a `GroupSession` publishes this player's play point and
/// follows the group's leader to within a fraction of a millisecond. Online, when every member
/// keeps the group's clock, LMS's own adjustments are taken as its view of the player
/// (`OfflineStateMachine.serverViewMilliseconds`). A member keeps the group it had through an outage.
extension OfflineCoordinator {
  /// Starts, restarts or ends the group session as the group requires.
  func groupSessionFollowsState() {
    let wanted = configuration.groupLink != nil && !machine.groupPeers.isEmpty ? machine.group : nil
    // LMS checks a group's sync only while it streams to it and hears its reports.
    defer { groupSession?.session.serverIsThere(machine.forwardsReports()) }
    guard wanted != groupSession?.group else { return }
    if let (_, session) = groupSession {
      session.stop()
      groupSession = nil
      groupLogger.info("left the group of \(session.group)")
    }
    if let wanted { startGroupSession(wanted) }
  }

  private func startGroupSession(_ group: SyncGroup) {
    guard var link = configuration.groupLink, let master = MACAddress(group.master),
      let player = MACAddress(machine.player)
    else { return }
    // The interface that reaches the server reaches its players; a player restarted while the
    // server is away goes by the server it saved.
    if link.interfaceAddress == nil, let host = client.endpoint?.host ?? savedServerHost {
      link.interfaceAddress = GroupLink.localAddress(reaching: host, port: 3483)
    }
    var members: [MACAddress: String?] = [:]
    for member in group.members {
      guard let mac = MACAddress(member) else { continue }
      members[mac] = groupAddresses[member]
    }
    let session = GroupSession(
      link: GroupLink(configuration: link, player: player, eventLoop: eventLoop, logger: groupLogger),
      master: master, members: members,
      ownPlayPoint: { [unowned self] now in groupPlayPoint(at: now) },
      nudge: { [unowned self] frames in engine.nudgeOutput(frames: frames) },
      eventLoop: eventLoop, logger: groupLogger)
    groupSession = (group, session)
    groupLogger.notice("keeping time with \(machine.groupPeers.joined(separator: ", "))")
    session.start()
  }

  /// Where this player is, as the group compares it: queue entry, LMS track, where the track's
  /// stream began and the frames heard since, at `now`. A track started where the group's leader
  /// was (a member joining) counts from the leader's origin.
  func groupPlayPoint(at now: UInt64) -> GroupMessage.PlayPoint? {
    guard engine.isPlaying, let heard = engine.heardPosition(at: now),
      let placement = machine.ledger.placement(of: heard.trackID),
      let track = machine.ledger.track(at: placement.queueIndex), heard.sampleRate > 0
    else { return nil }
    let start = Int((placement.startSeconds * Double(heard.sampleRate)).rounded())
    let origin = joinedTrack.flatMap { $0.track == heard.trackID ? $0.origin : nil } ?? start
    let frame = start - origin + heard.frames - playDelayFrames(sampleRate: heard.sampleRate)
    return GroupMessage.PlayPoint(
      queueIndex: UInt32(placement.queueIndex), trackID: Int32(truncatingIfNeeded: track.id),
      sampleRate: UInt32(heard.sampleRate), trackStart: UInt64(max(0, origin)),
      frame: UInt64(max(0, frame)), heardAt: now)
  }

  /// LMS plays a member with an audio delay set (`playDelay`, for a slow amplifier or DAC) that
  /// much earlier than the rest of its group, and judges its sync likewise. The group's clock does
  /// the same: every member gives and compares its position as it would be without its own delay.
  func playDelayFrames(sampleRate: Int) -> Int { playDelayMilliseconds * sampleRate / 1000 }

  /// This player's audio delay, read as it joins a group and as each track starts in one.
  func readPlayDelay() {
    guard !machine.groupPeers.isEmpty, machine.isConnected else { return }
    client.request(["playerpref", "playDelay", "?"]).hop(to: eventLoop).assumeIsolated().whenSuccess { [self] result in
      guard let delay = result["_p2"]?.int, delay != playDelayMilliseconds else { return }
      groupLogger.info("the server plays this player \(delay) ms early in its group (its audio delay)")
      playDelayMilliseconds = delay
    }
  }

  /// The addresses LMS has for the group's members (`players`), so that only they are heard.
  func readGroupAddresses() {
    guard let group = machine.group, group.contains(machine.player) else { return }
    client.request(["players", 0, 100]).hop(to: eventLoop).assumeIsolated().whenSuccess { [self] result in
      for player in result["players_loop"]?.array ?? [] {
        guard let id = player["playerid"]?.string?.lowercased(), group.contains(id),
          let ip = player["ip"]?.string
        else { continue }
        // "192.168.1.20:41234": the address without the port.
        groupAddresses[id] = String(ip.split(separator: ":").first ?? Substring(ip))
      }
    }
  }
}
