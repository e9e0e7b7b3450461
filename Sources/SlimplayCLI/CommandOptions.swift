/// The command-line vocabulary of a command: its options and positional arguments, each bound to
/// a property of the command, and the parse that fills them in. A table, not property wrappers:
/// nothing of it is built before `main` asks, and no general-purpose library comes along with it.
public protocol CommandLineCommand {
  init()
  static var name: String { get }
  static var abstract: String { get }
  static var discussion: String { get }
  /// The line after USAGE: in the help, and under an error.
  static var usage: String { get }
  static var options: [CommandOption<Self>] { get }
  static var positionals: [CommandPositional<Self>] { get }
  static var subcommands: [(name: String, abstract: String)] { get }
}

extension CommandLineCommand {
  public static var positionals: [CommandPositional<Self>] { [] }
  public static var subcommands: [(name: String, abstract: String)] { [] }
}

/// Where a parsed value goes.
public enum CommandTarget<Command> {
  case flag(WritableKeyPath<Command, Bool>)
  case text(WritableKeyPath<Command, String>)
  case optionalText(WritableKeyPath<Command, String?>)
  /// Repeatable: every occurrence is kept, in order.
  case texts(WritableKeyPath<Command, [String]>)
  case integer(WritableKeyPath<Command, Int>)
  case optionalInteger(WritableKeyPath<Command, Int?>)
  case integer32(WritableKeyPath<Command, Int32>)

  var takesValue: Bool {
    if case .flag = self { return false }
    return true
  }
}

/// One option: its spellings (`-s`, `--cache-dir`; several for aliases such as `-R, -u`), the name
/// its value goes by in the help, and what it does.
public struct CommandOption<Command> {
  public let names: [String]
  public let valueName: String?
  public let help: String
  public let target: CommandTarget<Command>
  public let hidden: Bool

  /// A flag: present or not.
  public static func flag(
    _ names: String..., help: String, hidden: Bool = false, _ path: WritableKeyPath<Command, Bool>
  ) -> Self {
    Self(names: names, valueName: nil, help: help, target: .flag(path), hidden: hidden)
  }

  /// An option that takes a value.
  public static func value(
    _ names: String..., valueName: String, help: String, hidden: Bool = false, _ target: CommandTarget<Command>
  ) -> Self {
    Self(names: names, valueName: valueName, help: help, target: target, hidden: hidden)
  }

  /// squeezelite's options (`-n`, `-o`) take the next word whatever it looks like (`-o -`, `-n -x`).
  var isSingleLetter: Bool { names.allSatisfy { $0.count == 2 } }

  /// `-s <host[:port]>`, `-R, -u <[recipe]>`: as the help and the error messages show it.
  var label: String {
    names.joined(separator: ", ") + (valueName.map { " <\($0)>" } ?? "")
  }
}

/// A positional argument, required unless its property is optional.
public struct CommandPositional<Command> {
  public let valueName: String
  public let help: String
  public let target: WritableKeyPath<Command, String?>
  public let required: Bool

  public init(_ valueName: String, help: String, required: Bool, _ target: WritableKeyPath<Command, String?>) {
    self.valueName = valueName
    self.help = help
    self.required = required
    self.target = target
  }
}

/// Why parsing stopped: the help or the version was asked for, or the words are not a valid
/// command line (the message names the word and the option).
public enum CommandLineError: Error, Equatable {
  case helpRequested
  case versionRequested
  case usage(String)
}

extension CommandLineCommand {
  /// Parses `words` (without the program name). Options may come in any order, interleaved with
  /// positionals; `--name=value` and `--name value` are the same; a one-letter option takes the
  /// next word as its value, a long one only a word that is not an option; a later single-value option
  /// replaces an earlier one (a config file's flags come first, so the command line wins); `--`
  /// makes every later word positional.
  public static func parse(_ words: [String]) throws(CommandLineError) -> Self {
    let table = options
    var command = Self()
    var positionalValues: [String] = []
    var index = words.startIndex
    var onlyPositionals = false
    while index < words.endIndex {
      let word = words[index]
      index += 1
      if onlyPositionals || !word.hasPrefix("-") || word == "-" {
        positionalValues.append(word)
        continue
      }
      if word == "--" {
        onlyPositionals = true
        continue
      }
      if word == "-h" || word == "--help" { throw .helpRequested }
      if word == "--version" { throw .versionRequested }
      var name = word
      var attached: String?
      if word.hasPrefix("--"), let equals = word.firstIndex(of: "=") {
        name = String(word[..<equals])
        attached = String(word[word.index(after: equals)...])
      }
      guard let option = table.first(where: { $0.names.contains(name) }) else {
        throw .usage("Unknown option '\(word)'")
      }
      guard option.target.takesValue else {
        if attached != nil { throw .usage("'\(name)' takes no value") }
        if case .flag(let path) = option.target { command[keyPath: path] = true }
        continue
      }
      let value: String
      if let attached {
        value = attached
      } else if index < words.endIndex, option.isSingleLetter || !isOptionName(words[index]) {
        value = words[index]
        index += 1
      } else {
        throw .usage("Missing value for '\(option.label)'")
      }
      try assign(value, to: option, in: &command)
    }
    let known = positionals
    if positionalValues.count > known.count {
      throw .usage("Unexpected argument '\(positionalValues[known.count])'")
    }
    for (position, positional) in known.enumerated() {
      if position < positionalValues.count {
        command[keyPath: positional.target] = positionalValues[position]
      } else if positional.required {
        throw .usage("Missing expected argument '<\(positional.valueName)>'")
      }
    }
    return command
  }

  /// A word that names an option rather than being a value: `-x`, `--name`, but not `-`, `-5` or
  /// an empty word (squeezelite's optional arguments arrive as "").
  private static func isOptionName(_ word: String) -> Bool {
    guard word.hasPrefix("-"), word.count > 1 else { return false }
    let second = word[word.index(after: word.startIndex)]
    return !second.isNumber
  }

  private static func assign(
    _ value: String, to option: CommandOption<Self>, in command: inout Self
  ) throws(CommandLineError) {
    let invalid = CommandLineError.usage("The value '\(value)' is invalid for '\(option.label)'")
    switch option.target {
    case .flag(let path): command[keyPath: path] = true
    case .text(let path): command[keyPath: path] = value
    case .optionalText(let path): command[keyPath: path] = value
    case .texts(let path): command[keyPath: path].append(value)
    case .integer(let path):
      guard let number = Int(value) else { throw invalid }
      command[keyPath: path] = number
    case .optionalInteger(let path):
      guard let number = Int(value) else { throw invalid }
      command[keyPath: path] = number
    case .integer32(let path):
      guard let number = Int32(value) else { throw invalid }
      command[keyPath: path] = number
    }
  }
}
