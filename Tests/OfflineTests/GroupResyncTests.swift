import LMSControl
import SlimProto
import Testing

@testable import Offline

/// The resync of a sync group's members: one jump for the group, by the master the server shows
/// once the members are back; the others adopt the group's stream.
@Suite struct GroupResyncTests {
  static let master = "02:11:22:33:55:01"
  static let member = "02:11:22:33:55:02"
  static let group = SyncGroup(master: master, slaves: [member])

  private typealias Facts = OfflineStateMachine.EngineFacts

  /// Ten tracks of 10 s.
  private static let tracks = (0..<10).map { index in
    QueueTrack(
      index: index, id: 100 + index, title: "t\(index)", duration: 10, url: "file:///m/\(index).flac", type: "flc",
      fileSize: 1000 + index)
  }

  private static func status(current: Int, mode: LMSStatus.Mode = .play, group: SyncGroup? = group) -> LMSStatus {
    LMSStatus(
      mode: mode, currentIndex: current, playlistTimestamp: 1, trackCount: tracks.count, tracks: tracks,
      syncGroup: group)
  }

  private static func playing(_ track: Int, at seconds: Double, decoding: Facts.Decoding = .idle) -> Facts {
    Facts(decoding: decoding, output: .playing, heard: .init(engineTrack: track, seconds: seconds))
  }

  /// `player`, in the group while online on engine track 1 (entry 0), offline on engine track 7
  /// (entry 1), then reconnected.
  private static func reconnected(as player: String) -> OfflineStateMachine {
    var machine = playingInTheGroup(as: player)
    _ = machine.connectionChanged(
      up: false, facts: playing(1, at: 9, decoding: .liveStream(track: 1)), isCached: { _ in true })
    machine.localTrackQueued(7, queueIndex: 1)
    _ = machine.connectionChanged(up: true, facts: playing(7, at: 3), isCached: { _ in true })
    return machine
  }

  /// `player`, online in the group, engine track 1 (entry 0) heard 1 s in.
  private static func playingInTheGroup(as player: String) -> OfflineStateMachine {
    var machine = OfflineStateMachine(player: player)
    _ = machine.connectionChanged(up: true, facts: Facts(), isCached: { _ in true })
    machine.trackCreated(1)
    _ = machine.trackStarted(1)
    _ = machine.statusPolled(status(current: 0), facts: playing(1, at: 1))
    return machine
  }

  private static func jumps(_ actions: [OfflineStateMachine.Action]) -> [OfflineStateMachine.Action] {
    actions.filter { if case .jump = $0 { true } else { false } }
  }

  /// Online, while the group's clock keeps the group in time, LMS's own sync adjustments are its
  /// view of the member: not played, but every elapsed time it is told moves by them, until the
  /// connection goes. Without the clock, or beyond 100 ms, they are played.
  @Test func theServersSyncAdjustmentsAreItsViewWhileTheGroupsClockKeepsTime() {
    var machine = Self.playingInTheGroup(as: Self.member)
    let skip = ServerMessage.stream(StreamCommand(command: .skipAhead, value: 12))
    let hold = ServerMessage.stream(StreamCommand(command: .pause, value: 5))
    let pause = ServerMessage.stream(StreamCommand(command: .pause))
    let facts = Self.playing(1, at: 4)

    #expect(machine.serverMessage(skip, facts: facts) == [.forward(skip)])
    let taken = machine.serverMessage(skip, facts: facts, groupKeepsTime: true)
    #expect(!taken.contains(.forward(skip)) && taken.count == 1)
    _ = machine.serverMessage(hold, facts: facts, groupKeepsTime: true)
    #expect(machine.serverViewMilliseconds == 7)
    #expect(machine.reportedElapsedMilliseconds(engineMilliseconds: 4000, heardTrack: 1) == 4007)
    // Nothing heard yet is still nothing; a plain pause is the listener's, always played.
    #expect(machine.reportedElapsedMilliseconds(engineMilliseconds: 0, heardTrack: 1) == 0)
    #expect(machine.serverMessage(pause, facts: facts, groupKeepsTime: true) == [.forward(pause)])

    // A view 100 ms off is no longer a matter of timestamps: played, and the view starts again.
    let far = ServerMessage.stream(StreamCommand(command: .skipAhead, value: 95))
    #expect(machine.serverMessage(far, facts: facts, groupKeepsTime: true).contains(.forward(far)))
    #expect(machine.serverViewMilliseconds == 0)

    _ = machine.serverMessage(skip, facts: facts, groupKeepsTime: true)
    _ = machine.connectionChanged(up: false, facts: facts, isCached: { _ in true })
    #expect(machine.serverViewMilliseconds == 0)
  }

