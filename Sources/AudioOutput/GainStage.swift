/// How a track's channels reach the output (`strm s` flags).
public enum ChannelMode: Equatable, Sendable {
  case stereo
  /// Left channel on both outputs.
  case leftOnly
  /// Right channel on both outputs.
  case rightOnly
  /// (L + R) / 2 on both outputs.
  case mono
}

/// What the output does to one track's frames besides the server's volume.
public struct TrackTreatment: Equatable, Sendable {
  /// 16.16 replay gain from `strm s`; 0 means none.
  public var replayGain: UInt32 = 0
  public var channels = ChannelMode.stereo
  public var invertLeft = false
  public var invertRight = false
  /// How the track begins after the one before it.
  public var transition = Transition()

  public init(
    replayGain: UInt32 = 0, channels: ChannelMode = .stereo, invertLeft: Bool = false, invertRight: Bool = false,
    transition: Transition = Transition()
  ) {
    self.replayGain = replayGain
    self.channels = channels
    self.invertLeft = invertLeft
    self.invertRight = invertRight
    self.transition = transition
  }
}

/// The gains actually applied: server volume × replay gain, signed for polarity, 16.16.
public struct ChannelGains: Equatable, Sendable {
  public var left: Int64
  public var right: Int64
  public var channels: ChannelMode

  public static let unity = ChannelGains(left: 0x10000, right: 0x10000, channels: .stereo)

  public init(left: Int64, right: Int64, channels: ChannelMode) {
    self.left = left
    self.right = right
    self.channels = channels
  }

  public init(volumeLeft: UInt32, volumeRight: UInt32, treatment: TrackTreatment) {
    let replay = treatment.replayGain == 0 ? Int64(0x10000) : Int64(treatment.replayGain)
    left = (Int64(volumeLeft) * replay) >> 16
    right = (Int64(volumeRight) * replay) >> 16
    if treatment.invertLeft { left = -left }
    if treatment.invertRight { right = -right }
    channels = treatment.channels
  }

  /// True when the frames pass unchanged: the bit-exact path.
  public var isIdentity: Bool { self == .unity }
  /// Magnitudes other than 1 leave information below 16 bits: dither when reducing.
  public var needsDither: Bool { abs(left) != 0x10000 || abs(right) != 0x10000 || channels == .mono }
}

/// Applies gains and channel treatment to interleaved stereo frames in place, saturating.
public enum GainStage {
  public static let unity: UInt32 = 0x10000

  public static func apply(_ gains: ChannelGains, to samples: UnsafeMutableBufferPointer<Int32>) {
    guard !gains.isIdentity else { return }
    var i = 0
    while i + 1 < samples.count {
      var left = Int64(samples[i])
      var right = Int64(samples[i + 1])
      switch gains.channels {
      case .stereo: break
      case .leftOnly: right = left
      case .rightOnly: left = right
      case .mono:
        let mixed = (left + right) >> 1
        (left, right) = (mixed, mixed)
      }
      samples[i] = Int32(clamping: (left * gains.left) >> 16)
      samples[i + 1] = Int32(clamping: (right * gains.right) >> 16)
      i += 2
    }
  }
}
