import SlimProto
import Testing

@Suite("HELO")
struct HelloTests {
  /// The reconnect HELO squeezelite sends after its first one: bit 0x4000, 101618 bytes received.
  static let reconnectPayload: [UInt8] = bytes(
    [12, 0],  // device id 12 (squeezeplay), revision 0
    [0x00, 0x11, 0x22, 0x33, 0x44, 0x55],  // MAC
    [UInt8](repeating: 0, count: 16),  // uuid
    [0x40, 0x00],  // wlan_channellist: reconnect bit
    [0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x8c, 0xf2],  // bytes_received hi, lo = 101618
    [0x00, 0x00],  // language
    ascii(Observed.squeezeliteCapabilities))

  @Test func observedCapabilitiesMakeA260BytePayload() {
    #expect(Observed.squeezeliteCapabilities.utf8.count == 224)
    #expect(Self.reconnectPayload.count == 260)
  }

  @Test func encodesTheHandWrittenReconnectPayloadExactly() {
    let hello = Hello(
      mac: Observed.playerMAC, isReconnect: true, bytesReceived: 101_618,
      capabilities: Observed.squeezeliteCapabilities)
    #expect(hello.encoded() == Self.reconnectPayload)
  }

  @Test func fullFrameIsOpcodeLengthPayload() {
    let hello = Hello(
      mac: Observed.playerMAC, isReconnect: true, bytesReceived: 101_618,
      capabilities: Observed.squeezeliteCapabilities)
    let wire = PlayerMessage.hello(hello).frame.encoded()
    #expect(Array(wire[0..<4]) == ascii("HELO"))
    #expect(Array(wire[4..<8]) == [0x00, 0x00, 0x01, 0x04])  // 260
    #expect(Array(wire[8...]) == Self.reconnectPayload)
    #expect(wire.count == 8 + 260)
  }

  @Test func parsesTheHandWrittenPayload() throws {
    let hello = try Hello(parsing: Self.reconnectPayload)
    #expect(hello.deviceID == 12)
    #expect(hello.revision == 0)
    #expect(hello.mac == Observed.playerMAC)
    #expect(hello.uuid == [UInt8](repeating: 0, count: 16))
    #expect(hello.wlanChannelList == 0x4000)
    #expect(hello.isReconnect)
    #expect(hello.bytesReceived == 101_618)
    #expect(hello.language == [0, 0])
    #expect(hello.capabilities == Observed.squeezeliteCapabilities)
    #expect(hello.encoded() == Self.reconnectPayload)
  }

  @Test func firstHelloOfTheSessionHasNoReconnectBit() throws {
    // Message 1: id 12, rev 0, mac 00:11:22:33:44:55, uuid 0, wlan 0x0000, bytes 0, lang 00 00.
    let hello = Hello(
      mac: Observed.playerMAC, isReconnect: false, bytesReceived: 0,
      capabilities: Observed.squeezeliteCapabilities)
    let payload = hello.encoded()
    #expect(payload.count == 260)
    #expect(Array(payload[24..<36]) == [UInt8](repeating: 0, count: 12))
    #expect(!hello.isReconnect)
    #expect(try Hello(parsing: payload) == hello)
  }

  @Test func fieldOffsets() {
    let uuid = (1...16).map { UInt8($0) }
    let hello = Hello(
      mac: MACAddress(bytes: [0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff])!, uuid: uuid, isReconnect: true,
      bytesReceived: 0x0000_0002_0000_0003, language: ascii("en"), capabilities: "Model=x,flc")
    let payload = hello.encoded()
    #expect(payload[0] == 12)
    #expect(payload[1] == 0)
    #expect(Array(payload[2..<8]) == [0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff])
    #expect(Array(payload[8..<24]) == uuid)
    #expect(u16(at: 24, in: payload) == 0x4000)
    #expect(u32(at: 26, in: payload) == 2)  // high word first
    #expect(u32(at: 30, in: payload) == 3)
    #expect(Array(payload[34..<36]) == ascii("en"))
    #expect(Array(payload[36...]) == ascii("Model=x,flc"))
  }

  @Test func reconnectBitIsReadFromTheChannelListAlone() throws {
    var payload = Self.reconnectPayload
    payload[24] = 0x80  // bitmapped display only
    payload[25] = 0x05
    #expect(try !Hello(parsing: payload).isReconnect)
    payload[24] = 0xc0  // display + reconnect
    #expect(try Hello(parsing: payload).isReconnect)
    #expect(try Hello(parsing: payload).wlanChannelList == 0xc005)
  }

  @Test func shortUUIDAndLanguageArePaddedToTheFixedHeader() {
    let hello = Hello(
      mac: Observed.playerMAC, uuid: [], isReconnect: false, bytesReceived: 0, language: [],
      capabilities: "")
    let payload = hello.encoded()
    #expect(payload.count == 36)
    #expect(Array(payload[8..<24]) == [UInt8](repeating: 0, count: 16))
    #expect(Array(payload[34..<36]) == [0, 0])
  }

  @Test func headerWithoutCapabilitiesParses() throws {
    let payload = Array(Self.reconnectPayload.prefix(36))
    let hello = try Hello(parsing: payload)
    #expect(hello.capabilities == "")
    #expect(hello.bytesReceived == 101_618)
  }

  @Test func truncatedHeaderThrows() {
    #expect(throws: WireError.truncated(message: "HELO", needed: 36, available: 35)) {
      try Hello(parsing: Array(Self.reconnectPayload.prefix(35)))
    }
  }

  @Test func decodeOfEncodeIsIdentity() throws {
    let hello = Hello(
      deviceID: 12, revision: 3, mac: Observed.playerMAC, uuid: (0..<16).map { UInt8($0 * 7) },
      isReconnect: true, bytesReceived: 0x1234_5678_9abc_def0, language: ascii("en"),
      capabilities: Observed.squeezeliteCapabilities)
    #expect(try Hello(parsing: hello.encoded()) == hello)
    let frame = PlayerMessage.hello(hello).frame
    #expect(try PlayerMessage(frame: frame) == .hello(hello))
  }
}