  /// LMS's view was of the player in its group: once the server shows it out of the group (or in
  /// another), the elapsed time it is told is the heard one again, within the same connection.
  @Test func theServersViewEndsWhenThePlayerLeavesItsGroup() {
    var machine = Self.playingInTheGroup(as: Self.member)
    let skip = ServerMessage.stream(StreamCommand(command: .skipAhead, value: 12))
    _ = machine.serverMessage(skip, facts: Self.playing(1, at: 2), groupKeepsTime: true)
    // The same group polled again keeps the view.
    _ = machine.statusPolled(Self.status(current: 0), facts: Self.playing(1, at: 3))
    #expect(machine.reportedElapsedMilliseconds(engineMilliseconds: 3000, heardTrack: 1) == 3012)

    _ = machine.statusPolled(Self.status(current: 0, group: nil), facts: Self.playing(1, at: 4))
    #expect(machine.serverViewMilliseconds == 0)
    #expect(machine.reportedElapsedMilliseconds(engineMilliseconds: 4000, heardTrack: 1) == 4000)

    let other = SyncGroup(master: Self.member, slaves: ["02:11:22:33:55:09"])
    _ = machine.statusPolled(Self.status(current: 0), facts: Self.playing(1, at: 5))
    _ = machine.serverMessage(skip, facts: Self.playing(1, at: 5), groupKeepsTime: true)
    _ = machine.statusPolled(Self.status(current: 0, group: other), facts: Self.playing(1, at: 6))
    #expect(machine.serverViewMilliseconds == 0)
  }

  @Test func theGroupIsRememberedFromTheServersStatus() {
    let machine = Self.reconnected(as: Self.member)
    #expect(machine.group == Self.group)
    #expect(machine.groupPeers == [Self.master])
    #expect(OfflineStateMachine(player: Self.master).groupPeers.isEmpty)
  }

  @Test func theResyncWaitsForTheOtherMembersThenTheMasterAloneJumps() {
    var machine = Self.reconnected(as: Self.master)
    // The server is back but the other member is not: a jump now would be undone when it returns
    // (LMS restarts a playing group for a member that comes back).
    let early = machine.resyncStatusArrived(
      Self.status(current: 0, mode: .stop, group: nil), facts: Self.playing(7, at: 3.2), connected: [Self.master])
    #expect(Self.jumps(early).isEmpty)
    #expect(early.contains(.readStatusForResync(fromIndex: 1, afterMilliseconds: 250)))
    #expect(machine.state == .offline)
    let back = machine.resyncStatusArrived(
      Self.status(current: 0, mode: .stop), facts: Self.playing(7, at: 3.5), connected: [Self.master, Self.member])
    #expect(Self.jumps(back) == [.jump(queueIndex: 1, seconds: 3.5, thenPause: false)])
    #expect(back.contains(.armResyncTimeout(.serverStream)))
  }

  @Test func theMasterResyncsOnceTheNextCachedTrackPlaysWhenTheHeardOneIsEnding() {
    var machine = Self.reconnected(as: Self.master)
    machine.localTrackQueued(8, queueIndex: 2)
    let everyone: Set<String> = [Self.master, Self.member]
    // 1.5 s left of entry 1 (10 s long): the group is not jumped into its end.
    let ending = machine.resyncStatusArrived(
      Self.status(current: 0), facts: Self.playing(7, at: 8.5), connected: everyone)
    #expect(Self.jumps(ending).isEmpty)
    #expect(ending.contains(.readStatusForResync(fromIndex: 1, afterMilliseconds: 1750)))
    #expect(!ending.contains(.dropLocalTracks(after: 7)), "the cached next track plays on")
    #expect(machine.state == .offline)
    let next = machine.resyncStatusArrived(
      Self.status(current: 0), facts: Self.playing(8, at: 0.3), connected: everyone)
    #expect(Self.jumps(next) == [.jump(queueIndex: 2, seconds: 0.3, thenPause: false)])
  }

  @Test func theMasterJumpsIntoATracksEndWhenNothingCachedFollowsIt() {
    var machine = Self.reconnected(as: Self.master)
    let actions = machine.resyncStatusArrived(
      Self.status(current: 0), facts: Self.playing(7, at: 8.5), connected: [Self.master, Self.member])
    #expect(Self.jumps(actions) == [.jump(queueIndex: 1, seconds: 8.5, thenPause: false)])
  }

