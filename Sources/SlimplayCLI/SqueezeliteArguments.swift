/// squeezelite's command line made explicit for the parser. squeezelite reads its own words: some
/// options take their argument only when the next word does not start with `-` (`-R`, `-u`, `-D`,
/// `-i`, `-G`), and `-?` asks for the help. Those options get an explicit empty argument when
/// it was left out, so a line that starts squeezelite starts slimplay.
public enum SqueezeliteArguments {
  /// Options whose argument squeezelite lets you leave out.
  static let optionalArgument: Set<String> = ["-R", "-u", "-D", "-i", "-G"]
  /// Options that always take the next word, whatever it looks like (`-o -`, `-n -R`).
  static let requiredArgument: Set<String> = [
    "-o", "-a", "-b", "-c", "-C", "-d", "-e", "-f", "-m", "-M", "-n", "-N", "-p", "-P", "-r", "-s", "-S", "-Z",
    "-U", "-V", "-O",
  ]

  public static func normalize(_ arguments: [String]) -> [String] {
    var result: [String] = []
    var index = arguments.startIndex
    while index < arguments.endIndex {
      let word = arguments[index]
      index += 1
      if word == "--" || word == "ctl" && result.isEmpty {
        result += arguments[(index - 1)...]
        break
      }
      if word == "-?" {
        result.append("--help")
      } else if requiredArgument.contains(word), index < arguments.endIndex {
        result += [word, arguments[index]]
        index += 1
      } else if optionalArgument.contains(word) {
        let taken = index < arguments.endIndex && !arguments[index].hasPrefix("-")
        result += [word, taken ? arguments[index] : ""]
        if taken { index += 1 }
      } else {
        result.append(word)
      }
    }
    return result
  }
}
