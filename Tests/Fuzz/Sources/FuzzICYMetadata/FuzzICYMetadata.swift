import StreamFetch

/// A Shoutcast body at an interval the input chooses: metadata blocks are whole (16 × n bytes),
/// and what comes out does not depend on the pieces the network delivered it in.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzICYMetadata(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = UnsafeBufferPointer(start: data, count: size)
  guard bytes.count >= 3 else { return 0 }
  let interval = Int(bytes[0]) << 8 | Int(bytes[1]) + 1
  let body = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[3...]))
  let inPieces = filtered(body, interval: interval, piece: Int(bytes[2]) + 1)
  let whole = filtered(body, interval: interval, piece: max(1, body.count))
  precondition(inPieces.audio == whole.audio && inPieces.metadata == whole.metadata, "depends on the pieces")
  precondition(whole.audio.count + whole.metadata.joined().count <= body.count, "more out than in")
  return 0
}

private func filtered(_ body: UnsafeRawBufferPointer, interval: Int, piece: Int) -> (
  audio: [UInt8], metadata: [[UInt8]]
) {
  var filter = ICYMetadataFilter(interval: interval)
  var audio: [UInt8] = []
  var metadata: [[UInt8]] = []
  var offset = 0
  while offset < body.count {
    let end = min(body.count, offset + piece)
    filter.process(
      UnsafeRawBufferPointer(rebasing: body[offset..<end]),
      audio: { audio.append(contentsOf: $0) },
      metadata: { block in
        precondition(!block.isEmpty && block.count % 16 == 0 && block.count <= 255 * 16, "block of \(block.count)")
        metadata.append(block)
      })
    offset = end
  }
  return (audio, metadata)
}
