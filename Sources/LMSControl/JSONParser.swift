import Support

/// Why a JSON text was refused.
public struct JSONError: Error, Equatable, CustomStringConvertible {
  public var message: String
  public var offset: Int

  public var description: String { "invalid JSON at byte \(offset): \(message)" }
}

extension JSONValue {
  /// Parses one JSON text (RFC 8259). Nesting is capped so hostile input cannot exhaust the stack.
  public init(parsing bytes: some Collection<UInt8>) throws(JSONError) {
    var parser = JSONParser(bytes: Array(bytes))
    self = try parser.parseDocument()
  }

  public init(parsing text: String) throws(JSONError) {
    try self.init(parsing: Array(text.utf8))
  }
}

private struct JSONParser {
  let bytes: [UInt8]
  var index = 0
  var depth = 0
  static let maximumDepth = 64

  init(bytes: [UInt8]) { self.bytes = bytes }

  mutating func parseDocument() throws(JSONError) -> JSONValue {
    let value = try parseValue()
    skipWhitespace()
    guard index == bytes.count else { throw fail("trailing characters") }
    return value
  }

  func fail(_ message: String) -> JSONError { JSONError(message: message, offset: index) }

  mutating func skipWhitespace() {
    while index < bytes.count,
      bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09
    {
      index += 1
    }
  }

  mutating func parseValue() throws(JSONError) -> JSONValue {
    skipWhitespace()
    guard index < bytes.count else { throw fail("unexpected end") }
    switch bytes[index] {
    case UInt8(ascii: "{"): return try parseObject()
    case UInt8(ascii: "["): return try parseArray()
    case UInt8(ascii: "\""): return .string(try parseString())
    case UInt8(ascii: "t"): try expect("true"); return .bool(true)
    case UInt8(ascii: "f"): try expect("false"); return .bool(false)
    case UInt8(ascii: "n"): try expect("null"); return .null
    default: return .number(try parseNumber())
    }
  }

  mutating func expect(_ word: String) throws(JSONError) {
    for byte in word.utf8 {
      guard index < bytes.count, bytes[index] == byte else { throw fail("unknown literal") }
      index += 1
    }
  }

  mutating func enter() throws(JSONError) {
    depth += 1
    guard depth <= Self.maximumDepth else { throw fail("nested too deeply") }
  }

