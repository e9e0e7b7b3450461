import SlimplayCLI
import SlimplayPlayer
import Testing

@Suite("-b buffer sizes")
struct BufferSizesTests {
  @Test func streamAndOutputInKB() throws {
    let b = try settings(["-b", "1024:2048"]).buffers
    #expect(b.streamBytes == 1024 * 1024)
    #expect(b.outputBytes == 2048 * 1024)
  }

  @Test func defaultsMatchSqueezeliteWithoutTheCache() throws {
    let b = try settings(["--no-offline"]).buffers
    #expect(b.streamBytes == 2_097_152)
    #expect(b.outputBytes == 3_528_000)
  }

  @Test func withTheCacheTheBuffersAreSmaller() throws {
    let b = try settings([]).buffers
    #expect(b.streamBytes == 1_048_576)
    #expect(b.outputBytes == 2_116_800)  // 6 s of 44.1 kHz stereo s32
    // An output size alone keeps the stream's default, and the other way round.
    #expect(try settings(["-b", ":4096"]).buffers.streamBytes == 1_048_576)
    #expect(try settings(["-b", "512"]).buffers.outputBytes == 2_116_800)
    #expect(try settings(["--no-offline", "-b", ":4096"]).buffers.streamBytes == 2_097_152)
  }

  @Test func oneFieldOrAnEmptyField() throws {
    let streamOnly = try BufferSizes(parsing: "512")
    #expect(streamOnly.streamBytes == 512 * 1024)
    #expect(streamOnly.outputBytes == 3_528_000)
    let outputOnly = try BufferSizes(parsing: ":4096")
    #expect(outputOnly.streamBytes == 2_097_152)
    #expect(outputOnly.outputBytes == 4096 * 1024)
    #expect(!streamOnly.outputIsGiven && outputOnly.outputIsGiven)
  }

  @Test func resamplingGrowsTheOutputBufferUnlessItWasGiven() throws {
    let defaults = BufferSizes.withCache()
    #expect(defaults.outputBytes(resamplingTo: 44100) == defaults.outputBytes)
    #expect(defaults.outputBytes(resamplingTo: 96000) == 2 * defaults.outputBytes)
    #expect(defaults.outputBytes(resamplingTo: 192_000) == 4 * defaults.outputBytes)
    #expect(defaults.outputBytes(resamplingTo: 768_000) == 8 * defaults.outputBytes)
    #expect(defaults.outputBytes(resamplingTo: 8000) == defaults.outputBytes)
    let given = try BufferSizes(parsing: "512:2048")
    #expect(given.outputBytes(resamplingTo: 192_000) == 2048 * 1024)
    #expect(try BufferSizes(parsing: "512:").outputBytes(resamplingTo: 96000) == 2 * 3_528_000)
  }

  @Test(arguments: ["32", "1024:10", "1:2:3", "x:y", "-5"])
  func badSizesThrow(_ text: String) {
    #expect(throws: OptionError.self) { try BufferSizes(parsing: text) }
  }
}
