import Support

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A fresh folder under /tmp (mkdtemp), removed with everything in it by `remove()`.
public struct TemporaryDirectory: Sendable {
  public let path: String

  public init() {
    var template = Array("/tmp/slimplay-tests-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { buffer in
      mkdtemp(buffer.baseAddress!).map { String(cString: $0) }
    }
    guard let made else { fatalError("mkdtemp failed: errno \(errno)") }
    path = made
  }

  public func remove() { removeTree(path) }

  /// Writes a small file, creating nothing else.
  public func writeFile(_ relativePath: String, _ text: String) {
    let full = path + "/" + relativePath
    let fd = open(full, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    precondition(fd >= 0, "cannot create \(full)")
    let bytes = Array(text.utf8)
    let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    precondition(written == bytes.count)
    close(fd)
  }

  public func makeDirectory(_ relativePath: String) {
    precondition(mkdir(path + "/" + relativePath, 0o755) == 0)
  }

  public func exists(_ relativePath: String) -> Bool {
    access(path + "/" + relativePath, F_OK) == 0
  }

  public func entries() -> [String] { directoryEntries(path).sorted() }
}

public func directoryEntries(_ path: String) -> [String] {
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
