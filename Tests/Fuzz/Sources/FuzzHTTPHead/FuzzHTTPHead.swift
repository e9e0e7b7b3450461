import StreamFetch

/// A stream's response head as a server sends it: found or not within the limit, parsed or
/// refused, never a crash; the headers the player reads are looked up as it looks them up.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPHead(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = Array(UnsafeBufferPointer(start: data, count: size))
  guard let end = HTTPResponseHead.endOfHead(in: bytes) else { return 0 }
  precondition(end <= bytes.count, "the head ends beyond the bytes")
  guard let head = HTTPResponseHead(raw: Array(bytes[..<end])) else { return 0 }
  for name in ["content-type", "content-length", "icy-metaint", "location", "icy-name", "transfer-encoding"] {
    _ = head.value(of: name)
  }
  return 0
}
