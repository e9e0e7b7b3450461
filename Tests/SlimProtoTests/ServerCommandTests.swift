import SlimProto
import Testing

@Suite("setd, aude, serv, cont, codc, body, vers, dsco, unknown")
struct ServerCommandTests {
  // MARK: setd

  @Test func nameQueryIsOneByte() throws {
    // Message 4: setd 1, id 0, no data.
    let message = try ServerMessage(frame: ServerFrame(command: "setd", payload: [0]))
    guard case .setting(let setting) = message else {
      Issue.record("expected setd, got \(message)")
      return
    }
    #expect(setting.id == 0)
    #expect(setting.setting == .playerName)
    #expect(setting.isQuery)
    #expect(setting.nameValue == nil)
    #expect(setting.encoded() == [0])
  }

  @Test func disableDACQuery() throws {
    // Message 5: setd 1, id 4.
    let setting = try SettingCommand(parsing: [4])
    #expect(setting.setting == .disableDAC)
    #expect(setting.isQuery)
    #expect(setting.nameValue == nil)
  }

  @Test func setNameWithTerminator() throws {
    let payload: [UInt8] = [0] + ascii("kitchen") + [0]
    let setting = try SettingCommand(parsing: payload)
    #expect(!setting.isQuery)
    #expect(setting.nameValue == "kitchen")
    #expect(setting.encoded() == payload)
  }

  @Test func setNameWithoutTerminator() throws {
    let setting = try SettingCommand(parsing: [0] + ascii("testplayer"))
    #expect(setting.nameValue == "testplayer")
  }

  @Test func unknownSettingIdIsKept() throws {
    let setting = try SettingCommand(parsing: [0x42, 1, 2])
    #expect(setting.id == 0x42)
    #expect(setting.setting == nil)
    #expect(setting.data == [1, 2])
    #expect(setting.nameValue == nil)
    #expect(SettingID.displaySize.rawValue == 0xfe)
  }

