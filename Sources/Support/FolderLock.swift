#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A folder one process owns: an exclusive `flock` on a `lock` file in it, held while the lock is
/// kept and released by the kernel when the process ends, however it ends. The file carries the
/// owner's pid, for the message the next one gets.
public final class FolderLock: Sendable {
  public enum Failure: Error, Equatable, CustomStringConvertible {
    /// Another process holds it (its pid, when the file says).
    case held(folder: String, pid: Int32?)
    case cannotOpen(path: String, errno: Int32)

    public var description: String {
      switch self {
      case .held(let folder, let pid):
        "\(folder) is in use by another slimplay" + (pid.map { " (pid \($0))" } ?? "")
      case .cannotOpen(let path, let code): "cannot open \(path): \(String(cString: strerror(code)))"
      }
    }
  }

  public let folder: String
  private let descriptor: Int32

  private init(folder: String, descriptor: Int32) {
    self.folder = folder
    self.descriptor = descriptor
  }

  deinit { close(descriptor) }

  /// Takes the folder's lock, waiting for it at most `waitMilliseconds` (0: fails at once if
  /// another process has it); creates the folder if needed.
  public static func acquire(_ folder: String, waitMilliseconds: Int = 0) -> Result<FolderLock, Failure> {
    FileIO.makeDirectories(folder)
    let path = folder + "/lock"
    let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else { return .failure(.cannotOpen(path: path, errno: errno)) }
    var waited = 0
    while flock(descriptor, LOCK_EX | LOCK_NB) != 0 && waited < waitMilliseconds {
      usleep(20_000)
      waited += 20
    }
    guard waited < waitMilliseconds || flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
      let owner = FileIO.readText(path).flatMap { Int32(String($0.prefix { $0.isNumber })) }
      close(descriptor)
      return .failure(.held(folder: folder, pid: owner))
    }
    let pid = Array("\(getpid())\n".utf8)
    _ = ftruncate(descriptor, 0)
    _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
    return .success(FolderLock(folder: folder, descriptor: descriptor))
  }
}
