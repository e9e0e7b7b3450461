import CSoxr

public struct ResamplerError: Error, Equatable, CustomStringConvertible {
  public let description: String
}

/// One libsoxr resampler for one track: interleaved stereo Int32 in and out, used on the decoder
/// thread only. Its output depends only on its input, not on how the input is split into calls,
/// so a track resampled again from its start gives the same frames.
public final class Resampler {
  public let inputRate: Int
  public let outputRate: Int
  private let handle: UnsafeMutableRawPointer

  public init(from inputRate: Int, to outputRate: Int, recipe: ResampleRecipe) throws(ResamplerError) {
    self.inputRate = inputRate
    self.outputRate = outputRate
    var spec = recipe.soxrSpec
    var failure: UnsafePointer<CChar>?
    guard let handle = slimplay_soxr_create(Double(inputRate), Double(outputRate), &spec, &failure) else {
      throw ResamplerError(
        description: "libsoxr: " + (failure.map { String(cString: $0) } ?? "cannot create a resampler"))
    }
    self.handle = handle
  }

  deinit {
    slimplay_soxr_delete(handle)
  }

  /// Whether libsoxr can be loaded; nil if so, else why not.
  public static func libraryProblem() -> String? {
    slimplay_soxr_load().map { String(cString: $0) }
  }

  /// Takes up to `frames` input frames and writes up to `capacity` output frames.
  public func process(
    _ input: UnsafePointer<Int32>, frames: Int, into output: UnsafeMutablePointer<Int32>, capacity: Int
  ) throws(ResamplerError) -> (used: Int, produced: Int) {
    var used = 0
    var produced = 0
    if let failure = slimplay_soxr_process(handle, input, frames, &used, output, capacity, &produced) {
      throw ResamplerError(description: "libsoxr: " + String(cString: failure))
    }
    return (used, produced)
  }

  /// After the last input: writes up to `capacity` of the frames the filter still holds; 0 once
  /// every one was written.
  public func flush(into output: UnsafeMutablePointer<Int32>, capacity: Int) throws(ResamplerError) -> Int {
    var produced = 0
    if let failure = slimplay_soxr_process(handle, nil, 0, nil, output, capacity, &produced) {
      throw ResamplerError(description: "libsoxr: " + String(cString: failure))
    }
    return produced
  }

  /// Samples clipped so far (the attenuation is there to keep this at 0).
  public var clippedSamples: Int { slimplay_soxr_clips(handle) }
}
