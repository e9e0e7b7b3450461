import LMSControl

/// Any bytes as a JSON text (a server's reply, a control request's body): parsed or refused with a
/// typed error; a parsed value encodes to a text that parses back to the same value.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = UnsafeBufferPointer(start: data, count: size)
  guard let value = try? JSONValue(parsing: bytes) else { return 0 }
  let text = value.encoded
  let again: JSONValue
  do {
    again = try JSONValue(parsing: text)
  } catch {
    preconditionFailure("\(text) does not parse again: \(error)")
  }
  precondition(again == value, "\(text) parses to another value")
  return 0
}
