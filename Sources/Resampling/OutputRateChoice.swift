/// Which rate a track of `rate` Hz is played at, given the rates the output takes, as squeezelite
/// chooses it (pure, so the rules are tested without a device):
/// 1. with `E`, the track's own rate when the output takes it, else the lowest supported multiple of it;
/// 2. with `X`, the output's highest rate;
/// 3. otherwise the highest supported rate that is a multiple or a divisor of the track's ("sync"
///    rates: 44.1 kHz → 176.4 kHz, not 192 kHz);
/// 4. failing all that, the output's highest rate.
public enum OutputRateChoice {
  public static func rate(for rate: Int, supported: [Int], recipe: ResampleRecipe) -> Int {
    let descending = supported.filter { $0 > 0 }.sorted(by: >)
    guard rate > 0, let highest = descending.first else { return rate }
    if recipe.onlyUnsupportedRates {
      if descending.contains(rate) { return rate }
      if let multiple = descending.reversed().first(where: { $0 > rate && $0 % rate == 0 }) { return multiple }
    }
    if recipe.toHighestRate { return highest }
    return descending.first { $0 % rate == 0 || rate % $0 == 0 } ?? highest
  }
}
