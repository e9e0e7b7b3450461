import AudioBuffers
import Decoders
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

// MARK: Processes and files (no Foundation)

/// A scratch directory, removed with its contents when released.
final class TempDir {
  let path: String

  init() { path = TemporaryDirectory().path }

  deinit {
    shell("rm -rf '\(path)'")
  }

  func file(_ name: String) -> String { path + "/" + name }

  /// Runs a command in this directory; records an issue when it fails.
  func run(_ command: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let status = shell("cd '\(path)' && " + command)
    #expect(status == 0, "command failed (\(status)): \(command.prefix(300))", sourceLocation: sourceLocation)
  }

  func read(_ name: String) -> [UInt8] { readFile(file(name)) }
  func write(_ name: String, _ bytes: [UInt8]) { writeFile(file(name), bytes) }
}

func readFile(_ path: String) -> [UInt8] {
  guard let f = fopen(path, "rb") else { return [] }
  defer { fclose(f) }
  var bytes: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 1 << 16)
  while true {
    let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, f) }
    if n <= 0 { break }
    bytes.append(contentsOf: chunk[0..<n])
  }
  return bytes
}

func writeFile(_ path: String, _ bytes: [UInt8]) {
  guard let f = fopen(path, "wb") else { return }
  defer { fclose(f) }
  _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
}

// MARK: Reference samples

/// Little-endian signed samples of `bytes` bytes each (1 = signed 8-bit).
func signedSamples(_ data: [UInt8], bytes: Int, littleEndian: Bool = true) -> [Int32] {
  let count = data.count / bytes
  var samples = [Int32](repeating: 0, count: count)
  for i in 0..<count {
    var value: UInt32 = 0
    for b in 0..<bytes {
      let byte = UInt32(data[i * bytes + (littleEndian ? bytes - 1 - b : b)])
      value = value << 8 | byte
    }
    let shift = UInt32(32 - 8 * bytes)
    samples[i] = Int32(bitPattern: value << shift) >> Int32(shift)
  }
  return samples
}

/// The sample data of a canonical or chunked WAV file (the `data` chunk's contents).
func wavData(_ file: [UInt8]) -> [UInt8] {
  var offset = 12
  while offset + 8 <= file.count {
    let id = String(decoding: file[offset..<offset + 4], as: UTF8.self)
    let size =
      Int(file[offset + 4]) | Int(file[offset + 5]) << 8 | Int(file[offset + 6]) << 16 | Int(file[offset + 7]) << 24
    if id == "data" { return Array(file[(offset + 8)..<min(file.count, offset + 8 + size)]) }
    offset += 8 + size + (size & 1)
  }
  return []
}

// MARK: Running a decoder

struct SplitMix {
  var state: UInt64
  init(_ seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
  mutating func below(_ n: Int) -> Int { Int(next() % UInt64(max(n, 1))) }
}

struct DecodeRun {
  /// Interleaved stereo output samples.
  var samples: [Int32] = []
  var boundaries: [TrackBoundary] = []
  var finished = false
  var calls = 0
}

/// Feeds `bytes` into a stream ring in chunks of random sizes (network arrival), ending the
/// stream after the last one, while an "output thread" drains random amounts of the output ring;
/// calls the decoder (when the output has its minimum free space) until it reports `.finished`.
/// Errors from the decoder propagate; a decoder that stops making progress records an issue.
func decodeAll(
  _ decoder: any AudioDecoder, _ bytes: [UInt8], seed: UInt64 = 1, streamCapacity: Int = 128 << 10,
  outputFrames: Int = 16384, maxChunk: Int = 24 << 10, startFrame: Int = 0,
  sourceLocation: SourceLocation = #_sourceLocation
) throws(DecodeError) -> DecodeRun {
  let input = StreamInput(capacity: streamCapacity)
  let output = FrameOutput(capacityFrames: outputFrames)
  output.beginTrack(id: 7, startFrame: startFrame)
  var rng = SplitMix(seed)
  var fed = 0
  var run = DecodeRun()
  var drainBuffer = [Int32](repeating: 0, count: outputFrames * 2)
  var stalled = 0

  func drain(frames: Int) {
    let bytes = min(frames, output.bufferedFrames) * OutputFrames.bytesPerFrame
    guard bytes > 0 else { return }
    let n = drainBuffer.withUnsafeMutableBytes {
      output.ring.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<bytes]))
    }
    run.samples.append(contentsOf: drainBuffer[0..<(n / 4)])
  }
  func collectBoundaries() {
    while let boundary = output.boundaries.peek() {
      run.boundaries.append(boundary)
      output.boundaries.pop()
    }
  }

  for _ in 0..<5_000_000 {
    if fed < bytes.count {
      let n = min(rng.below(maxChunk) + 1, bytes.count - fed, input.ring.space)
      if n > 0 {
        bytes.withUnsafeBytes { _ = input.ring.write(UnsafeRawBufferPointer(rebasing: $0[fed..<(fed + n)])) }
        fed += n
      }
      if fed == bytes.count { input.markEnded() }
    } else if !input.hasEnded {
      input.markEnded()  // an empty body
    }
    // The output thread takes a random share, sometimes nothing, sometimes everything.
    switch rng.below(4) {
    case 0: break
    case 1: drain(frames: output.bufferedFrames)
    default: drain(frames: rng.below(output.bufferedFrames + 1))
    }
    collectBoundaries()
    guard output.freeFrames >= decoder.minimumFreeFrames else { continue }
    let before = (input.ring.totalConsumed, output.writeFrame)
    let progress = try decoder.decode(from: input, to: output)
    run.calls += 1
    collectBoundaries()
    if progress == .finished {
      drain(frames: output.bufferedFrames)
      run.finished = true
      return run
    }
    if input.hasEnded && before == (input.ring.totalConsumed, output.writeFrame) {
      stalled += 1
      if stalled > 10_000 {
        Issue.record("decoder stalled (\(progress)) with the stream ended", sourceLocation: sourceLocation)
        return run
      }
    } else {
      stalled = 0
    }
  }
  Issue.record("decoder did not finish", sourceLocation: sourceLocation)
  return run
}

/// Checks the stereo output against reference samples of `channels` channels (mono: both output
/// channels must equal it), after shifting the output right by `shift` bits (16 for 16-bit…).
func expectBitExact(
  _ samples: [Int32], _ reference: [Int32], channels: Int, shift: Int32,
  sourceLocation: SourceLocation = #_sourceLocation
) {
  let frames = samples.count / 2
  let referenceFrames = reference.count / channels
  #expect(referenceFrames > 0, "empty reference", sourceLocation: sourceLocation)
  #expect(frames == referenceFrames, "frame count", sourceLocation: sourceLocation)
  var mismatches = 0
  var first: Int?
  for frame in 0..<min(frames, referenceFrames) {
    for c in 0..<2 {
      let expected = reference[frame * channels + min(c, channels - 1)]
      let actual = samples[frame * 2 + c]
      // Left-justified: the bits below the source width must be zero.
      if actual >> shift != expected || (shift > 0 && actual & ((1 << shift) - 1) != 0) {
        mismatches += 1
        if first == nil { first = frame }
      }
    }
  }
  #expect(
    mismatches == 0,
    "\(mismatches) samples differ, first at frame \(first ?? -1) of \(referenceFrames)",
    sourceLocation: sourceLocation)
}

let htmlBody: [UInt8] = {
  var page = "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>\n<body>\n"
  for i in 0..<200 { page += "<p>The requested URL /stream.mp3?player=\(i) was not found on this server.</p>\n" }
  page += "</body></html>\n"
  return Array(page.utf8)
}()
