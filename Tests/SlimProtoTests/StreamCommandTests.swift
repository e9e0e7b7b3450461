import SlimProto
import Testing

@Suite("strm")
struct StreamCommandTests {
  /// Message 16: `s auto=1 fmt=f thr=255 trans=10/'0' flags=0 outthr=0 port=9000 ip=0` + request.
  static let message16: [UInt8] = bytes(
    ascii("s1f????"),  // command, autostart, format, pcm size/rate/channels/endianness
    [255],  // threshold (KB, binary)
    ascii("0"),  // spdif_enable (ASCII)
    [10],  // transition period (binary seconds)
    ascii("0"),  // transition type (ASCII)
    [0, 0, 0],  // flags, output threshold, slaves
    [0, 0, 0, 0],  // replay gain
    [0x23, 0x28],  // port 9000
    [0, 0, 0, 0],  // server ip 0 = the SlimProto server
    ascii(Observed.streamRequest))

  /// LMS's non-`s` strm (e.g. message 2, `strm q`): autostart '0', format 'm', zeros elsewhere.
  static func lmsControl(_ command: Character, value: [UInt8] = [0, 0, 0, 0]) -> [UInt8] {
    var payload = [UInt8](repeating: 0, count: 24)
    payload[0] = UInt8(ascii: command.unicodeScalars.first!)
    payload[1] = UInt8(ascii: "0")
    payload[2] = UInt8(ascii: "m")
    payload[14..<18] = value[...]
    return payload
  }

  @Test func message16IsA77BytePayload() {
    #expect(Self.message16.count == 77)
    #expect(Observed.streamRequest.utf8.count == 53)
  }

  @Test func parsesMessage16() throws {
    let strm = try StreamCommand(parsing: Self.message16)
    #expect(strm.command == .start)
    #expect(strm.autostart == .automatic)
    #expect(strm.format == .flac)
    #expect(strm.pcm == .unspecified)
    #expect(strm.threshold == 255)
    #expect(strm.spdifEnable == UInt8(ascii: "0"))
    #expect(strm.transitionPeriod == 10)
    #expect(strm.transitionType == .none)
    #expect(strm.flags == [])
    #expect(strm.outputThreshold == 0)
    #expect(strm.slaves == 0)
    #expect(strm.value == 0)
    #expect(strm.serverPort == 9000)
    #expect(strm.serverIP == 0)
    #expect(strm.request == ascii(Observed.streamRequest))
  }

  @Test func encodesMessage16Exactly() {
    let strm = StreamCommand(
      command: .start, autostart: .automatic, format: .flac, pcm: .unspecified, threshold: 255,
      spdifEnable: UInt8(ascii: "0"), transitionPeriod: 10, transitionType: .none, flags: [],
      outputThreshold: 0, slaves: 0, value: 0, serverPort: 9000, serverIP: 0,
      request: ascii(Observed.streamRequest))
    #expect(strm.encoded() == Self.message16)
  }

  @Test func serverFrameWireForm() throws {
    let strm = try StreamCommand(parsing: Self.message16)
    let wire = ServerMessage.stream(strm).frame.encoded()
    #expect(Array(wire[0..<2]) == [0x00, 81])  // 4 + 77: the length counts the command
    #expect(Array(wire[2..<6]) == ascii("strm"))
    #expect(Array(wire[6...]) == Self.message16)

    var reader = ServerFrameReader()
    reader.append(wire)
    let frame = try #require(try reader.nextFrame())
    #expect(frame == ServerFrame(command: "strm", payload: Self.message16))
    #expect(try ServerMessage(frame: frame) == .stream(strm))
  }

  @Test func message53CarriesAnOutputThreshold() throws {
    var payload = Self.message16
    payload[12] = 20
    let strm = try StreamCommand(parsing: payload)
    #expect(strm.outputThreshold == 20)
    #expect(strm.encoded() == payload)
  }

