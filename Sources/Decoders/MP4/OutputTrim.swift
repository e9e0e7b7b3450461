/// Which decoded frames of an MP4 track are played, in output frames on the decoder's timeline:
/// the trim (`MP4Trim`) moved to the output rate, and a start mid-track. A decoder that yields
/// nothing for its first frame (libfaad) is covered: such frames count as long as the next one.
struct OutputTrim {
  /// The first frame played.
  private(set) var leading = 0
  private var end = Int.max
  /// Position of the next decoded frame on the track's timeline.
  private var position = 0
  private var silentFrames = 0
  private var timescale = 1
  private var outputRate = 1

  init() {}

  init(mp4 trim: MP4Trim, timescale: Int, outputRate: Int) {
    self.timescale = max(timescale, 1)
    self.outputRate = max(outputRate, 1)
    leading = output(trim.leading)
    if let length = trim.length { end = leading + output(length) }
  }

  // Saturating: figures too large for any track (damage) must not trap.
  private func output(_ media: Int) -> Int { Self.scale(media, by: outputRate, over: timescale) }
  private func media(_ output: Int) -> Int { Self.scale(output, by: timescale, over: outputRate) }

  private static func scale(_ value: Int, by factor: Int, over divisor: Int) -> Int {
    let (product, overflow) = value.multipliedReportingOverflow(by: factor)
    return overflow ? Int.max / 4 : product / divisor
  }

  /// A start `drop` frames into the played range: the sample to begin decoding at (`preroll`
  /// samples before the one that holds the start, for a decoder whose output depends on the
  /// samples before), and how many of the `drop` frames are thereby passed over. The decoded
  /// frames before the start sample's are not played.
  mutating func seek(in table: MP4SampleTable, dropping drop: Int, preroll: Int) -> (firstSample: Int, passedOver: Int)
  {
    let target = table.sample(at: media(leading + drop))
    let start = output(target.start)
    guard target.index > 0, start > leading else { return (0, 0) }
    let first = max(0, target.index - preroll)
    position = output(table.start(of: first))
    let passed = start - leading
    leading = start
    return (first, passed)
  }

  /// The part of the next `frames` decoded frames that is played: `first` frames in, `count` long.
  mutating func keep(frames: Int) -> (first: Int, count: Int) {
    if frames == 0 {
      silentFrames += 1
      return (0, 0)
    }
    position += silentFrames * frames  // the frames that yielded nothing, as long as this one
    silentFrames = 0
    let start = max(position, leading)
    let stop = min(position + frames, end)
    defer { position += frames }
    guard stop > start else { return (0, 0) }
    return (start - position, stop - start)
  }
}
