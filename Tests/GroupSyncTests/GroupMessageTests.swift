import SlimProto
import Testing

@testable import GroupSync

@Suite struct GroupMessageTests {
  let sender = MACAddress("02:11:22:33:55:02")!
  let group = MACAddress("02:11:22:33:55:01")!

  func message(_ body: GroupMessage.Body, sequence: UInt64 = 7) -> GroupMessage {
    GroupMessage(sender: sender, group: group, boot: 0xDEAD_BEEF, sequence: sequence, body: body)
  }

  var bodies: [GroupMessage.Body] {
    [
      .playPoint(
        .init(
          queueIndex: 4, trackID: -12, sampleRate: 96000, trackStart: 7 << 33, frame: 1 << 40,
          heardAt: 0x0102_0304_0506_0708,
          state: .paused)),
      .timeRequest(sent: 123_456_789_012),
      .timeReply(requestSent: 1, received: 2, sent: UInt64.max),
    ]
  }

  @Test func everyKindDecodesToWhatWasEncoded() throws {
    for body in bodies {
      let datagram = message(body).encoded()
      let (decoded, tag) = try GroupMessage.decode(datagram)
      #expect(decoded == message(body))
      #expect(tag == nil)
    }
  }

  @Test func theLayoutIsTheOneDocumented() {
    let datagram = message(.timeRequest(sent: 0x0A0B_0C0D_0E0F_1011), sequence: 0x0102).encoded()
    #expect(datagram.count == 40)
    #expect(Array(datagram[0..<4]) == Array("SPGS".utf8))
    #expect(datagram[4] == 1 && datagram[5] == 2 && datagram[6] == 0 && datagram[7] == 0)
    #expect(Array(datagram[8..<14]) == sender.bytes)
    #expect(Array(datagram[14..<20]) == group.bytes)
    #expect(Array(datagram[20..<24]) == [0xDE, 0xAD, 0xBE, 0xEF])
    #expect(Array(datagram[24..<32]) == [0, 0, 0, 0, 0, 0, 1, 2])
    #expect(Array(datagram[32..<40]) == [0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11])
  }

  @Test func aTaggedMessageHandsBackItsTagAndWhatItCovers() throws {
    let unsigned = message(bodies[0]).encoded(tagged: true)
    let tag = [UInt8](repeating: 0xAB, count: GroupMessage.tagBytes)
    let (decoded, found) = try GroupMessage.decode(unsigned + tag)
    #expect(decoded == message(bodies[0]))
    #expect(found == GroupMessage.Tag(bytes: tag, covered: unsigned))
    // Flagged but without its tag, or with bytes after it: not a message.
    #expect(throws: WireError.self) { try GroupMessage.decode(unsigned) }
    #expect(throws: WireError.self) { try GroupMessage.decode(unsigned + tag + [0]) }
  }

  @Test func anythingElseIsRefusedWithTheReason() {
    let good = message(bodies[1]).encoded()
    var otherMagic = good
    otherMagic[0] = UInt8(ascii: "X")
    var laterVersion = good
    laterVersion[4] = 2
    var unknownKind = good
    unknownKind[5] = 9
    for (datagram, field) in [(otherMagic, "magic"), (laterVersion, "version"), (unknownKind, "kind")] {
      #expect {
        try GroupMessage.decode(datagram)
      } throws: { error in
        guard case .invalidField(_, let name, _) = error as? WireError else { return false }
        return name == field
      }
    }
    for length in [0, 3, 31, good.count - 1] {
      #expect(throws: WireError.self) { try GroupMessage.decode(Array(good.prefix(length))) }
    }
    #expect(throws: WireError.self) { try GroupMessage.decode(good + [0]) }
  }
}
