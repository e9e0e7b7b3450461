import AudioBuffers
import Decoders

/// `-R`/`-u`: what the resampler needs to know, fixed for the player's life.
public struct ResamplingSettings: Equatable, Sendable {
  public var recipe: ResampleRecipe
  /// The rates the output takes (any order).
  public var supportedRates: [Int]

  public init(recipe: ResampleRecipe, supportedRates: [Int]) {
    self.recipe = recipe
    self.supportedRates = supportedRates
  }
}

/// A decoder whose frames are played at the rate `OutputRateChoice` picks: the codec's decoder
/// writes into a small staging ring, and its frames move on to the output as they are, or through
/// a libsoxr `Resampler`. To everything after it, the track simply is a track at the output rate:
/// frame counts, positions and elapsed times are all in output frames, and a track decoded again
/// from its start (a source switch) is resampled to the very same frames.
///
/// The resampler is flushed at the end of the track (and before a change of rate within it), so
/// every track is resampled on its own, as squeezelite does. Decoder thread only; nothing here
/// allocates once the route is chosen.
public final class ResamplingDecoder: AudioDecoder {
  private enum Route {
    case undecided
    case direct(AudioFormat)
    case resampling(Resampler, input: AudioFormat, output: AudioFormat)

    var inputRate: Int? {
      switch self {
      case .undecided: nil
      case .direct(let format): format.sampleRate
      case .resampling(_, let input, _): input.sampleRate
      }
    }
  }

  static let stagingFrames = 16384

  private let inner: any AudioDecoder
  private let settings: ResamplingSettings
  private let staging: FrameOutput
  private var route = Route.undecided
  private var innerFinished = false

  public init(wrapping inner: any AudioDecoder, settings: ResamplingSettings) {
    self.inner = inner
    self.settings = settings
    staging = FrameOutput(capacityFrames: max(Self.stagingFrames, 2 * inner.minimumFreeFrames))
    staging.beginTrack(id: 0)
  }

  public var minimumFreeFrames: Int { inner.minimumFreeFrames }
  public var damage: StreamDamage { inner.damage }
  public var content: String? { inner.content }

  public var format: AudioFormat? {
    switch route {
    case .undecided: nil
    case .direct(let format): format
    case .resampling(_, _, let output): output
    }
  }

  public func decode(from input: StreamInput, to output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    let readFrame = staging.ring.totalConsumed / OutputFrames.bytesPerFrame
    // A format begins at the staging read position: finish the old rate's resampler, then choose.
    if let boundary = staging.boundaries.peek(), boundary.frame <= readFrame {
      if route.inputRate != boundary.format.sampleRate, case .resampling(let resampler, _, let outputFormat) = route {
        if try flush(resampler, as: outputFormat, to: output) { return .decoded }
      }
      staging.boundaries.pop()
      try choose(for: boundary.format)
    }
    var available = staging.bufferedFrames
    if let next = staging.boundaries.peek() { available = min(available, next.frame - readFrame) }
    if available > 0 {
      try move(available, to: output)
      return .decoded
    }
    if !innerFinished {
      let progress = try inner.decode(from: input, to: staging)
      guard progress == .finished else { return progress }
      innerFinished = true
      return .decoded
    }
    if case .resampling(let resampler, _, let outputFormat) = route, try flush(resampler, as: outputFormat, to: output)
    {
      return .decoded
    }
    return .finished
  }

  private func choose(for input: AudioFormat) throws(DecodeError) {
    guard !input.encoding.isBitstream else {
      route = .direct(input)  // DSD bits: the DAC needs them as they are
      return
    }
    if case .resampling(let resampler, let current, var output) = route, current.sampleRate == input.sampleRate {
      // Same rate, other details: the resampler goes on.
      output.bitsPerSample = input.bitsPerSample
      output.channels = input.channels
      route = .resampling(resampler, input: input, output: output)
      return
    }
    let rate = OutputRateChoice.rate(
      for: input.sampleRate, supported: settings.supportedRates, recipe: settings.recipe)
    guard rate != input.sampleRate else {
      route = .direct(input)
      return
    }
    do {
      let resampler = try Resampler(from: input.sampleRate, to: rate, recipe: settings.recipe)
      let output = AudioFormat(
        sampleRate: rate, channels: input.channels, bitsPerSample: input.bitsPerSample,
        resampledFrom: input.sampleRate)
      route = .resampling(resampler, input: input, output: output)
    } catch {
      throw .library(error.description)
    }
  }

  /// Moves up to `frames` staged frames on, as many as the output takes now (none while its
  /// boundary queue is full: the caller comes back, as with any decoder).
  private func move(_ frames: Int, to output: FrameOutput) throws(DecodeError) {
    let staged = staging.ring.readableRegion()
    let count = min(frames, staged.count / OutputFrames.bytesPerFrame)
    let region = output.writableSamples()
    let room = region.count / OutputFrames.samplesPerFrame
    guard count > 0, room > 0, let source = staged.baseAddress?.assumingMemoryBound(to: Int32.self),
      let destination = region.baseAddress
    else { return }
    switch route {
    case .undecided:
      return
    case .direct(let format):
      let moved = min(count, room)
      destination.update(from: source, count: moved * OutputFrames.samplesPerFrame)
      guard output.commit(frames: moved, format: format) else { return }
      staging.ring.commitRead(moved * OutputFrames.bytesPerFrame)
    case .resampling(let resampler, _, let format):
      // The resampler cannot take its frames back: commit only where the commit is sure.
      guard output.acceptsCommit(format: format) else { return }
      let result: (used: Int, produced: Int)
      do {
        result = try resampler.process(source, frames: count, into: destination, capacity: room)
      } catch {
        throw .library(error.description)
      }
      staging.ring.commitRead(result.used * OutputFrames.bytesPerFrame)
      if result.produced > 0 { _ = output.commit(frames: result.produced, format: format) }
    }
  }

  /// One flush step; true while the filter still had frames to write.
  private func flush(_ resampler: Resampler, as format: AudioFormat, to output: FrameOutput) throws(DecodeError) -> Bool
  {
    let region = output.writableSamples()
    let room = region.count / OutputFrames.samplesPerFrame
    guard room > 0, let destination = region.baseAddress, output.acceptsCommit(format: format) else { return true }
    let produced: Int
    do {
      produced = try resampler.flush(into: destination, capacity: room)
    } catch {
      throw .library(error.description)
    }
    guard produced > 0 else { return false }
    _ = output.commit(frames: produced, format: format)
    return true
  }
}
