/// STAT event codes. The labels follow LMS's Slimproto.pm.
public enum StatusEvent: String, Sendable, CaseIterable {
  case established = "STMa"  // legacy; not sent
  case connecting = "STMc"
  case decoderReady = "STMd"
  case connectionEstablished = "STMe"  // legacy; not sent
  case flushed = "STMf"
  case headersReceived = "STMh"  // legacy; not sent
  case bufferLoaded = "STMl"
  case notSupported = "STMn"
  case outputUnderrun = "STMo"
  case paused = "STMp"
  case resumed = "STMr"
  case trackStarted = "STMs"
  case heartbeat = "STMt"
  case underrun = "STMu"
}

/// STAT: the player's status report (53-byte payload).
public struct PlayerStatus: Equatable, Sendable {
  public static let payloadLength = 53

  public var event: StatusEvent
  public var crlfCount: UInt8 = 0
  public var masInitialized: UInt8 = 0
  public var masMode: UInt8 = 0
  public var streamBufferSize: UInt32 = 0
  public var streamBufferFullness: UInt32 = 0
  public var bytesReceived: UInt64 = 0
  /// 0xFFFF = wired.
  public var signalStrength: UInt16 = 0xffff
  /// Monotonic milliseconds, truncated to 32 bits.
  public var jiffies: UInt32 = 0
  public var outputBufferSize: UInt32 = 0
  public var outputBufferFullness: UInt32 = 0
  public var elapsedSeconds: UInt32 = 0
  public var voltage: UInt16 = 0
  public var elapsedMilliseconds: UInt32 = 0
  /// The raw value of the `strm t` being answered, else 0.
  public var serverTimestamp: UInt32 = 0
  public var errorCode: UInt16 = 0

  public init(event: StatusEvent) {
    self.event = event
  }

  public init(parsing payload: [UInt8]) throws(WireError) {
    var reader = ByteReader(payload, message: "STAT")
    let code = String(decoding: try reader.bytes(4), as: UTF8.self)
    guard let event = StatusEvent(rawValue: code) else {
      throw .invalidField(message: "STAT", field: "event", value: code.utf8.reduce(0) { $0 << 8 | UInt32($1) })
    }
    self.event = event
    crlfCount = try reader.u8()
    masInitialized = try reader.u8()
    masMode = try reader.u8()
    streamBufferSize = try reader.u32()
    streamBufferFullness = try reader.u32()
    bytesReceived = try reader.u64()
    signalStrength = try reader.u16()
    jiffies = try reader.u32()
    outputBufferSize = try reader.u32()
    outputBufferFullness = try reader.u32()
    elapsedSeconds = try reader.u32()
    voltage = try reader.u16()
    elapsedMilliseconds = try reader.u32()
    serverTimestamp = try reader.u32()
    // LMS accepts shorter payloads without the error code.
    errorCode = reader.remaining >= 2 ? try reader.u16() : 0
  }

  public func encoded() -> [UInt8] {
    var writer = ByteWriter(capacity: Self.payloadLength)
    writer.ascii(event.rawValue)
    writer.u8(crlfCount)
    writer.u8(masInitialized)
    writer.u8(masMode)
    writer.u32(streamBufferSize)
    writer.u32(streamBufferFullness)
    writer.u64(bytesReceived)
    writer.u16(signalStrength)
    writer.u32(jiffies)
    writer.u32(outputBufferSize)
    writer.u32(outputBufferFullness)
    writer.u32(elapsedSeconds)
    writer.u16(voltage)
    writer.u32(elapsedMilliseconds)
    writer.u32(serverTimestamp)
    writer.u16(errorCode)
    return writer.bytes
  }
}
