import SlimConnection
import Support

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// SplitMix64: a seeded, deterministic generator for reproducible jitter tests.
struct SplitMix64: RandomNumberGenerator {
  private var state: UInt64

  init(seed: UInt64) { state = seed }

  mutating func next() -> UInt64 {
    state &+= 0x9e37_79b9_7f4a_7c15
    var z = state
    z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
    z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
    return z ^ (z >> 31)
  }
}

/// A fresh folder under /tmp (mkdtemp), removed with everything in it by `remove()`.
struct TemporaryDirectory {
  let path: String

  init() {
    var template = Array("/tmp/slimplay-tests-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { buffer in
      mkdtemp(buffer.baseAddress!).map { String(cString: $0) }
    }
    guard let made else { fatalError("mkdtemp failed: errno \(errno)") }
    path = made
  }

  func remove() { removeTree(path) }

  /// Writes a small file, creating nothing else.
  func writeFile(_ relativePath: String, _ text: String) {
    let full = path + "/" + relativePath
    let fd = open(full, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    precondition(fd >= 0, "cannot create \(full)")
    let bytes = Array(text.utf8)
    let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    precondition(written == bytes.count)
    close(fd)
  }

  func makeDirectory(_ relativePath: String) {
    precondition(mkdir(path + "/" + relativePath, 0o755) == 0)
  }

  func exists(_ relativePath: String) -> Bool {
    access(path + "/" + relativePath, F_OK) == 0
  }

  func entries() -> [String] { directoryEntries(path).sorted() }
}

func directoryEntries(_ path: String) -> [String] {
  FileIO.entries(of: path)
}

private func removeTree(_ path: String) {
  var info = stat()
  guard lstat(path, &info) == 0 else { return }
  if (info.st_mode & S_IFMT) == S_IFDIR {
    for name in directoryEntries(path) { removeTree(path + "/" + name) }
    rmdir(path)
  } else {
    unlink(path)
  }
}
