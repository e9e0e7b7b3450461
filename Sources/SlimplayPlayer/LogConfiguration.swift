import Logging

/// Log categories (the `-d` names) and their levels.
public struct LogConfiguration: Equatable, Sendable {
  public enum Category: String, CaseIterable, Sendable {
    case slimproto
    case stream
    case decode
    case output
    case lms
    case cache
    case group
    case control
  }

  public var defaultLevel: Logger.Level = .notice
  public var levels: [Category: Logger.Level] = [:]

  public init() {}

  /// `-d category=level`, repeatable; `all=level` sets every category. squeezelite's `sdebug`
  /// means trace.
  public mutating func apply(_ text: String) throws(OptionError) {
    let (name, levelText) = text.splitOnce("=")
    guard let levelText, let level = Self.level(named: levelText) else {
      throw .invalid("-d", text, "expected category=level with level trace|debug|info|notice|warning|error")
    }
    if name == "all" {
      defaultLevel = level
      levels = [:]
    } else if let category = Category(rawValue: name) {
      levels[category] = level
    } else {
      let known = (["all"] + Category.allCases.map(\.rawValue)).joined(separator: ", ")
      throw .invalid("-d", text, "unknown category (known: \(known))")
    }
  }

  public func level(for label: String) -> Logger.Level {
    Category(rawValue: label).flatMap { levels[$0] } ?? defaultLevel
  }

  static func level(named name: String) -> Logger.Level? {
    switch name {
    case "sdebug", "trace": .trace
    case "debug": .debug
    case "info": .info
    case "notice": .notice
    case "warn", "warning": .warning
    case "error": .error
    case "critical": .critical
    default: nil
    }
  }
}
