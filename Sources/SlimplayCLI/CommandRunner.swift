import SlimplayPlayer
import Support

/// A command line that parsed but does not make sense (`-p 0`, `-V` with `-U`): reported like a
/// parse error, with the usage, and exit status 64.
public struct UsageError: Error, CustomStringConvertible {
  public let description: String

  public init(_ description: String) { self.description = description }
}

/// Ends the command with this exit status; what went wrong has been said already.
public struct ExitStatus: Error, Equatable {
  public let code: Int32

  public init(_ code: Int32) { self.code = code }

  public static let failure = ExitStatus(1)
}

/// A command that checks its options as a whole, then runs.
public protocol RunnableCommand: CommandLineCommand {
  mutating func validate() throws
  func run() throws
}

public enum CommandRunner {
  /// Parses, validates and runs; returns the exit status (0, 64 for a usage error, or the
  /// command's own).
  public static func run<Command: RunnableCommand>(_ type: Command.Type, _ words: [String]) -> Int32 {
    do {
      var command = try Command.parse(words)
      try command.validate()
      try command.run()
      return 0
    } catch {
      let (status, message) = outcome(of: error, for: type)
      if status == 0 {
        writeWhole(message, to: 1)
      } else if !message.isEmpty {
        writeWhole(message, to: 2)
      }
      return status
    }
  }

  /// The exit status and the text an error ends the command with: help and version on standard
  /// output with status 0, usage errors with the usage on standard error.
  public static func outcome<Command: CommandLineCommand>(
    of error: any Error, for type: Command.Type
  ) -> (status: Int32, message: String) {
    switch error {
    case CommandLineError.helpRequested: return (0, HelpText.text(for: type))
    case CommandLineError.versionRequested: return (0, SlimplayVersion.string + "\n")
    case CommandLineError.usage(let message): return (64, "Error: \(message)\n" + HelpText.usageHint(for: type))
    case let error as UsageError: return (64, "Error: \(error.description)\n" + HelpText.usageHint(for: type))
    case let error as ExitStatus: return (error.code, "")
    default: return (1, "Error: \(error)\n")
    }
  }

  static func writeWhole(_ text: String, to descriptor: Int32) {
    _ = Array(text.utf8).withUnsafeBytes { POSIXIO.writeAll(descriptor, $0) }
  }
}
