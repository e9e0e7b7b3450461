import SlimConnection
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// `--config FILE` (`/etc/default/slimplay` for the service): shell-style `NAME=value` lines that
/// become command-line flags placed before the real ones, so a flag given on the command line
/// wins. Debian's `/etc/default/squeezelite` works as it is: SL_NAME, SL_SOUNDCARD, SB_SERVER_IP
/// and SB_EXTRA_ARGS mean what they mean to squeezelite's service.
public enum ConfigFile {
  public struct ParseError: Error, CustomStringConvertible, Equatable {
    public let line: Int
    public let reason: String
    public var description: String { "line \(line): \(reason)" }
  }

  /// What each variable turns into. Others are reported and ignored.
  public static let flags: [(variable: String, flag: String?)] = [
    ("SL_NAME", "-n"), ("SL_SOUNDCARD", "-o"), ("SB_SERVER_IP", "-s"), ("SB_EXTRA_ARGS", nil),
    ("SLIMPLAY_ARGS", nil),
  ]

  /// The variables a file assigns, in order. Understands comments, `export`, single and double
  /// quotes, backslash escapes, `$NAME`/`${NAME}` of earlier assignments, and `$(hostname)` /
  /// `$(hostname -s)` (Debian's template suggests the latter for the name); nothing else is run.
  public static func parse(_ text: String, hostName: String) throws(ParseError) -> [(String, String)] {
    var assignments: [(String, String)] = []
    var known: [String: String] = [:]
    for (offset, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
      let line = offset + 1
      var rest = Substring(rawLine).drop { $0 == " " || $0 == "\t" }
      if rest.isEmpty || rest.first == "#" { continue }
      if rest.hasPrefix("export ") { rest = rest.dropFirst("export ".count).drop { $0 == " " } }
      guard let equals = rest.firstIndex(of: "=") else {
        throw ParseError(line: line, reason: "expected NAME=value")
      }
      let name = String(rest[..<equals])
      guard let first = name.first, first == "_" || first.isLetter,
        name.allSatisfy({ $0 == "_" || $0.isLetter || $0.isNumber })
      else { throw ParseError(line: line, reason: "'\(name)' is not a variable name") }
      let value = try Self.value(rest[rest.index(after: equals)...], line: line, known: known, hostName: hostName)
      known[name] = value
      assignments.append((name, value))
    }
    return assignments
  }

  /// The flags a file's variables stand for; unknown variables are named in `ignored`.
  public static func arguments(from assignments: [(String, String)]) throws(ParseError) -> (
    arguments: [String], ignored: [String]
  ) {
    var values: [String: String] = [:]
    var ignored: [String] = []
    for (name, value) in assignments {
      if flags.contains(where: { $0.variable == name }) {
        values[name] = value
      } else if !ignored.contains(name) {
        ignored.append(name)
      }
    }
    var arguments: [String] = []
    for (variable, flag) in flags {
      guard let value = values[variable], !value.isEmpty else { continue }
      if let flag {
        arguments += [flag, value]
      } else {
        arguments += try words(value, variable: variable)
      }
    }
    return (arguments, ignored)
  }

  /// The command line with `--config FILE` (or `--config=FILE`) turned into the file's flags,
  /// placed first. A missing file is not an error: the service then runs on defaults.
  public static func expand(_ arguments: [String], log: (String) -> Void) throws -> [String] {
    guard arguments.first != "ctl", let path = configPath(in: arguments) else { return arguments }
    guard let text = FileIO.readText(path) else {
      log("config file \(path) not readable (\(errorText(errno))); using defaults")
      return arguments
    }
    do {
      let (flags, ignored) = try Self.arguments(from: parse(text, hostName: Self.hostName()))
      if !ignored.isEmpty { log("config file \(path): ignoring \(ignored.joined(separator: ", "))") }
      return flags + arguments
    } catch {
      throw ConfigFileError(path: path, error: error)
    }
  }

  public struct ConfigFileError: Error, CustomStringConvertible {
    public let path: String
    public let error: ParseError
    public var description: String { "config file \(path), \(error)" }
  }

