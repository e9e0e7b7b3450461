import SlimProto

/// Random but valid messages: every value here must survive encode → parse unchanged.
extension SplitMix64 {
  mutating func element<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &self)] }

  mutating func u8() -> UInt8 { UInt8.random(in: .min ... .max, using: &self) }
  mutating func u16() -> UInt16 { UInt16.random(in: .min ... .max, using: &self) }
  mutating func u32() -> UInt32 { UInt32.random(in: .min ... .max, using: &self) }
  mutating func u64() -> UInt64 { next() }

  mutating func asciiText(upTo maximum: Int, from alphabet: String) -> String {
    let characters = Array(alphabet)
    let count = Int.random(in: 0...maximum, using: &self)
    return String((0..<count).map { _ in element(characters) })
  }

  mutating func digits(_ count: Int) -> String {
    String((0..<count).map { _ in element(Array("0123456789")) })
  }

  mutating func pcmCodes() -> PCMCodes {
    if chance(1, in: 4) { return PCMCodes(sampleSize: u8(), sampleRate: u8(), channels: u8(), endianness: u8()) }
    return PCMCodes(
      sampleSize: element(Array("0123?o".utf8)), sampleRate: element(Array("0123456789:;<=>?".utf8)),
      channels: element(Array("12?".utf8)), endianness: element(Array("01?".utf8)))
  }

  mutating func streamCommand() -> StreamCommand {
    StreamCommand(
      command: element(StreamCommand.Command.allCases), autostart: element(StreamCommand.Autostart.allCases),
      format: element(StreamCommand.Format.allCases), pcm: pcmCodes(), threshold: u8(), spdifEnable: u8(),
      transitionPeriod: u8(), transitionType: element(StreamCommand.TransitionType.allCases),
      flags: StreamFlags(rawValue: u8()), outputThreshold: u8(), slaves: u8(), value: u32(), serverPort: u16(),
      serverIP: u32(), request: bytes(upTo: 300))
  }

  mutating func audioGain() -> AudioGain {
    let sequence: UInt32? = chance(1, in: 3) ? nil : u32()
    return AudioGain(
      oldLeft: u32(), oldRight: u32(), digitalVolumeControl: chance(1, in: 2), preamp: u8(), left: u32(),
      right: u32(), sequenceNumber: sequence,
      // Without a sequence number nothing can follow (it would be read as one).
      controllerSequenceID: sequence == nil ? [] : bytes(upTo: 6))
  }

  mutating func serverMessage() -> ServerMessage {
    switch Int.random(in: 0..<11, using: &self) {
    case 0, 1: return .stream(streamCommand())
    case 2: return .audioGain(audioGain())
    case 3: return .audioEnable(AudioEnable(spdifEnable: chance(1, in: 2), dacEnable: chance(1, in: 2)))
    case 4: return .setting(SettingCommand(id: u8(), data: bytes(upTo: 20)))
    case 5: return .switchServer(ServerSwitch(serverIP: u32(), syncGroupID: chance(1, in: 2) ? digits(10) : nil))
    case 6: return .version(asciiText(upTo: 12, from: "0123456789.abcdefTRUNK -"))
    case 7:
      let guids: [UInt8]? = chance(1, in: 2) ? nil : bytes(16 * Int.random(in: 0...3, using: &self))
      return .continueStream(StreamContinue(metaInterval: u32(), loop: chance(1, in: 2), guids: guids))
    case 8:
      return .codec(
        CodecChange(format: element(StreamCommand.Format.allCases), pcm: pcmCodes()))
    case 9: return chance(1, in: 2) ? .bodyRequest(length: u32()) : .disconnect
    default:
      let command = element(["grfe", "grfb", "grfd", "visu", "vfdc", "i2cc", "knoa", "ureq", "updn", "ledc"])
      return .unknown(ServerFrame(command: command, payload: bytes(upTo: 100)))
    }
  }

  mutating func hello() -> Hello {
    var hello = Hello(
      deviceID: u8(), revision: u8(), mac: MACAddress(bytes: bytes(6))!, uuid: bytes(16),
      isReconnect: false, bytesReceived: u64(), language: bytes(2),
      capabilities: asciiText(upTo: 250, from: "abcdefghijklmnopqrstuvwxyzABCDEFXYZ0123456789=,._-"))
    hello.wlanChannelList = u16()
    return hello
  }

  mutating func status() -> PlayerStatus {
    var status = PlayerStatus(event: element(StatusEvent.allCases))
    status.crlfCount = u8()
    status.masInitialized = u8()
    status.masMode = u8()
    status.streamBufferSize = u32()
    status.streamBufferFullness = u32()
    status.bytesReceived = u64()
    status.signalStrength = u16()
    status.jiffies = u32()
    status.outputBufferSize = u32()
    status.outputBufferFullness = u32()
    status.elapsedSeconds = u32()
    status.voltage = u16()
    status.elapsedMilliseconds = u32()
    status.serverTimestamp = u32()
    status.errorCode = u16()
    return status
  }

  mutating func playerMessage() -> PlayerMessage {
    switch Int.random(in: 0..<9, using: &self) {
    case 0, 1: return .hello(hello())
    case 2, 3: return .status(status())
    case 4: return .response(bytes(upTo: 200))
    case 5: return .metadata(bytes(upTo: 100))
    case 6: return .disconnected(element(DisconnectReason.allCases))
    case 7: return chance(1, in: 2) ? .setting(id: u8(), data: bytes(upTo: 30)) : .body(bytes(upTo: 200))
    default:
      return chance(1, in: 2)
        ? .infrared(jiffies: u32(), format: u8(), bits: u8(), code: u32())
        : .button(time: u32(), button: u32())
    }
  }

  /// Cuts `bytes` into consecutive chunks of random sizes (1...maximumChunk).
  mutating func chunks(of bytes: [UInt8], maximumChunk: Int) -> [ArraySlice<UInt8>] {
    var result: [ArraySlice<UInt8>] = []
    var offset = 0
    while offset < bytes.count {
      let end = min(bytes.count, offset + Int.random(in: 1...maximumChunk, using: &self))
      result.append(bytes[offset..<end])
      offset = end
    }
    return result
  }
}