  @Test func emptySetdThrows() {
    #expect(throws: WireError.truncated(message: "setd", needed: 1, available: 0)) {
      try SettingCommand(parsing: [])
    }
  }

  // MARK: aude

  @Test func audioEnable() throws {
    // Message 6: spdif 1, dac 1.
    let on = try AudioEnable(parsing: [1, 1])
    #expect(on == AudioEnable(spdifEnable: true, dacEnable: true))
    #expect(on.isPoweredOn)
    #expect(on.encoded() == [1, 1])
    let off = try AudioEnable(parsing: [0, 1])
    #expect(!off.isPoweredOn)
    #expect(off.dacEnable)
    #expect(
      try ServerMessage(frame: ServerFrame(command: "aude", payload: [0, 0]))
        == .audioEnable(
          AudioEnable(spdifEnable: false, dacEnable: false)))
    #expect(throws: WireError.self) { try AudioEnable(parsing: [1]) }
  }

  // MARK: serv

  @Test func serverSwitchWithoutSyncGroup() throws {
    let payload: [UInt8] = [192, 168, 1, 10]
    let serv = try ServerSwitch(parsing: payload)
    #expect(serv.serverIP == 0xc0a8_010a)
    #expect(serv.syncGroupID == nil)
    #expect(serv.encoded() == payload)
  }

  @Test func serverSwitchWithSyncGroup() throws {
    let payload: [UInt8] = [10, 0, 0, 2] + ascii("0123456789")
    let serv = try ServerSwitch(parsing: payload)
    #expect(serv.serverIP == 0x0a00_0002)
    #expect(serv.syncGroupID == "0123456789")
    #expect(serv.encoded() == payload)
    #expect(
      try ServerMessage(frame: ServerFrame(command: "serv", payload: payload))
        == .switchServer(ServerSwitch(serverIP: 0x0a00_0002, syncGroupID: "0123456789")))
  }

  @Test func serverSwitchWithShortSyncGroupIgnoresIt() throws {
    let serv = try ServerSwitch(parsing: [10, 0, 0, 2] + ascii("12345"))
    #expect(serv.syncGroupID == nil)
  }

  @Test func truncatedServerSwitchThrows() {
    #expect(throws: WireError.truncated(message: "serv", needed: 4, available: 3)) {
      try ServerSwitch(parsing: [10, 0, 0])
    }
  }

  // MARK: cont

  @Test func continueWithMetaInterval() throws {
    let payload: [UInt8] = [0x00, 0x00, 0x20, 0x00, 0]
    let cont = try StreamContinue(parsing: payload)
    #expect(cont.metaInterval == 8192)
    #expect(!cont.loop)
    #expect(cont.guids == nil)
    #expect(cont.encoded() == payload)
  }

  @Test func continueWithLoopAndGUIDs() throws {
    let guid = (0..<16).map { UInt8($0 + 0xa0) }
    let payload: [UInt8] = [0, 0, 0, 0, 1, 0x00, 0x01] + guid
    let cont = try StreamContinue(parsing: payload)
    #expect(cont.metaInterval == 0)
    #expect(cont.loop)
    #expect(cont.guids == guid)
    #expect(cont.encoded() == payload)
    #expect(try ServerMessage(frame: ServerFrame(command: "cont", payload: payload)) == .continueStream(cont))
  }

  @Test func continueWithFewerGUIDBytesThanAnnouncedKeepsWhatArrived() throws {
    let payload: [UInt8] = [0, 0, 0, 0, 0, 0x00, 0x02] + [UInt8](repeating: 7, count: 20)
    let cont = try StreamContinue(parsing: payload)
    #expect(cont.guids?.count == 20)
  }

  @Test func truncatedContinueThrows() {
    #expect(throws: WireError.truncated(message: "cont", needed: 5, available: 4)) {
      try StreamContinue(parsing: [0, 0, 0, 0])
    }
  }

  // MARK: codc

  @Test func codecChange() throws {
    let mp3 = try CodecChange(parsing: ascii("m????"))
    #expect(mp3.format == .mp3)
    #expect(mp3.pcm == .unspecified)
    let pcm = try CodecChange(parsing: ascii("p1321"))
    #expect(pcm.format == .pcm)
    #expect(pcm.pcm.bitsPerSample == 16)
    #expect(pcm.pcm.sampleRateHz == 44100)
    #expect(pcm.pcm.channelCount == 2)
    #expect(pcm.pcm.isLittleEndian == true)
    #expect(pcm.encoded() == ascii("p1321"))
    #expect(
      try ServerMessage(frame: ServerFrame(command: "codc", payload: ascii("fo???")))
        == .codec(
          CodecChange(
            format: .flac, pcm: PCMCodes(sampleSize: 0x6f, sampleRate: 0x3f, channels: 0x3f, endianness: 0x3f))))
  }

  @Test func codecChangeWithInvalidFormatThrows() {
    #expect(throws: WireError.invalidField(message: "codc", field: "format", value: 0x78)) {
      try CodecChange(parsing: ascii("x????"))
    }
    #expect(throws: WireError.truncated(message: "codc", needed: 5, available: 4)) {
      try CodecChange(parsing: ascii("m???"))
    }
  }

  // MARK: body, vers, dsco

  @Test func bodyRequest() throws {
    let frame = ServerFrame(command: "body", payload: [0x00, 0x00, 0x10, 0x00])
    #expect(try ServerMessage(frame: frame) == .bodyRequest(length: 4096))
    #expect(ServerMessage.bodyRequest(length: 4096).frame == frame)
    #expect(throws: WireError.truncated(message: "body", needed: 4, available: 2)) {
      try ServerMessage(frame: ServerFrame(command: "body", payload: [0, 0]))
    }
  }

  @Test func version() throws {
    let frame = ServerFrame(command: "vers", payload: ascii("7.9.1"))
    #expect(try ServerMessage(frame: frame) == .version("7.9.1"))
    #expect(ServerMessage.version("7.9.1").frame == frame)
    let terminated = ServerFrame(command: "vers", payload: ascii("7.9.1") + [0, 0x41])
    #expect(try ServerMessage(frame: terminated) == .version("7.9.1"))
  }

  @Test func disconnect() throws {
    let frame = ServerFrame(command: "dsco", payload: [])
    #expect(try ServerMessage(frame: frame) == .disconnect)
    #expect(ServerMessage.disconnect.frame.encoded() == [0x00, 0x04] + ascii("dsco"))
  }

  // MARK: unknown

  @Test func unknownCommandIsKeptAndReencodesIdentically() throws {
    let payload: [UInt8] = [0x00, 0x01, 0x80, 0xff, 0x00, 0x7e]
    let wire = [0x00, UInt8(4 + payload.count)] + ascii("grfe") + payload
    var reader = ServerFrameReader()
    reader.append(wire)
    let frame = try #require(try reader.nextFrame())
    let message = try ServerMessage(frame: frame)
    #expect(message == .unknown(ServerFrame(command: "grfe", payload: payload)))
    #expect(message.frame == frame)
    #expect(message.frame.encoded() == wire)
  }
}
