/// `audg`: volume. Gains are 16.16 fixed point (65536 = 0 dB).
public struct AudioGain: Equatable, Sendable {
  /// Legacy gains on LMS's 0..128 table; unused by software players.
  public var oldLeft: UInt32
  public var oldRight: UInt32
  /// Digital volume control: false means fixed volume, so the output stays at unity gain.
  public var digitalVolumeControl: Bool
  public var preamp: UInt8
  public var left: UInt32
  public var right: UInt32
  /// Present from LMS 7.x on; absent in older servers' frames.
  public var sequenceNumber: UInt32?
  public var controllerSequenceID: [UInt8]

  public static let unity: UInt32 = 0x10000

  public init(
    oldLeft: UInt32 = 0, oldRight: UInt32 = 0, digitalVolumeControl: Bool = true, preamp: UInt8 = 255,
    left: UInt32, right: UInt32, sequenceNumber: UInt32? = nil, controllerSequenceID: [UInt8] = []
  ) {
    self.oldLeft = oldLeft
    self.oldRight = oldRight
    self.digitalVolumeControl = digitalVolumeControl
    self.preamp = preamp
    self.left = left
    self.right = right
    self.sequenceNumber = sequenceNumber
    self.controllerSequenceID = controllerSequenceID
  }

  public init(parsing payload: [UInt8]) throws(WireError) {
    var reader = ByteReader(payload, message: "audg")
    oldLeft = try reader.u32()
    oldRight = try reader.u32()
    digitalVolumeControl = try reader.u8() != 0
    preamp = try reader.u8()
    left = try reader.u32()
    right = try reader.u32()
    sequenceNumber = reader.remaining >= 4 ? try reader.u32() : nil
    controllerSequenceID = reader.rest()
  }

  public func encoded() -> [UInt8] {
    var writer = ByteWriter(capacity: 28)
    writer.u32(oldLeft)
    writer.u32(oldRight)
    writer.u8(digitalVolumeControl ? 1 : 0)
    writer.u8(preamp)
    writer.u32(left)
    writer.u32(right)
    if let sequenceNumber { writer.u32(sequenceNumber) }
    writer.append(controllerSequenceID)
    return writer.bytes
  }

  /// The gains to apply: unity when the server asks for fixed volume.
  public var effectiveGains: (left: UInt32, right: UInt32) {
    digitalVolumeControl ? (left, right) : (Self.unity, Self.unity)
  }
}

/// `aude`: output enable. LMS sends (power, power).
public struct AudioEnable: Equatable, Sendable {
  public var spdifEnable: Bool
  public var dacEnable: Bool

  public init(spdifEnable: Bool, dacEnable: Bool) {
    self.spdifEnable = spdifEnable
    self.dacEnable = dacEnable
  }

  public init(parsing payload: [UInt8]) throws(WireError) {
    var reader = ByteReader(payload, message: "aude")
    spdifEnable = try reader.u8() != 0
    dacEnable = try reader.u8() != 0
  }

  public func encoded() -> [UInt8] { [spdifEnable ? 1 : 0, dacEnable ? 1 : 0] }

  /// squeezelite and LMS treat the first byte as the power state.
  public var isPoweredOn: Bool { spdifEnable }
}

/// Player setting ids used by `setd` and `SETD`.
public enum SettingID: UInt8, Sendable, CaseIterable {
  case playerName = 0
  case digitalOutputEncoding = 1
  case wordClockOutput = 2
  case powerOffDAC = 3
  case disableDAC = 4
  case fxloopSource = 5
  case fxloopClock = 6
  case displaySize = 0xfe
}

/// `setd`: a query (no data) or an update of one player setting.
public struct SettingCommand: Equatable, Sendable {
  /// The raw id, kept so unknown settings can be logged and ignored.
  public var id: UInt8
  public var data: [UInt8]

  public init(id: UInt8, data: [UInt8] = []) {
    self.id = id
    self.data = data
  }

