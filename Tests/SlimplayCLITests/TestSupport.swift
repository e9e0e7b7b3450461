import SlimplayCLI
import SlimplayPlayer

/// Parses a command line as `slimplay` would, then validates it into settings.
func settings(_ arguments: [String]) throws -> PlayerSettings {
  try SlimplayCommand.parse(SqueezeliteArguments.normalize(arguments)).settings()
}

/// The user-facing message for a command-line error.
func errorMessage(_ arguments: [String]) -> String? {
  do {
    _ = try settings(arguments)
    return nil
  } catch {
    return CommandRunner.outcome(of: error, for: SlimplayCommand.self).message
  }
}
