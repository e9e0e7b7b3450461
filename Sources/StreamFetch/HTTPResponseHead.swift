/// The status line and headers of a stream's HTTP (or ICY) response, kept raw for RESP.
public struct HTTPResponseHead: Equatable, Sendable {
  /// Exactly the bytes received, up to and including the blank line.
  public var raw: [UInt8]
  public var statusCode: Int
  public var headers: [(name: String, value: String)]

  public static func == (a: HTTPResponseHead, b: HTTPResponseHead) -> Bool { a.raw == b.raw }

  /// Largest header block accepted before the response counts as broken.
  public static let maximumLength = 16 * 1024

  /// Parses a complete head (`HTTP/1.x 200 OK` or Shoutcast's `ICY 200 OK`); nil if malformed.
  public init?(raw: [UInt8]) {
    self.raw = raw
    let text = String(decoding: raw, as: UTF8.self)
    var lines = text.split(separator: "\r\n", omittingEmptySubsequences: true).makeIterator()
    guard let statusLine = lines.next() else { return nil }
    let parts = statusLine.split(separator: " ", maxSplits: 2)
    guard parts.count >= 2, parts[0].hasPrefix("HTTP/") || parts[0] == "ICY", let code = Int(parts[1]) else {
      return nil
    }
    statusCode = code
    headers = []
    while let line = lines.next() {
      guard let colon = line.firstIndex(of: ":") else { continue }
      let name = line[..<colon].trimmingSpaces()
      let value = line[line.index(after: colon)...].trimmingSpaces()
      headers.append((name, value))
    }
  }

  public func value(of name: String) -> String? {
    headers.first { $0.name.lowercased() == name.lowercased() }?.value
  }

  /// Where the head ends in `bytes`: the index just past CRLFCRLF (or LFLF), if present.
  public static func endOfHead(in bytes: [UInt8]) -> Int? {
    var index = 0
    while index + 1 < bytes.count {
      if bytes[index] == 0x0a {
        if bytes[index + 1] == 0x0a { return index + 2 }
        if index + 2 < bytes.count, bytes[index + 1] == 0x0d, bytes[index + 2] == 0x0a { return index + 3 }
      }
      index += 1
    }
    return nil
  }
}

extension Substring {
  /// Without the spaces and tabs around it (HTTP's optional whitespace).
  func trimmingSpaces() -> String {
    String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
  }
}
