/// Why a SlimProto frame or datagram could not be read.
public enum WireError: Error, Equatable, Sendable, CustomStringConvertible {
  /// The payload ended before a field that the message needs.
  case truncated(message: String, needed: Int, available: Int)
  /// A length field announced a frame larger than any real peer sends.
  case frameTooLarge(length: Int, limit: Int)
  /// A length field too small to hold even the frame's command.
  case frameTooShort(length: Int)
  /// The command or opcode bytes are not printable ASCII: the stream is out of step.
  case invalidCommand([UInt8])
  /// A field holds a value outside its code table.
  case invalidField(message: String, field: String, value: UInt32)

  public var description: String {
    switch self {
    case .truncated(let message, let needed, let available):
      return "\(message) truncated: needs \(needed) bytes, has \(available)"
    case .frameTooLarge(let length, let limit):
      return "frame length \(length) exceeds the limit of \(limit) bytes"
    case .frameTooShort(let length):
      return "frame length \(length) is too short for a command"
    case .invalidCommand(let bytes):
      return "invalid command bytes \(bytes.map { hex($0) }.joined(separator: " "))"
    case .invalidField(let message, let field, let value):
      return "\(message): invalid \(field) \(printable(value))"
    }
  }
}

private func hex(_ byte: UInt8) -> String {
  let digits = Array("0123456789abcdef")
  return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]])
}

private func printable(_ value: UInt32) -> String {
  if value >= 0x20 && value < 0x7f, let scalar = Unicode.Scalar(value) {
    return "'\(Character(scalar))'"
  }
  return String(value)
}
