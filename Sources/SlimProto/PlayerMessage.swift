/// DSCO reasons: why the player's HTTP stream connection ended.
public enum DisconnectReason: UInt8, Sendable, CaseIterable {
  /// Clean end of stream: the only reason LMS reads as "end of track".
  case closedNormally = 0
  case localReset = 1
  case remoteReset = 2
  case unreachable = 3
  case timeout = 4
}

/// Every message a player sends to the server.
public enum PlayerMessage: Equatable, Sendable {
  case hello(Hello)  // HELO
  case status(PlayerStatus)  // STAT
  /// RESP: the stream's raw HTTP response headers, up to and including the blank line.
  case response([UInt8])
  /// META: a raw ICY metadata block.
  case metadata([UInt8])
  case disconnected(DisconnectReason)  // DSCO
  /// SETD: a setting's value (the name is NUL-terminated).
  case setting(id: UInt8, data: [UInt8])
  /// BODY: bytes of a held direct-stream body.
  case body([UInt8])
  /// `IR  `: a remote-control code.
  case infrared(jiffies: UInt32, format: UInt8, bits: UInt8, code: UInt32)
  /// BUTN: a hardware button.
  case button(time: UInt32, button: UInt32)

  /// SETD for the player's name.
  public static func name(_ name: String) -> PlayerMessage {
    .setting(id: SettingID.playerName.rawValue, data: Array(name.utf8) + [0])
  }

  public var opcode: String {
    switch self {
    case .hello: "HELO"
    case .status: "STAT"
    case .response: "RESP"
    case .metadata: "META"
    case .disconnected: "DSCO"
    case .setting: "SETD"
    case .body: "BODY"
    case .infrared: "IR  "
    case .button: "BUTN"
    }
  }

  public var frame: PlayerFrame {
    PlayerFrame(opcode: opcode, payload: payload)
  }

  public var payload: [UInt8] {
    switch self {
    case .hello(let hello): return hello.encoded()
    case .status(let status): return status.encoded()
    case .response(let bytes), .metadata(let bytes), .body(let bytes): return bytes
    case .disconnected(let reason): return [reason.rawValue]
    case .setting(let id, let data): return [id] + data
    case .infrared(let jiffies, let format, let bits, let code):
      var writer = ByteWriter(capacity: 10)
      writer.u32(jiffies)
      writer.u8(format)
      writer.u8(bits)
      writer.u32(code)
      return writer.bytes
    case .button(let time, let button):
      var writer = ByteWriter(capacity: 8)
      writer.u32(time)
      writer.u32(button)
      return writer.bytes
    }
  }

  public init(frame: PlayerFrame) throws(WireError) {
    let payload = frame.payload
    switch frame.opcode {
    case "HELO": self = .hello(try Hello(parsing: payload))
    case "STAT": self = .status(try PlayerStatus(parsing: payload))
    case "RESP": self = .response(payload)
    case "META": self = .metadata(payload)
    case "BODY": self = .body(payload)
    case "DSCO":
      var reader = ByteReader(payload, message: "DSCO")
      let code = try reader.u8()
      guard let reason = DisconnectReason(rawValue: code) else {
        throw .invalidField(message: "DSCO", field: "reason", value: UInt32(code))
      }
      self = .disconnected(reason)
    case "SETD":
      var reader = ByteReader(payload, message: "SETD")
      self = .setting(id: try reader.u8(), data: reader.rest())
    case "IR  ":
      var reader = ByteReader(payload, message: "IR")
      self = .infrared(
        jiffies: try reader.u32(), format: try reader.u8(), bits: try reader.u8(), code: try reader.u32())
    case "BUTN":
      var reader = ByteReader(payload, message: "BUTN")
      self = .button(time: try reader.u32(), button: try reader.u32())
    default:
      throw .invalidCommand(Array(frame.opcode.utf8))
    }
  }
}
