import LMSControl

/// A JSON document holding one array, written one item a line (`head`, the items each on a line
/// of their own, `tail`), so that reading it back never builds the whole document: thousands of
/// small values alive at once would leave the heap larger than an idle player needs. The files
/// stay plain JSON for anyone who reads them.
struct JSONLines {
  /// The text before the array's first item, e.g. `{"version":2,"entries":[`.
  let head: String
  /// The text after its last item, e.g. `]}`.
  let tail: String

  func document(_ items: [String]) -> [UInt8] {
    var bytes = Array((head + "\n").utf8)
    for (number, item) in items.enumerated() {
      if number > 0 { bytes += Array(",\n".utf8) }
      bytes += Array(item.utf8)
    }
    bytes += Array(("\n" + tail + "\n").utf8)
    return bytes
  }

  /// Each item of a document laid out as `document` writes it; nil (nothing read) when `bytes`
  /// has another layout, which the caller then parses whole.
  func forEachItem(in bytes: [UInt8], _ body: (JSONValue) -> Void) throws(JSONError) -> Bool? {
    let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
    guard lines.count >= 3, lines.first!.elementsEqual(head.utf8), lines.last!.isEmpty,
      lines[lines.count - 2].elementsEqual(tail.utf8)
    else { return nil }
    for line in lines.dropFirst().dropLast(2) where !line.isEmpty {
      body(try JSONValue(parsing: line.last == UInt8(ascii: ",") ? line.dropLast() : line))
    }
    return true
  }
}
