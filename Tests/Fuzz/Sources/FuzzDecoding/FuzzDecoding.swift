import AudioBuffers
import Decoders
import Support

/// Decodes `bytes` as the decoder thread would, on one thread: the stream arrives in pieces the
/// input chooses and ends, the output is drained as it fills. The decoder may refuse the stream
/// with a typed error; it must not crash, and once every byte is read it must finish or fail:
/// asking for input that can never come would leave the decoder thread spinning.
public func fuzzDecode(
  _ codec: Codec, _ data: UnsafePointer<UInt8>, _ size: Int, pcm: PCMParameters? = nil, dsd: DSDOutput = .pcm
) {
  let bytes = UnsafeRawBufferPointer(start: data, count: size)
  guard let split = bytes.first, let decoder = try? DecoderFactory.make(codec: codec, pcm: pcm, dsd: dsd) else {
    return
  }
  let stream = UnsafeRawBufferPointer(rebasing: bytes[1...])
  let piece = (Int(split) + 1) * 64
  let input = StreamInput(capacity: 64 << 10)
  let output = FrameOutput(capacityFrames: 1 << 15)
  output.beginTrack(id: 1)
  let drain = UnsafeMutableRawBufferPointer.allocate(byteCount: (1 << 15) * OutputFrames.bytesPerFrame, alignment: 16)
  defer { drain.deallocate() }
  var fed = 0
  var idleCalls = 0
  while true {
    if fed < stream.count {
      let n = min(piece, stream.count - fed, input.ring.space)
      fed += input.ring.write(UnsafeRawBufferPointer(rebasing: stream[fed..<fed + n]))
      if fed == stream.count { input.markEnded() }
    } else if !input.hasEnded {
      input.markEnded()
    }
    _ = output.ring.read(into: drain)
    while output.boundaries.peek() != nil { output.boundaries.pop() }
    let before = (input.ring.totalConsumed, output.ring.totalWritten)
    let progress: DecodeProgress
    do {
      progress = try decoder.decode(from: input, to: output)
    } catch {
      return
    }
    if progress == .finished { return }
    let moved = before != (input.ring.totalConsumed, output.ring.totalWritten)
    idleCalls = moved ? 0 : idleCalls + 1
    if input.isExhausted {
      precondition(idleCalls < 100, "\(codec): \(progress) for 100 calls after the stream ended")
    }
    precondition(idleCalls < 100_000, "\(codec): no progress in 100000 calls")
  }
}