  public init(parsing payload: [UInt8]) throws(WireError) {
    var reader = ByteReader(payload, message: "setd")
    id = try reader.u8()
    data = reader.rest()
  }

  public func encoded() -> [UInt8] { [id] + data }

  public var setting: SettingID? { SettingID(rawValue: id) }
  public var isQuery: Bool { data.isEmpty }

  /// For a name update: the name up to its NUL terminator.
  public var nameValue: String? {
    guard setting == .playerName, !data.isEmpty else { return nil }
    let end = data.firstIndex(of: 0) ?? data.endIndex
    return String(decoding: data[..<end], as: UTF8.self)
  }
}

/// `serv`: switch to another server, optionally joining a sync group.
public struct ServerSwitch: Equatable, Sendable {
  /// IPv4 address as a number (0.0.0.1 historically meant mysqueezebox.com).
  public var serverIP: UInt32
  /// Ten ASCII digits, when present.
  public var syncGroupID: String?

  public init(serverIP: UInt32, syncGroupID: String? = nil) {
    self.serverIP = serverIP
    self.syncGroupID = syncGroupID
  }

  public init(parsing payload: [UInt8]) throws(WireError) {
    var reader = ByteReader(payload, message: "serv")
    serverIP = try reader.u32()
    // Ten ASCII digits, or no sync group: anything else would leak into the HELO capabilities.
    let rest = reader.rest().prefix(10)
    let isDigits = rest.count == 10 && rest.allSatisfy { $0 >= .ascii("0") && $0 <= .ascii("9") }
    syncGroupID = isDigits ? String(decoding: rest, as: UTF8.self) : nil
  }

  public func encoded() -> [UInt8] {
    var writer = ByteWriter(capacity: 14)
    writer.u32(serverIP)
    if let syncGroupID { writer.ascii(syncGroupID) }
    return writer.bytes
  }
}

/// `cont`: release a held direct-stream body.
public struct StreamContinue: Equatable, Sendable {
  /// ICY metadata interval in bytes; 0 = none.
  public var metaInterval: UInt32
  public var loop: Bool
  /// GUID bytes after the count, kept raw (WMA streams).
  public var guids: [UInt8]?

  public init(metaInterval: UInt32, loop: Bool = false, guids: [UInt8]? = nil) {
    self.metaInterval = metaInterval
    self.loop = loop
    self.guids = guids
  }

  public init(parsing payload: [UInt8]) throws(WireError) {
    var reader = ByteReader(payload, message: "cont")
    metaInterval = try reader.u32()
    loop = try reader.u8() != 0
    if reader.remaining >= 2 {
      let count = Int(try reader.u16())
      guids = try reader.bytes(min(count * 16, reader.remaining))
    } else {
      guids = nil
    }
  }

  public func encoded() -> [UInt8] {
    var writer = ByteWriter(capacity: 7)
    writer.u32(metaInterval)
    writer.u8(loop ? 1 : 0)
    if let guids {
      writer.u16(UInt16(guids.count / 16))
      writer.append(guids)
    }
    return writer.bytes
  }
}

/// `codc`: the format of a direct stream whose `strm s` said `?`.
public struct CodecChange: Equatable, Sendable {
  public var format: StreamCommand.Format
  public var pcm: PCMCodes

  public init(format: StreamCommand.Format, pcm: PCMCodes) {
    self.format = format
    self.pcm = pcm
  }

  public init(parsing payload: [UInt8]) throws(WireError) {
    var reader = ByteReader(payload, message: "codc")
    let code = try reader.u8()
    guard let format = StreamCommand.Format(rawValue: code) else {
      throw .invalidField(message: "codc", field: "format", value: UInt32(code))
    }
    self.format = format
    pcm = PCMCodes(
      sampleSize: try reader.u8(), sampleRate: try reader.u8(), channels: try reader.u8(),
      endianness: try reader.u8())
  }

  public func encoded() -> [UInt8] {
    [format.rawValue, pcm.sampleSize, pcm.sampleRate, pcm.channels, pcm.endianness]
  }
}
