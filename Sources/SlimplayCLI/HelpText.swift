/// `--help`: an overview, the usage line, then one entry per option with its value name, its
/// help wrapped to fit 80 columns and the default it has when not given.
enum HelpText {
  static let width = 80
  /// The option column: labels longer than this put their help on the next line.
  static let labelWidth = 24

  static func text<Command: CommandLineCommand>(for command: Command.Type) -> String {
    var lines = ["OVERVIEW: \(command.abstract)", ""]
    for line in command.discussion.split(separator: "\n", omittingEmptySubsequences: false) {
      lines += wrap(String(line), width: width - 1)
    }
    lines += ["", "USAGE: \(command.usage)", ""]
    if !command.positionals.isEmpty {
      lines.append("ARGUMENTS:")
      for positional in command.positionals {
        lines += entry("<\(positional.valueName)>", positional.help)
      }
      lines.append("")
    }
    lines.append("OPTIONS:")
    let defaults = Command()
    for option in command.options where !option.hidden {
      lines += entry(option.label, option.help + defaultText(option.target, in: defaults))
    }
    lines += entry("--version", "Show the version.")
    lines += entry("-h, --help", "Show help information.")
    if !command.subcommands.isEmpty {
      lines += ["", "SUBCOMMANDS:"]
      for (name, abstract) in command.subcommands { lines += entry(name, abstract) }
      lines += ["", "  See '\(command.name) <subcommand> --help' for its options."]
    }
    return lines.joined(separator: "\n") + "\n"
  }

  /// The usage lines under an error message.
  static func usageHint<Command: CommandLineCommand>(for command: Command.Type) -> String {
    "Usage: \(command.usage)\n  See '\(command.usage.split(separator: " <")[0]) --help' for more information.\n"
  }

  private static func defaultText<Command>(_ target: CommandTarget<Command>, in command: Command) -> String {
    switch target {
    case .text(let path): " (default: \(command[keyPath: path]))"
    case .integer(let path): " (default: \(command[keyPath: path]))"
    case .integer32(let path): " (default: \(command[keyPath: path]))"
    case .flag, .optionalText, .texts, .optionalInteger: ""
    }
  }

  /// `  label   help…`, the help wrapped in its column.
  private static func entry(_ label: String, _ help: String) -> [String] {
    let indent = String(repeating: " ", count: 2 + labelWidth)
    var wrapped = wrap(help, width: width - indent.count)
    let head = "  " + label
    if head.count < indent.count, !wrapped.isEmpty {
      wrapped[0] = head + String(repeating: " ", count: indent.count - head.count) + wrapped[0]
      return [wrapped[0]] + wrapped.dropFirst().map { indent + $0 }
    }
    return [head] + wrapped.map { indent + $0 }
  }

  /// Words filled into lines of at most `width` characters (a longer word gets a line of its own).
  static func wrap(_ text: String, width: Int) -> [String] {
    var lines: [String] = []
    var line = ""
    for word in text.split(separator: " ") {
      if line.isEmpty {
        line = String(word)
      } else if line.count + 1 + word.count <= width {
        line += " " + word
      } else {
        lines.append(line)
        line = String(word)
      }
    }
    if !line.isEmpty || lines.isEmpty { lines.append(line) }
    return lines
  }
}
