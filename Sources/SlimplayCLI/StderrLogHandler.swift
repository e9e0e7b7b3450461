import Logging
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// Writes one line per message to standard error (standard output may carry audio):
/// `[HH:MM:SS.mmm] level category: message key=value…`. One `write` per line keeps lines whole
/// when threads log at once.
public struct StderrLogHandler: LogHandler {
  public var logLevel: Logger.Level
  public var metadata: Logger.Metadata = [:]
  private let label: String

  public init(label: String, level: Logger.Level) {
    self.label = label
    self.logLevel = level
  }

  public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
    get { metadata[key] }
    set { metadata[key] = newValue }
  }

  public func log(event: LogEvent) {
    var line = "[\(Self.timestamp())] \(event.level) \(label): \(event.message)"
    if let error = event.error { line += " (\(error))" }
    let merged = metadata.merging(event.metadata ?? [:]) { $1 }
    for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
      line += " \(key)=\(value)"
    }
    line += "\n"
    line.withUTF8 { _ = POSIXIO.writeAll(2, UnsafeRawBufferPointer($0)) }
  }

  private static func timestamp() -> String {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    var parts = tm()
    var seconds = now.tv_sec
    localtime_r(&seconds, &parts)
    let ms = Int(now.tv_nsec / 1_000_000)
    return pad(Int(parts.tm_hour), 2) + ":" + pad(Int(parts.tm_min), 2) + ":" + pad(Int(parts.tm_sec), 2)
      + "." + pad(ms, 3)
  }

  private static func pad(_ value: Int, _ width: Int) -> String {
    let text = String(value)
    return String(repeating: "0", count: max(0, width - text.count)) + text
  }
}
