/// How one track begins relative to the one before it (`strm s` transition fields).
public struct Transition: Equatable, Sendable {
  public enum Kind: Equatable, Sendable {
    case none
    /// The old track's end and the new track's start overlap, mixed linearly.
    case crossfade
    case fadeIn
    /// The old track's end fades to silence.
    case fadeOut
    /// Half the time fading the old track out, half fading the new one in.
    case fadeOutIn
  }

  public var kind: Kind
  public var seconds: Int

  public init(kind: Kind = .none, seconds: Int = 0) {
    self.kind = seconds > 0 ? kind : .none
    self.seconds = seconds
  }
}

/// Linear 16.16 ramps for fades and crossfades: position i of n weighs i × 65536 / n.
public enum Ramp {
  public static func weight(_ position: Int, of length: Int) -> Int64 {
    Int64(min(max(position, 0), length)) * 0x10000 / Int64(max(1, length))
  }

  /// Scales frames by the ramp from `position` on: rising (fade in) or falling (fade out).
  public static func apply(
    to samples: UnsafeMutableBufferPointer<Int32>, from position: Int, of length: Int, falling: Bool
  ) {
    var frame = 0
    while 2 * frame + 1 < samples.count {
      let rising = weight(position + frame, of: length)
      let g = falling ? 0x10000 - rising : rising
      samples[2 * frame] = Int32((Int64(samples[2 * frame]) * g) >> 16)
      samples[2 * frame + 1] = Int32((Int64(samples[2 * frame + 1]) * g) >> 16)
      frame += 1
    }
  }

  /// Mixes `incoming` into `outgoing` in place: old × (1 − g) + new × g, g rising from `position`.
  public static func crossfade(
    _ outgoing: UnsafeMutableBufferPointer<Int32>, with incoming: UnsafeBufferPointer<Int32>, from position: Int,
    of length: Int
  ) {
    var frame = 0
    while 2 * frame + 1 < outgoing.count && 2 * frame + 1 < incoming.count {
      let g = weight(position + frame, of: length)
      for index in (2 * frame)...(2 * frame + 1) {
        let mixed = (Int64(outgoing[index]) * (0x10000 - g) + Int64(incoming[index]) * g) >> 16
        outgoing[index] = Int32(clamping: mixed)
      }
      frame += 1
    }
  }
}
