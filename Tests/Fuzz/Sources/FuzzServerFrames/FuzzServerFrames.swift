import SlimProto

/// Bytes from the server, in pieces the input chooses (TCP delivers in any): every frame parses
/// as a server message or fails with a typed error; a parsed message encodes to a frame that
/// parses back to the same message; and the frames do not depend on the pieces.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzServerFrames(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = UnsafeBufferPointer(start: data, count: size)
  guard let split = bytes.first else { return 0 }
  let stream = bytes[1...]
  let inPieces = frames(of: stream, piece: Int(split) + 1)
  let whole = frames(of: stream, piece: max(1, stream.count))
  precondition(inPieces == whole, "frames depend on the pieces")
  for frame in whole {
    guard let message = try? ServerMessage(frame: frame) else { continue }
    let again = try? ServerMessage(frame: message.frame)
    precondition(again == message, "\(message) does not survive encoding")
  }
  return 0
}

/// The frames read before the end or the first framing error (the connection closes there).
private func frames(of stream: Slice<UnsafeBufferPointer<UInt8>>, piece: Int) -> [ServerFrame] {
  var reader = ServerFrameReader()
  var frames: [ServerFrame] = []
  var offset = stream.startIndex
  while offset < stream.endIndex {
    let end = min(stream.endIndex, offset + piece)
    reader.append(stream[offset..<end])
    offset = end
    do {
      while let frame = try reader.nextFrame() { frames.append(frame) }
    } catch {
      return frames
    }
  }
  return frames
}