  static func configPath(in arguments: [String]) -> String? {
    for (index, argument) in arguments.enumerated() {
      if argument == "--" { return nil }
      if argument == "--config", index + 1 < arguments.count { return arguments[index + 1] }
      if argument.hasPrefix("--config=") { return String(argument.dropFirst("--config=".count)) }
    }
    return nil
  }

  static func hostName() -> String { HostName.current() }

  /// A value as the shell would read it, up to an unquoted space or comment.
  private static func value(
    _ text: Substring, line: Int, known: [String: String], hostName: String
  ) throws(ParseError) -> String {
    var result = ""
    var index = text.startIndex
    var quote: Character?
    while index < text.endIndex {
      let character = text[index]
      index = text.index(after: index)
      switch (quote, character) {
      case (nil, " "), (nil, "\t"), (nil, "\r"):
        let trailing = text[index...].drop { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard trailing.isEmpty || trailing.first == "#" else {
          throw ParseError(line: line, reason: "unquoted space in the value (quote it)")
        }
        return result
      case (nil, "'"), (nil, "\""):
        quote = character
      case ("'", "'"), ("\"", "\""):
        quote = nil
      case ("'", _):
        result.append(character)
      case (_, "\\"):
        guard index < text.endIndex else { break }
        let escaped = text[index]
        index = text.index(after: index)
        // Inside double quotes a backslash only escapes these.
        if quote == "\"" && !"$`\"\\".contains(escaped) { result.append("\\") }
        result.append(escaped)
      case (_, "$"):
        result += try expansion(text, at: &index, line: line, known: known, hostName: hostName)
      case (_, "`"):
        throw ParseError(line: line, reason: "command substitution is not supported")
      default:
        result.append(character)
      }
    }
    guard quote == nil else { throw ParseError(line: line, reason: "unterminated quote") }
    return result
  }

  private static func expansion(
    _ text: Substring, at index: inout Substring.Index, line: Int, known: [String: String], hostName: String
  ) throws(ParseError) -> String {
    let rest = text[index...]
    if rest.hasPrefix("(") {
      guard let close = rest.firstIndex(of: ")") else { throw ParseError(line: line, reason: "unterminated $(") }
      let command = rest[rest.index(after: rest.startIndex)..<close].split(separator: " ").joined(separator: " ")
      index = text.index(after: close)
      switch command {
      case "hostname": return hostName
      case "hostname -s": return String(hostName.split(separator: ".").first ?? "")
      default: throw ParseError(line: line, reason: "only $(hostname) and $(hostname -s) are supported")
      }
    }
    if rest.hasPrefix("{") {
      guard let close = rest.firstIndex(of: "}") else { throw ParseError(line: line, reason: "unterminated ${") }
      let name = String(rest[rest.index(after: rest.startIndex)..<close])
      index = text.index(after: close)
      return known[name] ?? Environment.current([name])[name] ?? ""
    }
    let name = rest.prefix { $0 == "_" || $0.isLetter || $0.isNumber }
    guard !name.isEmpty else { return "$" }
    index = name.endIndex
    return known[String(name)] ?? Environment.current([String(name)])[String(name)] ?? ""
  }

  /// Splits SB_EXTRA_ARGS into words at spaces; quotes group words (more forgiving than the
  /// shell, which would keep them literally).
  static func words(_ text: String, variable: String) throws(ParseError) -> [String] {
    var words: [String] = []
    var current = ""
    var inWord = false
    var quote: Character?
    for character in text {
      switch (quote, character) {
      case (nil, " "), (nil, "\t"):
        if inWord { words.append(current) }
        current = ""
        inWord = false
      case (nil, "'"), (nil, "\""):
        quote = character
        inWord = true
      case ("'", "'"), ("\"", "\""):
        quote = nil
      default:
        current.append(character)
        inWord = true
      }
    }
    guard quote == nil else { throw ParseError(line: 0, reason: "unterminated quote in \(variable)") }
    if inWord { words.append(current) }
    return words
  }
}
