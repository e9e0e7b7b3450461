/// Where two arrays first differ (or the shorter one ends); nil when they are equal. A failed
/// comparison of whole captures then names one index instead of printing millions of samples.
public func firstDifference<Element: Equatable>(_ got: [Element], _ expected: [Element]) -> Int? {
  let common = min(got.count, expected.count)
  if let index = (0..<common).first(where: { got[$0] != expected[$0] }) { return index }
  return got.count == expected.count ? nil : common
}
