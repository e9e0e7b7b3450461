extension String {
  /// Without leading and trailing spaces, tabs and line ends.
  public func trimmingWhitespace() -> String {
    // "\r\n" is one Character (a grapheme cluster), equal to neither "\r" nor "\n".
    let isSpace: (Character) -> Bool = {
      $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" || $0 == "\r\n"
    }
    guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) })
    else { return "" }
    return String(self[first...last])
  }
}
