import SlimProto
import Testing

@Suite("Player messages")
struct PlayerMessageTests {
  @Test func disconnectReason() throws {
    // Message 23: DSCO 1, reason 0.
    let message = PlayerMessage.disconnected(.closedNormally)
    #expect(message.frame.encoded() == ascii("DSCO") + [0, 0, 0, 1, 0])
    #expect(try PlayerMessage(frame: PlayerFrame(opcode: "DSCO", payload: [4])) == .disconnected(.timeout))
    #expect(throws: WireError.invalidField(message: "DSCO", field: "reason", value: 5)) {
      try PlayerMessage(frame: PlayerFrame(opcode: "DSCO", payload: [5]))
    }
    #expect(throws: WireError.truncated(message: "DSCO", needed: 1, available: 0)) {
      try PlayerMessage(frame: PlayerFrame(opcode: "DSCO", payload: []))
    }
  }

  @Test func nameIsNulTerminated() throws {
    // Message 10: SETD 12, id 0, 'testplayer'.
    let message = PlayerMessage.name("testplayer")
    let expected = ascii("SETD") + [0, 0, 0, 12] + [0] + ascii("testplayer") + [0]
    #expect(message.frame.encoded() == expected)
    #expect(message == .setting(id: 0, data: ascii("testplayer") + [0]))
    #expect(try PlayerMessage(frame: message.frame) == message)
  }

  @Test func responseCarriesRawHeaders() throws {
    // Message 20: RESP 113.
    let headers = ascii(Observed.httpResponse)
    #expect(headers.count == 113)
    let wire = PlayerMessage.response(headers).frame.encoded()
    #expect(Array(wire[0..<8]) == ascii("RESP") + [0, 0, 0, 113])
    #expect(Array(wire[8...]) == headers)
    #expect(try PlayerMessage(frame: PlayerFrame(opcode: "RESP", payload: headers)) == .response(headers))
  }

  @Test func metadataAndBodyAreRaw() throws {
    let icy = ascii("StreamTitle='Artist - Title';") + [0, 0, 0]
    #expect(PlayerMessage.metadata(icy).frame == PlayerFrame(opcode: "META", payload: icy))
    #expect(try PlayerMessage(frame: PlayerFrame(opcode: "META", payload: icy)) == .metadata(icy))
    let body = ascii("[playlist]\nFile1=http://x/\n")
    #expect(PlayerMessage.body(body).frame == PlayerFrame(opcode: "BODY", payload: body))
    #expect(try PlayerMessage(frame: PlayerFrame(opcode: "BODY", payload: body)) == .body(body))
  }

  @Test func infraredIsTenBytes() throws {
    let message = PlayerMessage.infrared(jiffies: 0x0102_0304, format: 0, bits: 0, code: 0x7689_807f)
    let payload: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0, 0, 0x76, 0x89, 0x80, 0x7f]
    #expect(message.opcode == "IR  ")
    #expect(message.payload == payload)
    #expect(message.frame.encoded() == ascii("IR  ") + [0, 0, 0, 10] + payload)
    #expect(try PlayerMessage(frame: message.frame) == message)
    #expect(throws: WireError.self) {
      try PlayerMessage(frame: PlayerFrame(opcode: "IR  ", payload: Array(payload.prefix(9))))
    }
  }

  @Test func button() throws {
    let message = PlayerMessage.button(time: 1000, button: 0x0001_0002)
    #expect(message.frame.encoded() == ascii("BUTN") + [0, 0, 0, 8] + be32(1000) + be32(0x0001_0002))
    #expect(try PlayerMessage(frame: message.frame) == message)
  }

  @Test func unknownOpcodeThrows() {
    #expect(throws: WireError.invalidCommand(ascii("BYE!"))) {
      try PlayerMessage(frame: PlayerFrame(opcode: "BYE!", payload: []))
    }
  }

  @Test func readerRoundTripsAMixedSession() throws {
    var status = PlayerStatus(event: .flushed)
    status.jiffies = 2_993_854
    status.streamBufferSize = 2_097_152
    status.outputBufferSize = 3_528_000
    let messages: [PlayerMessage] = [
      .hello(
        Hello(
          mac: Observed.playerMAC, isReconnect: false, bytesReceived: 0,
          capabilities: Observed.squeezeliteCapabilities)),
      .status(status),
      .name("testplayer"),
      .response(ascii(Observed.httpResponse)),
      .disconnected(.closedNormally),
      .metadata([1, 2, 3]),
      .body([]),
      .infrared(jiffies: 1, format: 0, bits: 0, code: 2),
      .button(time: 3, button: 4),
    ]
    let wire = messages.flatMap { $0.frame.encoded() }
    for chunkSize in [1, 2, 7, 61, wire.count] {
      var reader = PlayerFrameReader()
      var frames: [PlayerFrame] = []
      var offset = 0
      while offset < wire.count {
        let end = min(wire.count, offset + chunkSize)
        reader.append(wire[offset..<end])
        offset = end
        frames += try drainFrames(&reader)
      }
      #expect(try frames.map { try PlayerMessage(frame: $0) } == messages, "chunk size \(chunkSize)")
    }
  }

  @Test func playerReaderWaitsForTheWholeFrame() throws {
    let wire = PlayerMessage.disconnected(.remoteReset).frame.encoded()
    var reader = PlayerFrameReader()
    reader.append(wire.prefix(8))
    #expect(try reader.nextFrame() == nil)
    reader.append(wire.suffix(1))
    #expect(try reader.nextFrame() == PlayerFrame(opcode: "DSCO", payload: [2]))
    #expect(try reader.nextFrame() == nil)
  }

  @Test func playerReaderRejectsOversizedAndUnprintableFrames() {
    var large = PlayerFrameReader()
    large.append(ascii("STAT") + be32(65537))
    #expect(throws: WireError.frameTooLarge(length: 65537, limit: 65536)) { try large.nextFrame() }

    var garbage = PlayerFrameReader()
    garbage.append([0x00, 0x53, 0x54, 0x41, 0, 0, 0, 0])
    #expect(throws: WireError.invalidCommand([0x00, 0x53, 0x54, 0x41])) { try garbage.nextFrame() }
  }
}
