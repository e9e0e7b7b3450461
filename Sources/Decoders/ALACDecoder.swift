import AudioBuffers

/// Apple Lossless in MP4 (what LMS sends for an ALAC `.m4a`, format `alc`), decoded here
/// (`ALACFrameDecoder`), bit-exact: output at the stream's own depth (16, 20, 24 or 32 bits)
/// and rate. Mono plays on both sides; of more channels the first pair (front left and right;
/// centre comes first in ALAC's order) is played. The MP4 trim (edit list, `iTunSMPB`) applies.
public final class ALACDecoder: AudioDecoder {
  public var minimumFreeFrames: Int { frameDecoder?.config.frameLength ?? 4096 }
  public private(set) var format: AudioFormat?

  private let demuxer = MP4Demuxer()
  private var frameDecoder: ALACFrameDecoder?
  private var stash: FrameStash?
  private var trim = OutputTrim()
  private var left = 0
  private var right = 0
  private var ended = false

  public init() {}

  /// A stream cut short (the rest of the track is missing).
  public var damage: StreamDamage {
    demuxer.truncation.map { StreamDamage(stretches: 1, last: $0) } ?? StreamDamage()
  }

  public func decode(from input: StreamInput, to output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    if let stash, !stash.drain(to: output) { return .decoded }
    if ended { return .finished }
    switch try demuxer.next(from: input) {
    case .needsInput:
      return .needsInput
    case .end:
      ended = true
      return .finished
    case .track(let track):
      guard case .alac(let cookie) = track.codec else {
        throw .unsupportedStream("MP4 track is AAC, not Apple Lossless")
      }
      let config = try ALACConfig(cookie: cookie)
      frameDecoder = ALACFrameDecoder(config: config)
      stash = FrameStash(capacityFrames: config.frameLength)
      trim = OutputTrim(mp4: track.trim, timescale: track.mediaTimescale, outputRate: config.sampleRate)
      if output.framesToDrop > 0 {
        // A start mid-track: packets are independent, decoding begins at the one that holds it.
        let seek = trim.seek(in: track.samples, dropping: output.framesToDrop, preroll: 0)
        try demuxer.skipSamples(seek.firstSample)
        output.passedOver(frames: seek.passedOver)
      }
      (left, right) = config.channels == 1 ? (0, 0) : config.channels == 2 ? (0, 1) : (1, 2)
      format = AudioFormat(sampleRate: config.sampleRate, channels: config.channels, bitsPerSample: config.bitDepth)
      return .decoded
    case .sample(let packet):
      guard let frameDecoder, let stash, let format else { return .decoded }
      let frames = try frameDecoder.decode(packet: packet)
      let kept = trim.keep(frames: frames)
      guard kept.count > 0 else { return .decoded }
      let l = frameDecoder.samples(ofChannel: left) + kept.first
      let r = frameDecoder.samples(ofChannel: right) + kept.first
      let shift = Int32(32 - format.bitsPerSample)
      stash.emit(count: kept.count, format: format, to: output) { destination, first, n in
        for i in 0..<n {
          destination[2 * i] = l[first + i] &<< shift
          destination[2 * i + 1] = r[first + i] &<< shift
        }
      }
      return .decoded
    }
  }
}
