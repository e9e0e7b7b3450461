import StreamFetch

/// An Ogg stream's comments, found in bytes the input chooses: the META payloads do not depend on
/// the pieces the network delivered the stream in, and each is LMS's `Ogg` form within its bound.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOggComments(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = UnsafeBufferPointer(start: data, count: size)
  guard bytes.count >= 1 else { return 0 }
  let body = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[1...]))
  let inPieces = scanned(body, piece: Int(bytes[0]) + 1)
  let whole = scanned(body, piece: max(1, body.count))
  precondition(inPieces == whole, "depends on the pieces")
  for payload in whole {
    precondition(payload.starts(with: Array("Ogg".utf8)), "not an Ogg META")
    precondition(payload.count <= OggCommentScanner.largestPayload, "payload of \(payload.count)")
  }
  return 0
}

private func scanned(_ body: UnsafeRawBufferPointer, piece: Int) -> [[UInt8]] {
  var scanner = OggCommentScanner()
  var found: [[UInt8]] = []
  var offset = 0
  while offset < body.count {
    let end = min(body.count, offset + piece)
    found += scanner.scan(UnsafeRawBufferPointer(rebasing: body[offset..<end]))
    offset = end
  }
  return found
}
