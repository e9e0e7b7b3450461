#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Small file helpers on POSIX calls, so the control path needs no Foundation.
public enum FileIO {
  public enum Failure: Error, CustomStringConvertible {
    case open(path: String, errno: Int32)
    case write(path: String, errno: Int32)
    case rename(from: String, to: String, errno: Int32)

    public var description: String {
      switch self {
      case .open(let path, let code): "cannot open \(path): \(errorText(code))"
      case .write(let path, let code): "cannot write \(path): \(errorText(code))"
      case .rename(let from, let to, let code): "cannot rename \(from) to \(to): \(errorText(code))"
      }
    }
  }

  /// The whole file, or nil if it cannot be read. Files here are small state files.
  public static func read(_ path: String, limit: Int = 1 << 20) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var result: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while result.count < limit {
      let n = chunk.withUnsafeMutableBytes { (try? POSIXIO.read(fd, into: $0.baseAddress, count: $0.count).get()) ?? 0 }
      guard n > 0 else { break }
      result.append(contentsOf: chunk[0..<n])
    }
    return result
  }

  public static func readText(_ path: String) -> String? {
    read(path).map { String(decoding: $0, as: UTF8.self) }
  }

  /// Writes to a temporary file in the same folder, syncs it, then renames it over `path`, so a
  /// crash or a full disk leaves either the old file or the new one, never a torn one. Without
  /// `durable` the sync is skipped: a crash of the process still leaves a whole file, a power cut
  /// may leave the previous one (for data that is rewritten every few seconds anyway).
  public static func writeAtomically(
    _ path: String, _ bytes: [UInt8], mode: mode_t = 0o644, durable: Bool = true
  ) throws(Failure) {
    let temporary = path + ".tmp"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
    guard fd >= 0 else { throw .open(path: temporary, errno: errno) }
    if case .failure(let failure) = bytes.withUnsafeBytes({ POSIXIO.writeAll(fd, $0) }) {
      close(fd)
      unlink(temporary)
      throw .write(path: temporary, errno: failure.code)
    }
    if durable, fsync(fd) != 0 {
      let code = errno
      close(fd)
      unlink(temporary)
      throw .write(path: temporary, errno: code)
    }
    close(fd)
    guard rename(temporary, path) == 0 else {
      let code = errno
      unlink(temporary)
      throw .rename(from: temporary, to: path, errno: code)
    }
  }

  /// Creates a folder and its parents (like `mkdir -p`); true if it exists afterwards.
  @discardableResult
  public static func makeDirectories(_ path: String, mode: mode_t = 0o755) -> Bool {
    var prefix = path.hasPrefix("/") ? "/" : ""
    for component in path.split(separator: "/") {
      prefix += component + "/"
      if mkdir(prefix, mode) != 0 && errno != EEXIST { return false }
    }
    return true
  }

  /// The names in a folder, without `.` and `..`; empty if it cannot be read.
  public static func entries(of path: String) -> [String] {
    guard let dir = opendir(path) else { return [] }
    defer { closedir(dir) }
    var names: [String] = []
    while let entry = readdir(dir) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
      }
      if name != "." && name != ".." { names.append(name) }
    }
    return names
  }

  public static func directoryName(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
  }
}
