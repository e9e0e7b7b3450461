import SlimProto
import Testing

@Suite("Discovery")
struct DiscoveryTests {
  static func item(_ tag: String, _ value: String) -> [UInt8] {
    ascii(tag) + [UInt8(value.utf8.count)] + ascii(value)
  }

  /// The reply LMS 7.9.1 sent (reference §3).
  static let observedReply: [UInt8] = bytes(
    ascii("E"),
    item("IPAD", "127.0.0.1"),
    item("NAME", "vm"),
    item("JSON", "9000"),
    item("VERS", "7.9.1"),
    item("UUID", "dec4d95f-8aa1-4a9c-b479-3ea44df7b81c"))

  @Test func requestEncodesEachTagWithAZeroLength() {
    let expected = bytes(
      ascii("e"), ascii("IPAD"), [0], ascii("NAME"), [0], ascii("JSON"), [0], ascii("VERS"), [0], ascii("UUID"), [0])
    #expect(DiscoveryRequest().encoded() == expected)
    #expect(DiscoveryRequest(tags: [.cliPort]).encoded() == ascii("eCLIP") + [0])
    #expect(DiscoveryRequest(tags: []).encoded() == ascii("e"))
  }

  @Test func observedItemLengths() {
    #expect(Self.item("IPAD", "127.0.0.1")[4] == 9)
    #expect(Self.item("NAME", "vm")[4] == 2)
    #expect(Self.item("JSON", "9000")[4] == 4)
    #expect(Self.item("VERS", "7.9.1")[4] == 5)
    #expect(Self.item("UUID", "dec4d95f-8aa1-4a9c-b479-3ea44df7b81c")[4] == 36)
  }

  @Test func parsesTheObservedReply() throws {
    let reply = try DiscoveryReply(parsing: Self.observedReply)
    #expect(reply.ipAddress == "127.0.0.1")
    #expect(reply.name == "vm")
    #expect(reply.jsonPort == 9000)
    #expect(reply.version == "7.9.1")
    #expect(reply.uuid == "dec4d95f-8aa1-4a9c-b479-3ea44df7b81c")
    #expect(reply.encoded() == Self.observedReply)
  }

  @Test func unknownTagsAreSkipped() throws {
    let datagram = bytes(
      ascii("E"), Self.item("JVID", "abcdef"), Self.item("NAME", "lms"), Self.item("CLIP", "9090"), ascii("XXXX"), [0],
      Self.item("JSON", "9001"))
    let reply = try DiscoveryReply(parsing: datagram)
    #expect(reply == DiscoveryReply(name: "lms", jsonPort: 9001))
  }

  @Test func emptyReplyParses() throws {
    #expect(try DiscoveryReply(parsing: ascii("E")) == DiscoveryReply())
  }

  @Test func nonNumericJSONPortIsNil() throws {
    let reply = try DiscoveryReply(parsing: ascii("E") + Self.item("JSON", "http"))
    #expect(reply.jsonPort == nil)
  }

  @Test func truncatedValueThrows() {
    let datagram = ascii("E") + ascii("IPAD") + [9] + ascii("127.0")
    #expect(throws: WireError.truncated(message: "discovery reply", needed: 15, available: 11)) {
      try DiscoveryReply(parsing: datagram)
    }
  }

  @Test func truncatedTagAndMissingLengthThrow() {
    #expect(throws: WireError.self) { try DiscoveryReply(parsing: ascii("EIPA")) }
    #expect(throws: WireError.self) { try DiscoveryReply(parsing: ascii("EIPAD")) }
    #expect(throws: WireError.self) { try DiscoveryReply(parsing: Array(Self.observedReply.dropLast())) }
  }

  @Test func wrongMarkerThrows() {
    var datagram = Self.observedReply
    datagram[0] = UInt8(ascii: "D")
    #expect(throws: WireError.invalidField(message: "discovery reply", field: "marker", value: 0x44)) {
      try DiscoveryReply(parsing: datagram)
    }
    #expect(throws: WireError.self) { try DiscoveryReply(parsing: []) }
  }

  @Test func replyRoundTrip() throws {
    let reply = DiscoveryReply(ipAddress: "192.168.1.2", name: "nas", jsonPort: 9000, version: "8.5.0", uuid: "u")
    #expect(try DiscoveryReply(parsing: reply.encoded()) == reply)
  }
}
