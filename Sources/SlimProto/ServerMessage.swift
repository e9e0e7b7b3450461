/// Every message the server sends to a player.
public enum ServerMessage: Equatable, Sendable {
  case stream(StreamCommand)  // strm
  case audioGain(AudioGain)  // audg
  case audioEnable(AudioEnable)  // aude
  case setting(SettingCommand)  // setd
  case switchServer(ServerSwitch)  // serv
  case version(String)  // vers
  case continueStream(StreamContinue)  // cont
  case codec(CodecChange)  // codc
  /// `body`: send up to this many bytes of the held direct-stream body in BODY frames.
  case bodyRequest(length: UInt32)
  /// `dsco`: the server refused the device; it will close the connection.
  case disconnect
  /// Anything else (display, firmware update, knob frames…): kept so it can be logged, then ignored.
  case unknown(ServerFrame)

  public init(frame: ServerFrame) throws(WireError) {
    let payload = frame.payload
    switch frame.command {
    case "strm": self = .stream(try StreamCommand(parsing: payload))
    case "audg": self = .audioGain(try AudioGain(parsing: payload))
    case "aude": self = .audioEnable(try AudioEnable(parsing: payload))
    case "setd": self = .setting(try SettingCommand(parsing: payload))
    case "serv": self = .switchServer(try ServerSwitch(parsing: payload))
    case "vers": self = .version(String(decoding: payload.prefix { $0 != 0 }, as: UTF8.self))
    case "cont": self = .continueStream(try StreamContinue(parsing: payload))
    case "codc": self = .codec(try CodecChange(parsing: payload))
    case "body":
      var reader = ByteReader(payload, message: "body")
      self = .bodyRequest(length: try reader.u32())
    case "dsco": self = .disconnect
    default: self = .unknown(frame)
    }
  }

  public var frame: ServerFrame {
    switch self {
    case .stream(let m): ServerFrame(command: "strm", payload: m.encoded())
    case .audioGain(let m): ServerFrame(command: "audg", payload: m.encoded())
    case .audioEnable(let m): ServerFrame(command: "aude", payload: m.encoded())
    case .setting(let m): ServerFrame(command: "setd", payload: m.encoded())
    case .switchServer(let m): ServerFrame(command: "serv", payload: m.encoded())
    case .version(let v): ServerFrame(command: "vers", payload: Array(v.utf8))
    case .continueStream(let m): ServerFrame(command: "cont", payload: m.encoded())
    case .codec(let m): ServerFrame(command: "codc", payload: m.encoded())
    case .bodyRequest(let length):
      ServerFrame(
        command: "body",
        payload: {
          var w = ByteWriter(); w.u32(length); return w.bytes
        }())
    case .disconnect: ServerFrame(command: "dsco", payload: [])
    case .unknown(let frame): frame
    }
  }
}
