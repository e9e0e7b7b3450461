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

  /// Most strings have no escape: they are decoded straight from the input. Escaped ones are
  /// rebuilt as UTF-8 bytes and decoded once (a scalar at a time cost more than the request).
  mutating func parseString() throws(JSONError) -> String {
    index += 1
    let start = index
    while index < bytes.count {
      let byte = bytes[index]
      if byte == UInt8(ascii: "\"") {
        index += 1
        return decodeUTF8(start..<index - 1)
      }
      if byte < 0x20 { throw fail("control character in string") }
      if byte == UInt8(ascii: "\\") { return try parseEscapedString(from: start) }
      index += 1
    }
    throw fail("unterminated string")
  }

  func decodeUTF8(_ range: Range<Int>) -> String {
    bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[range]), as: UTF8.self) }
  }

  /// The rest of a string that has an escape at `index`; `start` is its first byte.
  mutating func parseEscapedString(from start: Int) throws(JSONError) -> String {
    var utf8 = Array(bytes[start..<index])
    while index < bytes.count {
      let byte = bytes[index]
      index += 1
      if byte == UInt8(ascii: "\"") { return String(decoding: utf8, as: UTF8.self) }
      if byte < 0x20 {
        index -= 1
        throw fail("control character in string")
      }
      guard byte == UInt8(ascii: "\\") else {
        utf8.append(byte)
        continue
      }
      guard index < bytes.count else { throw fail("unexpected end") }
      let escape = bytes[index]
      index += 1
      switch escape {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
      case UInt8(ascii: "b"): utf8.append(0x08)
      case UInt8(ascii: "f"): utf8.append(0x0C)
      case UInt8(ascii: "n"): utf8.append(0x0A)
      case UInt8(ascii: "r"): utf8.append(0x0D)
      case UInt8(ascii: "t"): utf8.append(0x09)
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
            utf8.append(contentsOf: Self.replacementCharacter)
            code = low
          }
        }
        if let scalar = Unicode.Scalar(code) {
          utf8.append(contentsOf: UTF8.encode(scalar)!)
        } else {
          utf8.append(contentsOf: Self.replacementCharacter)
        }
      default:
        throw fail("unknown escape")
      }
    }
    throw fail("unterminated string")
  }

  static let replacementCharacter: [UInt8] = [0xEF, 0xBF, 0xBD]

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
    // Whole numbers of up to 15 digits (indexes, counts, ids) are exact as Double and need no
    // text conversion.
    var whole: Int64 = 0
    while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
      whole = whole &* 10 &+ Int64(bytes[index] &- UInt8(ascii: "0"))
      index += 1
    }
    let digits = index - digitsStart
    if digits > 0, digits <= 15, index == bytes.count || !isNumberByte(bytes[index]) {
      return bytes[start] == UInt8(ascii: "-") ? -Double(whole) : Double(whole)
    }
    while index < bytes.count, isNumberByte(bytes[index]) { index += 1 }
    guard index > digitsStart, let value = Double(decodeUTF8(start..<index)) else {
      index = start
      throw fail("unexpected character")
    }
    // 2E999 reads as infinity, which no JSON text can say: refused, as too large.
    guard value.isFinite else {
      index = start
      throw fail("number out of range")
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
    // Most text needs no escape and goes in whole.
    if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
      out += text
      out += "\""
      return
    }
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