  mutating func parseObject() throws(JSONError) -> JSONValue {
    try enter()
    defer { depth -= 1 }
    index += 1
    var members: [String: JSONValue] = [:]
    skipWhitespace()
    if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
      index += 1
      return .object(members)
    }
    while true {
      skipWhitespace()
      guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a key") }
      let key = try parseString()
      skipWhitespace()
      guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
      index += 1
      members[key] = try parseValue()
      skipWhitespace()
      guard index < bytes.count else { throw fail("unexpected end") }
      if bytes[index] == UInt8(ascii: ",") {
        index += 1
      } else if bytes[index] == UInt8(ascii: "}") {
        index += 1
        return .object(members)
      } else {
        throw fail("expected ',' or '}'")
      }
    }
  }

  mutating func parseArray() throws(JSONError) -> JSONValue {
    try enter()
    defer { depth -= 1 }
    index += 1
    var items: [JSONValue] = []
    skipWhitespace()
    if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
      index += 1
      return .array(items)
    }
    while true {
      items.append(try parseValue())
      skipWhitespace()
      guard index < bytes.count else { throw fail("unexpected end") }
      if bytes[index] == UInt8(ascii: ",") {
        index += 1
      } else if bytes[index] == UInt8(ascii: "]") {
        index += 1
        return .array(items)
      } else {
        throw fail("expected ',' or ']'")
      }
    }
  }

  mutating func parseString() throws(JSONError) -> String {
    index += 1
    var scalars = String.UnicodeScalarView()
    var runStart = index
    func flush(_ parser: JSONParser, upTo end: Int, into scalars: inout String.UnicodeScalarView) {
      if end > runStart {
        scalars.append(contentsOf: String(decoding: parser.bytes[runStart..<end], as: UTF8.self).unicodeScalars)
      }
    }
    while index < bytes.count {
      let byte = bytes[index]
      if byte == UInt8(ascii: "\"") {
        flush(self, upTo: index, into: &scalars)
        index += 1
        return String(scalars)
      }
      if byte < 0x20 { throw fail("control character in string") }
      if byte != UInt8(ascii: "\\") {
        index += 1
        continue
      }
      flush(self, upTo: index, into: &scalars)
      index += 1
      guard index < bytes.count else { throw fail("unexpected end") }
      let escape = bytes[index]
      index += 1
      switch escape {
      case UInt8(ascii: "\""): scalars.append("\"")
      case UInt8(ascii: "\\"): scalars.append("\\")
      case UInt8(ascii: "/"): scalars.append("/")
      case UInt8(ascii: "b"): scalars.append("\u{08}")
      case UInt8(ascii: "f"): scalars.append("\u{0C}")
      case UInt8(ascii: "n"): scalars.append("\n")
      case UInt8(ascii: "r"): scalars.append("\r")
      case UInt8(ascii: "t"): scalars.append("\t")
      case UInt8(ascii: "u"):
        var code = try parseHex4()
        if (0xD800..<0xDC00).contains(code), index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
          bytes[index + 1] == UInt8(ascii: "u")
        {
          index += 2
          let low = try parseHex4()
          if (0xDC00..<0xE000).contains(low) {
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
          } else {
            scalars.append("\u{FFFD}")
            code = low
          }
        }
        scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
      default:
        throw fail("unknown escape")
      }
      runStart = index
    }
    throw fail("unterminated string")
  }

  mutating func parseHex4() throws(JSONError) -> UInt32 {
    guard index + 4 <= bytes.count else { throw fail("unexpected end") }
    var value: UInt32 = 0
    for _ in 0..<4 {
      let byte = bytes[index]
      let digit: UInt8
      switch byte {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
      default: throw fail("bad \\u escape")
      }
      value = value << 4 | UInt32(digit)
      index += 1
    }
    return value
  }

  mutating func parseNumber() throws(JSONError) -> Double {
    let start = index
    if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
    let digitsStart = index
    while index < bytes.count, isNumberByte(bytes[index]) { index += 1 }
    guard index > digitsStart, let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)) else {
      index = start
      throw fail("unexpected character")
    }
    return value
  }

  func isNumberByte(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e")
      || byte == UInt8(ascii: "E") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
  }
}

extension JSONValue {
  /// Compact JSON text; object keys sorted so equal values encode equally.
  public var encoded: String {
    var out = ""
    write(to: &out)
    return out
  }

  private func write(to out: inout String) {
    switch self {
    case .null: out += "null"
    case .bool(let value): out += value ? "true" : "false"
    case .number(let value):
      if !value.isFinite {
        out += "null"
      } else if value == value.rounded(), abs(value) < 1e15 {
        out += String(Int(value))
      } else {
        out += String(value)
      }
    case .string(let text): Self.writeString(text, to: &out)
    case .array(let items):
      out += "["
      for (offset, item) in items.enumerated() {
        if offset > 0 { out += "," }
        item.write(to: &out)
      }
      out += "]"
    case .object(let members):
      out += "{"
      for (offset, key) in members.keys.sorted().enumerated() {
        if offset > 0 { out += "," }
        Self.writeString(key, to: &out)
        out += ":"
        members[key]!.write(to: &out)
      }
      out += "}"
    }
  }

  private static func writeString(_ text: String, to out: inout String) {
    out += "\""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\"": out += "\\\""
      case "\\": out += "\\\\"
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case _ where scalar.value < 0x20:
        out += "\\u" + Hex.string(scalar.value, width: 4)
      default: out.unicodeScalars.append(scalar)
      }
    }
    out += "\""
  }
}
