import Support
import TestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// A 16-bit stereo WAV track with distinct samples (a seeded ramp per track), its file, and the
/// frames the output must play for it: each sample moved to the top of a 32-bit word.
struct TestTrack {
  let frames: Int
  let wav: [UInt8]
  let expected: [Int32]

  init(frames: Int, seed: Int, sampleRate: Int = 44100) {
    self.frames = frames
    var samples: [Int16] = []
    samples.reserveCapacity(frames * 2)
    for index in 0..<frames * 2 {
      samples.append(Int16(truncatingIfNeeded: (index &* 7919) &+ seed &* 104_729))
    }
    expected = samples.map { Int32($0) << 16 }
    var bytes: [UInt8] = []
    func u32(_ v: Int) { bytes += withUnsafeBytes(of: UInt32(v).littleEndian, Array.init) }
    func u16(_ v: Int) { bytes += withUnsafeBytes(of: UInt16(v).littleEndian, Array.init) }
    let dataBytes = frames * 4
    bytes += Array("RIFF".utf8)
    u32(36 + dataBytes)
    bytes += Array("WAVEfmt ".utf8)
    u32(16)
    u16(1)
    u16(2)
    u32(sampleRate)
    u32(sampleRate * 4)
    u16(4)
    u16(16)
    bytes += Array("data".utf8)
    u32(dataBytes)
    for sample in samples { bytes += withUnsafeBytes(of: sample.littleEndian, Array.init) }
    wav = bytes
  }

  /// Writes the WAV (or its first `bytes` bytes) under `directory` and returns the path.
  func write(to directory: String, name: String, bytes: Int? = nil) -> String {
    let path = directory + "/" + name
    try? FileIO.writeAtomically(path, Array(wav.prefix(bytes ?? wav.count)))
    return path
  }
}

/// A fresh folder under /tmp, removed by `remove()`.
struct ScratchDirectory {
  let path: String

  init() { path = TemporaryDirectory().path }

  func remove() {
    for name in FileIO.entries(of: path) { unlink(path + "/" + name) }
    rmdir(path)
  }
}
