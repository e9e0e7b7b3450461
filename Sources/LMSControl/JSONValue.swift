/// A JSON document as a value: enough for LMS's JSON-RPC and the cache's small state files,
/// without Foundation. Accessors are lenient because LMS sends numbers as strings and back.
public enum JSONValue: Equatable, Sendable {
  case null
  case bool(Bool)
  case number(Double)
  case string(String)
  case array([JSONValue])
  case object([String: JSONValue])

  public subscript(key: String) -> JSONValue? {
    if case .object(let members) = self { return members[key] }
    return nil
  }

  public subscript(index: Int) -> JSONValue? {
    if case .array(let items) = self, items.indices.contains(index) { return items[index] }
    return nil
  }

  /// A number, or a string that holds one ("12", "3.5").
  public var double: Double? {
    switch self {
    case .number(let value): value
    case .string(let text): Double(text.trimmingWhitespace)
    case .bool(let value): value ? 1 : 0
    default: nil
    }
  }

  /// An integral number or numeric string; fractions are truncated.
  public var int: Int? {
    guard let value = double, value.isFinite, abs(value) < 9.0e15 else { return nil }
    return Int(value)
  }

  /// A string, or a number written as LMS would ("1", "0.5").
  public var string: String? {
    switch self {
    case .string(let text): text
    case .number(let value): value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    default: nil
    }
  }

  /// true/false, 1/0, "1"/"0".
  public var bool: Bool? {
    switch self {
    case .bool(let value): value
    default: double.map { $0 != 0 }
    }
  }

  public var array: [JSONValue]? {
    if case .array(let items) = self { return items }
    return nil
  }

  public var object: [String: JSONValue]? {
    if case .object(let members) = self { return members }
    return nil
  }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
  ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
  public init(stringLiteral value: String) { self = .string(value) }
  public init(integerLiteral value: Int) { self = .number(Double(value)) }
  public init(floatLiteral value: Double) { self = .number(value) }
  public init(booleanLiteral value: Bool) { self = .bool(value) }
  public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
  public init(dictionaryLiteral elements: (String, JSONValue)...) {
    self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
  }
  public init(nilLiteral: ()) { self = .null }
}

extension String {
  fileprivate var trimmingWhitespace: Substring {
    let bytes = self[...]
    guard let first = bytes.firstIndex(where: { !$0.isWhitespace }),
      let last = bytes.lastIndex(where: { !$0.isWhitespace })
    else { return "" }
    return bytes[first...last]
  }
}