  @Test func observedStopParses() throws {
    let payload = Self.lmsControl("q")
    let wire = ServerFrame(command: "strm", payload: payload).encoded()
    #expect(Array(wire[0..<2]) == [0x00, 28])
    let strm = try StreamCommand(parsing: payload)
    #expect(strm.command == .stop)
    #expect(strm.autostart == .manual)
    #expect(strm.format == .mp3)
    #expect(strm.request.isEmpty)
  }

  @Test func statusValueBytesAreKeptRaw() throws {
    let strm = try StreamCommand(parsing: Self.lmsControl("t", value: [0xde, 0xad, 0xbe, 0xef]))
    #expect(strm.command == .status)
    #expect(strm.rawTimestamp == 0xdead_beef)
    #expect(Array(strm.encoded()[14..<18]) == [0xde, 0xad, 0xbe, 0xef])
    // LMS 7.x sends 0.
    #expect(try StreamCommand(parsing: Self.lmsControl("t")).rawTimestamp == 0)
  }

  @Test func pauseCarriesAnIntervalInMilliseconds() throws {
    let plain = try StreamCommand(parsing: Self.lmsControl("p"))
    #expect(plain.command == .pause)
    #expect(plain.value == 0)
    let interval = try StreamCommand(parsing: Self.lmsControl("p", value: be32(500)))
    #expect(interval.value == 500)
  }

  @Test func unpauseCarriesJiffies() throws {
    let now = try StreamCommand(parsing: Self.lmsControl("u"))
    #expect(now.command == .unpause)
    #expect(now.value == 0)
    let at = try StreamCommand(parsing: Self.lmsControl("u", value: be32(3_003_585)))
    #expect(at.value == 3_003_585)
  }

  @Test func skipAheadCarriesMilliseconds() throws {
    let strm = try StreamCommand(parsing: Self.lmsControl("a", value: be32(250)))
    #expect(strm.command == .skipAhead)
    #expect(strm.value == 250)
  }

  @Test func flushParses() throws {
    #expect(try StreamCommand(parsing: Self.lmsControl("f")).command == .flush)
  }

  @Test func nonStartCommandToleratesJunkStreamFields() throws {
    var payload = Self.lmsControl("q")
    payload[1] = 0xff  // autostart
    payload[2] = 0x00  // format
    payload[10] = 0x7e  // transition type
    let strm = try StreamCommand(parsing: payload)
    #expect(strm.command == .stop)
    #expect(strm.autostart == .manual)
    #expect(strm.format == .unknown)
    #expect(strm.transitionType == .none)
  }

