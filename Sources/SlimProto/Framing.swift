/// One frame from the server: `length` (u16, counts command + payload), `command[4]`, payload.
public struct ServerFrame: Equatable, Sendable {
  public var command: String
  public var payload: [UInt8]

  public init(command: String, payload: [UInt8]) {
    self.command = command
    self.payload = payload
  }

  /// The frame as it travels on the wire.
  public func encoded() -> [UInt8] {
    var writer = ByteWriter(capacity: 6 + payload.count)
    writer.u16(UInt16(truncatingIfNeeded: 4 + payload.count))
    writer.ascii(command)
    writer.append(payload)
    return writer.bytes
  }
}

/// One frame from the player: `opcode[4]`, `length` (u32, counts the payload only), payload.
public struct PlayerFrame: Equatable, Sendable {
  public var opcode: String
  public var payload: [UInt8]

  public init(opcode: String, payload: [UInt8]) {
    self.opcode = opcode
    self.payload = payload
  }

  public func encoded() -> [UInt8] {
    var writer = ByteWriter(capacity: 8 + payload.count)
    writer.ascii(opcode)
    writer.u32(UInt32(truncatingIfNeeded: payload.count))
    writer.append(payload)
    return writer.bytes
  }
}

/// Frame size limits. squeezelite treats a server frame over 4096 bytes as fatal; the largest
/// real frames (a `strm s` carrying a long direct-stream request) stay well below 8 KiB.
public enum FrameLimits {
  public static let maximumServerFrame = 8192
  public static let maximumPlayerFrame = 65536
}

/// Splits a TCP byte stream from the server into frames, whatever the segment boundaries.
///
/// After an error the reader is out of step with the peer; the connection must be dropped.
public struct ServerFrameReader: Sendable {
  private var pending = ByteQueue()

  public init() {}

  public mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
    pending.append(bytes)
  }

  /// The next complete frame, or nil until more bytes arrive.
  public mutating func nextFrame() throws(WireError) -> ServerFrame? {
    guard pending.count >= 2 else { return nil }
    let length = Int(pending[0]) << 8 | Int(pending[1])
    guard length >= 4 else { throw .frameTooShort(length: length) }
    guard length <= FrameLimits.maximumServerFrame else {
      throw .frameTooLarge(length: length, limit: FrameLimits.maximumServerFrame)
    }
    if pending.count >= 6 {
      let command = pending.peek(from: 2, count: 4)
      guard command.allSatisfy(isCommandByte) else { throw .invalidCommand(command) }
    }
    guard pending.count >= 2 + length else { return nil }
    let frame = pending.consume(2 + length)
    return ServerFrame(command: String(decoding: frame[2..<6], as: UTF8.self), payload: Array(frame[6...]))
  }

  /// Bytes received but not yet part of a complete frame.
  public var bufferedByteCount: Int { pending.count }
}

/// Splits a byte stream from a player into frames (used by tests and traffic tools).
public struct PlayerFrameReader: Sendable {
  private var pending = ByteQueue()

  public init() {}

  public mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
    pending.append(bytes)
  }

  public mutating func nextFrame() throws(WireError) -> PlayerFrame? {
    guard pending.count >= 8 else { return nil }
    let opcode = pending.peek(from: 0, count: 4)
    guard opcode.allSatisfy(isOpcodeByte) else { throw .invalidCommand(opcode) }
    let length = pending.peek(from: 4, count: 4).reduce(0) { $0 << 8 | Int($1) }
    guard length <= FrameLimits.maximumPlayerFrame else {
      throw .frameTooLarge(length: length, limit: FrameLimits.maximumPlayerFrame)
    }
    guard pending.count >= 8 + length else { return nil }
    let frame = pending.consume(8 + length)
    return PlayerFrame(opcode: String(decoding: frame[0..<4], as: UTF8.self), payload: Array(frame[8...]))
  }
}

/// Server commands are lower-case ASCII (`strm`, `grfe`); digits and spaces appear in some.
private func isCommandByte(_ byte: UInt8) -> Bool {
  (byte >= .ascii("a") && byte <= .ascii("z")) || (byte >= .ascii("0") && byte <= .ascii("9"))
    || byte == .ascii(" ")
}

/// Player opcodes are upper-case ASCII, space-padded (`IR  `) or with punctuation (`BYE!`).
private func isOpcodeByte(_ byte: UInt8) -> Bool {
  byte >= 0x20 && byte < 0x7f
}

/// A growable byte FIFO that compacts lazily, so a stream of small frames costs no copying per frame.
struct ByteQueue: Sendable {
  private var storage: [UInt8] = []
  private var head = 0

  var count: Int { storage.count - head }

  subscript(index: Int) -> UInt8 { storage[head + index] }

  func peek(from offset: Int, count: Int) -> [UInt8] {
    Array(storage[(head + offset)..<(head + offset + count)])
  }

  mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
    if head > 0 && head >= storage.count / 2 {
      storage.removeFirst(head)
      head = 0
    }
    storage.append(contentsOf: bytes)
  }

  mutating func consume(_ count: Int) -> [UInt8] {
    defer { head += count }
    return Array(storage[head..<(head + count)])
  }
}
