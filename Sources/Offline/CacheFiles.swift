import Support

#if canImport(Glibc)
  import Glibc
#endif

/// POSIX file calls the cache needs, with errno kept for clear log lines.
enum CacheFiles {
  struct Status {
    var size: Int
    var modified: Int
  }

  static func status(_ path: String) -> Status? {
    var info = stat()
    guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
    return Status(
      size: Int(info.st_size), modified: Int(info.st_mtim.tv_sec) * 1000 + Int(info.st_mtim.tv_nsec / 1_000_000))
  }

  static func remove(_ path: String) { unlink(path) }

  static func rename(_ from: String, _ to: String) -> Int32? {
    Glibc.rename(from, to) == 0 ? nil : errno
  }

  /// The `ContentChecksum` of the whole file: to recheck a cached file that changed on disk (a
  /// download computes it as the bytes arrive).
  static func checksum(_ path: String) -> UInt64? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var checksum = ContentChecksum()
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 * 1024, alignment: 16)
    defer { buffer.deallocate() }
    while true {
      guard case .success(let n) = POSIXIO.read(fd, into: buffer.baseAddress, count: buffer.count) else {
        return nil
      }
      if n == 0 { return checksum.value }
      checksum.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
    }
  }

  static func fnv1a(_ text: String) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return hash
  }

  static func hex(_ value: UInt64) -> String { Hex.string(value, width: 16) }
}
