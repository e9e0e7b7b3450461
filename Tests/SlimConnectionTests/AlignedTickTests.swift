import NIOCore
import NIOEmbedded
import SlimConnection
import Testing

@Suite struct AlignedTickTests {
  final class Times {
    var values: [UInt64] = []
  }

  @Test func ticksMadeAtDifferentTimesFireTogetherOnWholePeriods() {
    let loop = EmbeddedEventLoop()
    let second: UInt64 = 1_000_000_000
    loop.advanceTime(to: .uptimeNanoseconds(7 * second + 300_000_000))
    let first = Times()
    let a = AlignedTick(on: loop, every: .seconds(1)) { first.values.append(loop.now.uptimeNanoseconds) }
    loop.advanceTime(by: .milliseconds(450))
    let later = Times()
    let b = AlignedTick(on: loop, every: .seconds(1)) { later.values.append(loop.now.uptimeNanoseconds) }
    loop.advanceTime(to: .uptimeNanoseconds(11 * second + 500_000_000))
    #expect(first.values == [8, 9, 10, 11].map { $0 * second })
    #expect(later.values == [8, 9, 10, 11].map { $0 * second })
    a.cancel()
    b.cancel()
  }

  @Test func aCancelledTickStopsEvenFromItsOwnRun() {
    let loop = EmbeddedEventLoop()
    let runs = Times()
    var tick: AlignedTick?
    tick = AlignedTick(on: loop, every: .milliseconds(100)) {
      runs.values.append(loop.now.uptimeNanoseconds)
      if runs.values.count == 2 { tick?.cancel() }
    }
    loop.advanceTime(by: .seconds(1))
    #expect(runs.values == [100_000_000, 200_000_000])
  }
}
