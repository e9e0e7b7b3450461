#if canImport(Glibc)
  import Glibc
#endif

/// The process's environment variables, read when asked.
public enum Environment {
  /// The values of those of `names` that are set.
  public static func current(_ names: [String]) -> [String: String] {
    var values: [String: String] = [:]
    for name in names {
      if let value = getenv(name) { values[name] = String(cString: value) }
    }
    return values
  }
}

/// The machine's name, as `gethostname` gives it.
public enum HostName {
  public static func current() -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count - 1) == 0 else { return "slimplay" }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
