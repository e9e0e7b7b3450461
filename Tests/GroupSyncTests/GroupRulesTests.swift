import SlimProto
import Testing

@testable import GroupSync

@Suite struct ClockOffsetTests {
  @Test func theOffsetIsTheMiddleOfTheExchange() throws {
    var clock = ClockOffset()
    // Theirs runs 5 ms ahead; 1 ms each way, 0.2 ms to answer.
    let ms: UInt64 = 1_000_000
    let kept = clock.record(
      requestSent: 100 * ms, received: 106 * ms, replied: 106 * ms + 200_000, replyReceived: 102 * ms + 200_000)
    #expect(kept)
    let best = try #require(clock.best(at: 103 * ms))
    #expect(best.offset == 5 * Int64(ms))
    #expect(best.roundTrip == 2 * ms)
    #expect(best.uncertainty(at: 102 * ms + 200_000) == 1 * ms)
    #expect(clock.local(200 * ms, at: 103 * ms) == 195 * ms)
  }

  @Test func theShortestRoundTripOfTheLastFewIsBelieved() throws {
    var clock = ClockOffset()
    let ms: UInt64 = 1_000_000
    // A reply held up 30 ms on its way back reads the offset 15 ms off; the quick one wins.
    clock.record(requestSent: 0, received: 1 * ms, replied: 1 * ms, replyReceived: 32 * ms)
    clock.record(requestSent: 100 * ms, received: 101 * ms, replied: 101 * ms, replyReceived: 102 * ms)
    #expect(try #require(clock.best(at: 103 * ms)).offset == 0)
    for round in 0..<32 {
      let t = UInt64(1000 + round * 100) * ms
      clock.record(requestSent: t, received: t + 3 * ms, replied: t + 3 * ms, replyReceived: t + 4 * ms)
    }
    // The quick exchange has aged out: the best left has a 4 ms round trip.
    #expect(try #require(clock.best(at: 5000 * ms)).roundTrip == 4 * ms)
  }

  @Test func anExchangeLosesItsWeightAsItAges() throws {
    var clock = ClockOffset()
    let ms: UInt64 = 1_000_000
    // Two clocks drift apart, so an exchange's error grows 15 µs a second: a quick one (0.2 ms round
    // trip) is believed over a slower one (1 ms) made 20 s later, but not over one made 30 s later.
    clock.record(requestSent: 0, received: 100_000, replied: 100_000, replyReceived: 200_000)
    let slower = { (t: UInt64) in (requestSent: t, received: t + 2 * ms, replied: t + 2 * ms, replyReceived: t + 1 * ms)
    }
    var exchange = slower(20_000 * ms)
    clock.record(
      requestSent: exchange.requestSent, received: exchange.received, replied: exchange.replied,
      replyReceived: exchange.replyReceived)
    #expect(try #require(clock.best(at: 20_001 * ms)).offset == 0)
    exchange = slower(30_000 * ms)
    clock.record(
      requestSent: exchange.requestSent, received: exchange.received, replied: exchange.replied,
      replyReceived: exchange.replyReceived)
    let best = try #require(clock.best(at: 30_001 * ms))
    #expect(best.roundTrip == 1 * ms && best.offset == 1_500_000)
  }

  @Test func impossibleTimesAreNotKept() {
    var clock = ClockOffset()
    let answeredBeforeAsked = clock.record(requestSent: 10, received: 5, replied: 4, replyReceived: 20)
    let repliedBeforeSent = clock.record(requestSent: 10, received: 5, replied: 6, replyReceived: 9)
    let answerLongerThanTheRoundTrip = clock.record(requestSent: 10, received: 0, replied: 100, replyReceived: 20)
    #expect(!answeredBeforeAsked && !repliedBeforeSent && !answerLongerThanTheRoundTrip)
    #expect(clock.best(at: 100) == nil)
  }
}

@Suite struct LeaderChoiceTests {
  let master = MACAddress("02:00:00:00:00:05")!
  let low = MACAddress("02:00:00:00:00:01")!
  let high = MACAddress("02:00:00:00:00:09")!

  @Test func theMasterLeadsWhileItIsHeardThenTheLowestAddress() {
    #expect(LeaderChoice.leader(master: master, heard: [master, low, high]) == master)
    #expect(LeaderChoice.leader(master: master, heard: [high, low]) == low)
    #expect(LeaderChoice.leader(master: master, heard: [high]) == high)
    #expect(LeaderChoice.leader(master: master, heard: []) == nil)
  }
}

@Suite struct MessageFilterTests {
  let master = MACAddress("02:11:22:33:55:01")!
  let member = MACAddress("02:11:22:33:55:02")!
  let stranger = MACAddress("02:11:22:33:55:99")!

  func filter() -> MessageFilter {
    MessageFilter(group: master, members: [master: "192.168.1.10", member: nil])
  }

  func message(from sender: MACAddress, group: MACAddress? = nil, boot: UInt32 = 1, sequence: UInt64) -> GroupMessage {
    GroupMessage(sender: sender, group: group ?? master, boot: boot, sequence: sequence, body: .timeRequest(sent: 0))
  }

  @Test func aMembersNewerMessagesFromItsAddressPass() {
    var filter = filter()
    #expect(
      filter.check(message(from: master, sequence: 1), from: "192.168.1.10", authentication: .notRequired) == .accepted)
    #expect(filter.check(message(from: master, sequence: 5), from: "192.168.1.10", authentication: .valid) == .accepted)
    // An address LMS did not list is not checked.
    #expect(
      filter.check(message(from: member, sequence: 1), from: "10.0.0.7", authentication: .notRequired) == .accepted)
  }

  @Test func copiesStaleMessagesStrangersAndForgeriesAreRefusedAndOtherGroupsIgnored() {
    var filter = filter()
    _ = filter.check(message(from: master, sequence: 5), from: "192.168.1.10", authentication: .valid)
    let refusals: [(GroupMessage, String, MessageFilter.Authentication)] = [
      (message(from: master, sequence: 5), "192.168.1.10", .valid),  // the same again (a replay)
      (message(from: master, sequence: 4), "192.168.1.10", .valid),  // older
      (message(from: master, sequence: 6), "192.168.1.66", .valid),  // from another host
      (message(from: stranger, sequence: 1), "192.168.1.10", .valid),  // not a member
      (message(from: master, sequence: 9), "192.168.1.10", .invalid),  // without the key
    ]
    for (message, address, authentication) in refusals {
      guard case .refused = filter.check(message, from: address, authentication: authentication) else {
        Issue.record("accepted \(message) from \(address)")
        continue
      }
    }
    // Another group's messages are no refusal: every group on the LAN shares the address.
    #expect(
      filter.check(message(from: master, group: stranger, sequence: 9), from: "192.168.1.10", authentication: .valid)
        == .otherGroup)
    // None of them moved the sequence on: the next real message passes.
    #expect(filter.check(message(from: master, sequence: 6), from: "192.168.1.10", authentication: .valid) == .accepted)
  }

  @Test func aRestartedSenderStartsANewSequence() {
    var filter = filter()
    _ = filter.check(message(from: master, boot: 1, sequence: 500), from: "192.168.1.10", authentication: .valid)
    #expect(
      filter.check(message(from: master, boot: 2, sequence: 1), from: "192.168.1.10", authentication: .valid)
        == .accepted)
  }
}
