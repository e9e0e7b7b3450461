/// Lower-case hexadecimal text of a fixed width, as MAC addresses, cache names and JSON's
/// `\u` escapes spell it.
public enum Hex {
  public static func string<Value: BinaryInteger>(_ value: Value, width: Int) -> String {
    let digits = String(value, radix: 16)
    return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
  }
}