  @Test func startWithInvalidFormatThrows() {
    var payload = Self.message16
    payload[2] = UInt8(ascii: "x")
    #expect(throws: WireError.invalidField(message: "strm", field: "format", value: 0x78)) {
      try StreamCommand(parsing: payload)
    }
  }

  @Test func startWithInvalidAutostartThrows() {
    var payload = Self.message16
    payload[1] = UInt8(ascii: "9")
    #expect(throws: WireError.invalidField(message: "strm", field: "autostart", value: 0x39)) {
      try StreamCommand(parsing: payload)
    }
  }

  @Test func startWithInvalidTransitionTypeThrows() {
    var payload = Self.message16
    payload[10] = 0
    #expect(throws: WireError.invalidField(message: "strm", field: "transition type", value: 0)) {
      try StreamCommand(parsing: payload)
    }
  }

  @Test func unknownCommandThrows() {
    #expect(throws: WireError.invalidField(message: "strm", field: "command", value: 0x7a)) {
      try StreamCommand(parsing: Self.lmsControl("z"))
    }
  }

  @Test func truncatedHeaderThrows() {
    #expect(throws: WireError.truncated(message: "strm", needed: 24, available: 23)) {
      try StreamCommand(parsing: Array(Self.lmsControl("q").prefix(23)))
    }
  }

  @Test func flagBits() throws {
    var payload = Self.message16
    payload[11] = 0x41
    let strm = try StreamCommand(parsing: payload)
    #expect(strm.flags.contains(.noRestartDecoder))
    #expect(strm.flags.contains(.invertLeft))
    #expect(!strm.flags.contains(.invertRight))
    #expect(!strm.flags.contains(.tls))
    #expect(StreamFlags.tls.rawValue == 0x20)
    #expect(StreamFlags.loopForever.rawValue == 0x80)
    #expect(StreamFlags([.leftOnly, .rightOnly]).rawValue == 0x0c)
  }

  @Test func directStreamAutostartCodes() throws {
    var payload = Self.message16
    payload[1] = UInt8(ascii: "3")
    payload[2] = UInt8(ascii: "?")
    let strm = try StreamCommand(parsing: payload)
    #expect(strm.autostart == .directAutomatic)
    #expect(strm.autostart.isDirect)
    #expect(strm.autostart.startsAutomatically)
    #expect(strm.format == .unknown)
    #expect(StreamCommand.Autostart.manual.isDirect == false)
    #expect(StreamCommand.Autostart.manual.startsAutomatically == false)
    #expect(StreamCommand.Autostart.directManual.isDirect)
    #expect(!StreamCommand.Autostart.directManual.startsAutomatically)
    #expect(StreamCommand.Autostart.automatic.startsAutomatically)
  }

  @Test(arguments: StreamCommand.Format.allCases)
  func everyFormatRoundTrips(_ format: StreamCommand.Format) throws {
    var payload = Self.message16
    payload[2] = format.rawValue
    let strm = try StreamCommand(parsing: payload)
    #expect(strm.format == format)
    #expect(strm.encoded() == payload)
  }

  @Test func formatCodesAreTheDocumentedLetters() {
    let letters = StreamCommand.Format.allCases.map { Character(Unicode.Scalar($0.rawValue)) }
    #expect(String(letters) == "pfmoualwdsn?")
  }

  /// LocalPlayer (squeezelite's slimproto.c: 127.0.0.1 and 3483): the request is a file name.
  @Test func aStreamFrom127001Port3483NamesALocalFile() throws {
    var payload = Self.message16[..<StreamCommand.headerLength].map { $0 }
    payload[18..<20] = [0x0D, 0x9B][...]  // port 3483
    payload[20..<24] = [127, 0, 0, 1][...]
    let local = try StreamCommand(parsing: payload + ascii("/music/a b.flac"))
    #expect(local.localFilePath == "/music/a b.flac")
    // Any other address or port is a network stream, as is the server's own (IP 0) on 3483.
    #expect(try StreamCommand(parsing: Self.message16).localFilePath == nil)
    var otherPort = payload
    otherPort[18..<20] = [0x23, 0x28][...]
    #expect(try StreamCommand(parsing: otherPort + ascii("/a.flac")).localFilePath == nil)
    var serverItself = payload
    serverItself[20..<24] = [0, 0, 0, 0][...]
    #expect(try StreamCommand(parsing: serverItself + ascii("/a.flac")).localFilePath == nil)
    // Without a name there is nothing to open.
    #expect(try StreamCommand(parsing: payload).localFilePath == nil)
  }

  /// https: the TLS flag (aioslimproto, squeezelite's own LMS plugins) or port 443 (what LMS 7.9
  /// sends a `CanHTTPS` player, without the flag).
  @Test func anHTTPSStreamIsToldByItsFlagOrItsPort() throws {
    var payload = Self.message16
    payload[11] = StreamFlags.tls.rawValue
    #expect(try StreamCommand(parsing: payload).usesTLS)
    payload[11] = 0
    #expect(try !StreamCommand(parsing: payload).usesTLS)
    payload[18..<20] = [0x01, 0xBB][...]  // port 443
    #expect(try StreamCommand(parsing: payload).usesTLS)
    payload[18..<20] = [0x20, 0xFB][...]  // port 8443
    #expect(try !StreamCommand(parsing: payload).usesTLS)
  }
}
