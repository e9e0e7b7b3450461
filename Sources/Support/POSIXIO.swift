#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The two loops every descriptor read and write needs: retry on EINTR, and for writes, go on
/// until every byte is taken. Allocation-free, so the output thread may use them.
public enum POSIXIO {
  /// Reads up to `count` bytes into `buffer`, retrying on EINTR. Returns the bytes read (0 at the
  /// end of the file), or the errno of the failure.
  @inlinable
  public static func read(_ fd: Int32, into buffer: UnsafeMutableRawPointer?, count: Int) -> Result<Int, Errno> {
    while true {
      let n = Glibc.read(fd, buffer, count)
      if n >= 0 { return .success(n) }
      if errno != EINTR { return .failure(Errno(errno)) }
    }
  }

  /// Writes every byte of `bytes`, retrying on EINTR and after short writes. A descriptor that
  /// takes nothing counts as full (ENOSPC).
  @inlinable
  public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Void, Errno> {
    var offset = 0
    while offset < bytes.count {
      let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
      if n < 0 {
        if errno == EINTR { continue }
        return .failure(Errno(errno))
      }
      if n == 0 { return .failure(Errno(ENOSPC)) }
      offset += n
    }
    return .success(())
  }
}

/// An errno value that reads as the C library's text for it.
public struct Errno: Error, Equatable, Sendable, CustomStringConvertible {
  public var code: Int32

  public init(_ code: Int32) { self.code = code }

  public var description: String { errorText(code) }
}

/// The C library's text for an errno value.
public func errorText(_ code: Int32) -> String {
  String(cString: strerror(code))
}