  @Test func aMemberThatNeverReturnsIsWaitedForFiveSeconds() {
    var machine = Self.reconnected(as: Self.master)
    var actions: [OfflineStateMachine.Action] = []
    var reads = 0
    repeat {
      actions = machine.resyncStatusArrived(
        Self.status(current: 1), facts: Self.playing(7, at: 3), connected: [Self.master])
      reads += 1
    } while Self.jumps(actions).isEmpty && reads < 100
    // 20 reads 250 ms apart, then the resync goes ahead without it.
    #expect(reads == OfflineStateMachine.groupWaitLimit + 1)
    #expect(Self.jumps(actions).count == 1)
  }

  @Test func theOtherMembersAdoptTheGroupsStreamWithoutJumpingTheServer() {
    var machine = Self.reconnected(as: Self.member)
    let followed = machine.resyncStatusArrived(
      Self.status(current: 0, mode: .stop), facts: Self.playing(7, at: 3.5), connected: [Self.master, Self.member])
    #expect(Self.jumps(followed).isEmpty)
    // Its cached tracks stay queued until the group's stream comes.
    #expect(!followed.contains(.dropLocalTracks(after: 7)))
    #expect(followed.contains(.armResyncTimeout(.groupMaster)))
    guard case .followingGroup = machine.state else {
      Issue.record("expected followingGroup, got \(machine.state)")
      return
    }
    #expect(!machine.forwardsReports())
    // The master's jump: LMS stops the group's old stream, then streams the heard track to every member.
    let stop = ServerMessage.stream(StreamCommand(command: .stop))
    #expect(machine.serverMessage(stop, facts: Self.playing(7, at: 3.6)) == [.report(.flushed)])
    let start = ServerMessage.stream(StreamCommand(command: .start, autostart: .manual, format: .flac))
    let check = machine.serverMessage(start, facts: Self.playing(7, at: 3.7, decoding: .localFile(track: 7)))
    #expect(check.contains(.checkGroupStream(check: 1, fromIndex: 1)))
    let adopted = machine.groupStreamChecked(
      Self.status(current: 1), check: 1, facts: Self.playing(7, at: 3.7, decoding: .localFile(track: 7)))
    // LMS starts a group once every member has buffered (STMl), with `strm u`.
    #expect(adopted.contains(.report(.bufferLoaded)))
    #expect(!adopted.contains(.report(.trackStarted)))
    #expect(adopted.contains(.cancelResyncTimeout))
    #expect(adopted.contains(.dropLocalTracks(after: 7)))
    #expect(!adopted.contains(.forward(start)))
    #expect(machine.forwardsReports())
    // This member cannot know the offset the master asked for: it reports no elapsed time, so LMS
    // corrects no member against a wrong one, until the server's stream takes over.
    #expect(machine.reportedElapsedMilliseconds(engineMilliseconds: 4200, heardTrack: 7) == 0)
    // The cached copy was read to its end before the start: LMS drops an STMd until it plays.
    _ = machine.trackDecoded(7, cutShort: false, isCached: { _ in true })
    // LMS starts a group's members together with `strm u`: this one already plays, and is ready
    // for the next track, which it says a moment later: LMS fetches the next track at the first
    // STMd, and would take the master's STMs, were it to come after that, for the next track's.
    let unpause = ServerMessage.stream(StreamCommand(command: .unpause, value: 123_456))
    #expect(
      machine.serverMessage(unpause, facts: Self.playing(7, at: 4))
        == [.report(.resumed), .report(.trackStarted), .reportDecoderReadyLater(afterMilliseconds: 500)])
    #expect(machine.decoderReadyDue() == [.report(.decoderReady)])
    #expect(machine.decoderReadyDue().isEmpty)
    #expect(machine.serverMessage(start, facts: Self.playing(7, at: 9)) == [.forward(start)])
    machine.trackCreated(9)
    _ = machine.trackStarted(9)
    #expect(machine.state == .online)
    #expect(machine.ledger.placement(of: 9)?.queueIndex == 2)
  }

  /// The master's cached copy was read to its end before the group's start (its STMd then only
  /// marked it ready); at the start the other member said it was ready too, and LMS streamed the
  /// next track before the master's STMd was due. That stream is the next track, not a move: the
  /// cached copy plays on, its time told against the offset asked, until the stream takes over.
  @Test func theGroupsNextTrackStreamedBeforeTheMastersStmdIsTheNextTrack() {
    var machine = Self.reconnected(as: Self.master)
    let jumped = machine.resyncStatusArrived(
      Self.status(current: 0), facts: Self.playing(7, at: 3.5), connected: [Self.master, Self.member])
    #expect(Self.jumps(jumped) == [.jump(queueIndex: 1, seconds: 3.5, thenPause: false)])
    let stop = ServerMessage.stream(StreamCommand(command: .stop))
    let start = ServerMessage.stream(StreamCommand(command: .start, autostart: .manual, format: .flac))
    _ = machine.serverMessage(stop, facts: Self.playing(7, at: 3.6, decoding: .localFile(track: 7)))
    let adopted = machine.serverMessage(start, facts: Self.playing(7, at: 3.7, decoding: .localFile(track: 7)))
    #expect(adopted.contains(.report(.bufferLoaded)))
    _ = machine.trackDecoded(7, cutShort: false, isCached: { _ in true })
    let unpause = ServerMessage.stream(StreamCommand(command: .unpause, value: 123_456))
    #expect(
      machine.serverMessage(unpause, facts: Self.playing(7, at: 3.8))
        == [.report(.resumed), .report(.trackStarted), .reportDecoderReadyLater(afterMilliseconds: 500)])

    let next = machine.serverMessage(start, facts: Self.playing(7, at: 3.82))
    #expect(next.contains(.forward(start)))
    guard case .handingBack = machine.state else {
      Issue.record("expected handingBack, got \(machine.state)")
      return
    }
    // No STMd while the next track streams: LMS would take that track for done.
    #expect(machine.decoderReadyDue().isEmpty)
    // 5.0 s of the cached copy heard: LMS, which adds the 3.5 s it was asked for, is told 1.5 s.
    #expect(machine.reportedElapsedMilliseconds(engineMilliseconds: 5000, heardTrack: 7) == 1500)
    machine.trackCreated(9)
    #expect(machine.trackStarted(9).contains(.log(.notice, "resync: the server's stream took over at track 3")))
    #expect(machine.state == .online)
    #expect(machine.ledger.placement(of: 9)?.queueIndex == 2)
  }

  @Test func theGroupsStreamThatCameBeforeTheMemberKnewItsMasterIsAdopted() {
    var machine = Self.reconnected(as: Self.member)
    // The master was back first and jumped while this member still read the server's status.
    let start = ServerMessage.stream(StreamCommand(command: .start, autostart: .manual, format: .flac))
    #expect(machine.serverMessage(start, facts: Self.playing(7, at: 3.4)).isEmpty)
    let followed = machine.resyncStatusArrived(
      Self.status(current: 1), facts: Self.playing(7, at: 3.5), connected: [Self.master, Self.member])
    #expect(Self.jumps(followed).isEmpty)
    #expect(followed.contains(.checkGroupStream(check: 1, fromIndex: 1)))
    let adopted = machine.groupStreamChecked(Self.status(current: 1), check: 1, facts: Self.playing(7, at: 3.6))
    #expect(adopted.contains(.report(.bufferLoaded)))
    guard case .handingBack = machine.state else {
      Issue.record("expected handingBack, got \(machine.state)")
      return
    }
    // LMS restarts the group once more before starting it (a member back late): the new stream
    // replaces the adopted one; nothing is followed.
    let stop = ServerMessage.stream(StreamCommand(command: .stop))
    #expect(machine.serverMessage(stop, facts: Self.playing(7, at: 3.6)) == [.report(.flushed)])
    #expect(
      machine.serverMessage(start, facts: Self.playing(7, at: 3.7)).contains(.checkGroupStream(check: 2, fromIndex: 1)))
    // The answer to the first check came late: only the latest counts.
    #expect(machine.groupStreamChecked(Self.status(current: 1), check: 1, facts: Self.playing(7, at: 3.8)).isEmpty)
    let readopted = machine.groupStreamChecked(Self.status(current: 1), check: 2, facts: Self.playing(7, at: 3.8))
    #expect(readopted.contains(.report(.bufferLoaded)))
    guard case .handingBack = machine.state else {
      Issue.record("expected handingBack, got \(machine.state)")
      return
    }
  }

  @Test func aMemberThatWentOnIntoTheNextTrackWithItsMasterAdoptsItsStream() {
    var machine = Self.reconnected(as: Self.member)
    _ = machine.resyncStatusArrived(
      Self.status(current: 0), facts: Self.playing(7, at: 9.98), connected: [Self.master, Self.member])
    // Entry 1 ended 20 ms later; the cached entry 2 (engine track 8) plays, and the master, which
    // heard it too, asked for it.
    machine.localTrackQueued(8, queueIndex: 2)
    let start = ServerMessage.stream(StreamCommand(command: .start, autostart: .manual, format: .flac))
    #expect(
      machine.serverMessage(start, facts: Self.playing(8, at: 0.01)).contains(.checkGroupStream(check: 1, fromIndex: 1))
    )
    let adopted = machine.groupStreamChecked(Self.status(current: 2), check: 1, facts: Self.playing(8, at: 0.03))
    #expect(adopted.contains(.report(.bufferLoaded)))
    #expect(adopted.contains(.dropLocalTracks(after: 8)))
  }

  @Test func aStreamOfTheServersOwnRestartIsNotAdopted() {
    var machine = Self.reconnected(as: Self.member)
    // A member's return makes LMS restart the group from the track it last knew (entry 0), while
    // entry 1 is heard; its master then jumps the group to the heard entry.
    let restart = ServerMessage.stream(StreamCommand(command: .start, autostart: .manual, format: .flac))
    #expect(machine.serverMessage(restart, facts: Self.playing(7, at: 3.4)).isEmpty)
    let followed = machine.resyncStatusArrived(
      Self.status(current: 0), facts: Self.playing(7, at: 3.5), connected: [Self.master, Self.member])
    #expect(followed.contains(.checkGroupStream(check: 1, fromIndex: 1)))
    let notAdopted = machine.groupStreamChecked(Self.status(current: 0), check: 1, facts: Self.playing(7, at: 3.6))
    #expect(!notAdopted.contains(.report(.bufferLoaded)))
    #expect(!notAdopted.contains(.dropLocalTracks(after: 7)))
    guard case .followingGroup = machine.state else {
      Issue.record("expected followingGroup, got \(machine.state)")
      return
    }
    #expect(!machine.forwardsReports())
    let stop = ServerMessage.stream(StreamCommand(command: .stop))
    #expect(machine.serverMessage(stop, facts: Self.playing(7, at: 3.7)) == [.report(.flushed)])
    #expect(
      machine.serverMessage(restart, facts: Self.playing(7, at: 3.8)).contains(
        .checkGroupStream(check: 2, fromIndex: 1)))
    let adopted = machine.groupStreamChecked(Self.status(current: 1), check: 2, facts: Self.playing(7, at: 3.9))
    #expect(adopted.contains(.report(.bufferLoaded)))
    #expect(adopted.contains(.dropLocalTracks(after: 7)))
    #expect(machine.reportedElapsedMilliseconds(engineMilliseconds: 3900, heardTrack: 7) == 0)
  }

  @Test func aMasterThatDoesNotResyncInTimeLeavesItToTheMember() {
    var machine = Self.reconnected(as: Self.member)
    _ = machine.resyncStatusArrived(
      Self.status(current: 1), facts: Self.playing(7, at: 3.5), connected: [Self.master, Self.member])
    let failed = machine.resyncFailed("the group's master did not resync the group in time")
    #expect(machine.state == .offline)
    #expect(failed.contains(.readStatusForResync(fromIndex: 1, afterMilliseconds: 500)))
    let alone = machine.resyncStatusArrived(
      Self.status(current: 1), facts: Self.playing(7, at: 8.5), connected: [Self.master, Self.member])
    #expect(Self.jumps(alone) == [.jump(queueIndex: 1, seconds: 8.5, thenPause: false)])
  }

  @Test func whenTheCacheRanOutOnlyTheMasterMovesTheServerOn() {
    for (player, moves) in [(Self.master, true), (Self.member, false)] {
      var machine = OfflineStateMachine(player: player)
      _ = machine.connectionChanged(up: true, facts: Facts(), isCached: { _ in true })
      machine.trackCreated(1)
      _ = machine.trackStarted(1)
      _ = machine.statusPolled(Self.status(current: 0), facts: Self.playing(1, at: 1))
      // Gone while nothing of the next track is cached: the buffer plays out, then nothing plays.
      _ = machine.connectionChanged(up: false, facts: Self.playing(1, at: 9), isCached: { _ in false })
      _ = machine.trackDecoded(1, cutShort: false, isCached: { _ in false })
      _ = machine.connectionChanged(up: true, facts: Facts(), isCached: { _ in false })
      let actions = machine.resyncStatusArrived(
        Self.status(current: 0), facts: Facts(), connected: [Self.master, Self.member])
      #expect(actions.contains(.restartServerTrack(queueIndex: 1)) == moves, "\(player): \(actions)")
    }
  }

  @Test func aPlayerTheServerNoLongerGroupsResyncsAlone() {
    var machine = Self.reconnected(as: Self.member)
    // Unsynced on the server while away: the status shows no group once everyone is back.
    let alone = machine.resyncStatusArrived(
      Self.status(current: 1, group: nil), facts: Self.playing(7, at: 3.5), connected: [Self.master, Self.member])
    #expect(Self.jumps(alone).count == 1)
  }
}
