import SlimProto
import Testing

@Suite("STAT")
struct StatusTests {
  /// Message 21: `STMs 317255 497479 2994564 3342336 0/0`, sizes 2097152 / 3528000, wired.
  static let message21: [UInt8] = bytes(
    ascii("STMs"),
    [0, 0, 0],  // num_crlf, mas_initialized, mas_mode
    [0x00, 0x20, 0x00, 0x00],  // stream buffer size 2097152
    [0x00, 0x04, 0xd7, 0x47],  // stream buffer fullness 317255
    [0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x97, 0x47],  // bytes received 497479
    [0xff, 0xff],  // signal strength: wired
    [0x00, 0x2d, 0xb1, 0x84],  // jiffies 2994564
    [0x00, 0x35, 0xd5, 0x40],  // output buffer size 3528000
    [0x00, 0x33, 0x00, 0x00],  // output buffer fullness 3342336
    [0x00, 0x00, 0x00, 0x00],  // elapsed seconds
    [0x00, 0x00],  // voltage
    [0x00, 0x00, 0x00, 0x00],  // elapsed milliseconds
    [0x00, 0x00, 0x00, 0x00],  // server timestamp
    [0x00, 0x00])  // error code

  static var message21Status: PlayerStatus {
    var status = PlayerStatus(event: .trackStarted)
    status.streamBufferSize = 2_097_152
    status.streamBufferFullness = 317_255
    status.bytesReceived = 497_479
    status.jiffies = 2_994_564
    status.outputBufferSize = 3_528_000
    status.outputBufferFullness = 3_342_336
    return status
  }

  @Test func payloadIs53Bytes() {
    #expect(Self.message21.count == 53)
    #expect(PlayerStatus.payloadLength == 53)
  }

  @Test func encodesMessage21Exactly() {
    #expect(Self.message21Status.encoded() == Self.message21)
  }

  @Test func parsesMessage21() throws {
    let status = try PlayerStatus(parsing: Self.message21)
    #expect(status == Self.message21Status)
    #expect(status.event == .trackStarted)
    #expect(status.signalStrength == 0xffff)
  }

  @Test func frameIsSTATWithLength53() throws {
    let wire = PlayerMessage.status(Self.message21Status).frame.encoded()
    #expect(wire == ascii("STAT") + [0, 0, 0, 53] + Self.message21)
    var reader = PlayerFrameReader()
    reader.append(wire)
    let frame = try #require(try reader.nextFrame())
    #expect(try PlayerMessage(frame: frame) == .status(Self.message21Status))
  }

  @Test func everyFieldSitsAtItsOffset() {
    var status = PlayerStatus(event: .heartbeat)
    status.crlfCount = 1
    status.masInitialized = 2
    status.masMode = 3
    status.streamBufferSize = 0x0a0a_0a0a
    status.streamBufferFullness = 0x0b0b_0b0b
    status.bytesReceived = 0x0000_0001_0000_0002
    status.signalStrength = 0x1234
    status.jiffies = 0x0c0c_0c0c
    status.outputBufferSize = 0x0d0d_0d0d
    status.outputBufferFullness = 0x0e0e_0e0e
    status.elapsedSeconds = 3
    status.voltage = 0x5678
    status.elapsedMilliseconds = 3516
    status.serverTimestamp = 0xdead_beef
    status.errorCode = 0x0102
    let p = status.encoded()
    #expect(p.count == 53)
    #expect(Array(p[0..<4]) == ascii("STMt"))
    #expect(Array(p[4..<7]) == [1, 2, 3])
    #expect(u32(at: 7, in: p) == 0x0a0a_0a0a)
    #expect(u32(at: 11, in: p) == 0x0b0b_0b0b)
    #expect(u32(at: 15, in: p) == 1)
    #expect(u32(at: 19, in: p) == 2)
    #expect(u16(at: 23, in: p) == 0x1234)
    #expect(u32(at: 25, in: p) == 0x0c0c_0c0c)
    #expect(u32(at: 29, in: p) == 0x0d0d_0d0d)
    #expect(u32(at: 33, in: p) == 0x0e0e_0e0e)
    #expect(u32(at: 37, in: p) == 3)
    #expect(u16(at: 41, in: p) == 0x5678)
    #expect(u32(at: 43, in: p) == 3516)
    #expect(u32(at: 47, in: p) == 0xdead_beef)
    #expect(u16(at: 51, in: p) == 0x0102)
  }

  @Test func payloadWithoutErrorCodeStillParses() throws {
    var payload = Self.message21
    payload[52] = 0x07  // would be the error code's low byte
    let status = try PlayerStatus(parsing: Array(payload.prefix(51)))
    #expect(status.errorCode == 0)
    var expected = Self.message21Status
    expected.errorCode = 0
    #expect(status == expected)
    #expect(try PlayerStatus(parsing: payload).errorCode == 7)
  }

  @Test func longer57BytePayloadParses() throws {
    let status = try PlayerStatus(parsing: Self.message21 + [1, 2, 3, 4])
    #expect(status == Self.message21Status)
  }

  @Test func payloadMissingTheServerTimestampThrows() {
    #expect(throws: WireError.truncated(message: "STAT", needed: 51, available: 50)) {
      try PlayerStatus(parsing: Array(Self.message21.prefix(50)))
    }
  }

  @Test func unknownEventThrows() {
    var payload = Self.message21
    payload[3] = UInt8(ascii: "z")
    #expect(throws: WireError.invalidField(message: "STAT", field: "event", value: 0x5354_4d7a)) {
      try PlayerStatus(parsing: payload)
    }
  }

  @Test(arguments: StatusEvent.allCases)
  func everyEventCodeRoundTrips(_ event: StatusEvent) throws {
    var status = Self.message21Status
    status.event = event
    let payload = status.encoded()
    #expect(Array(payload[0..<4]) == ascii(event.rawValue))
    #expect(try PlayerStatus(parsing: payload) == status)
  }

  @Test func heartbeatEchoesTheStrmTimestampBytes() throws {
    // strm t whose value bytes are opaque: the STMt must carry them back unchanged at offset 47.
    var strm = [UInt8](repeating: 0, count: 24)
    strm[0] = UInt8(ascii: "t")
    strm[14...17] = [0x12, 0x34, 0x56, 0x78]
    let command = try StreamCommand(parsing: strm)
    var status = PlayerStatus(event: .heartbeat)
    status.serverTimestamp = command.rawTimestamp
    #expect(Array(status.encoded()[47..<51]) == [0x12, 0x34, 0x56, 0x78])
  }
}
