import AudioBuffers
import AudioOutput
import Decoders
import Logging
import NIOCore
import SlimConnection
import SlimProto
import StreamFetch
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// What a `strm s` asks for, worked out without touching the pipeline: the track's treatment,
/// its decoder and its start time on the player's clock.
extension StreamingEngine {
  /// Replay gain and channel flags of a `strm s`. Each inversion bit acts on its own channel
  /// (squeezelite inverts only when both are set); both channel-select bits mean a mono mix.
  static func treatment(for command: StreamCommand) -> TrackTreatment {
    let flags = command.flags
    let channels: ChannelMode
    switch (flags.contains(.leftOnly), flags.contains(.rightOnly)) {
    case (true, true): channels = .mono
    case (true, false): channels = .leftOnly
    case (false, true): channels = .rightOnly
    case (false, false): channels = .stereo
    }
    let kind: Transition.Kind
    switch command.transitionType {
    case .none: kind = .none
    case .crossfade, .immediateCrossfade: kind = .crossfade
    case .fadeIn: kind = .fadeIn
    case .fadeOut: kind = .fadeOut
    case .fadeInOut: kind = .fadeOutIn
    }
    return TrackTreatment(
      replayGain: command.value, channels: channels, invertLeft: flags.contains(.invertLeft),
      invertRight: flags.contains(.invertRight),
      transition: Transition(kind: kind, seconds: Int(min(command.transitionPeriod, 10))))
  }

  /// Registers a `strm s`'s treatment for its track, logging a transition the server asks for
  /// (its crossfade setting, or a fade-in on a resume).
  func applyTreatment(of command: StreamCommand, toTrack id: Int) {
    let treatment = Self.treatment(for: command)
    if treatment.transition.kind != .none {
      let transition = treatment.transition
      logger.info("track \(id): \(transition.kind) over \(transition.seconds) s, as the server asks")
    }
    player.setTreatment(treatment, forTrack: id)
  }

  /// LMS's sync check moving this player against the group: `strm p <ms>` plays that much
  /// silence, `strm a <ms>` skips that much output. Logged: a listener hears it.
  func adjustForSync(_ command: StreamCommand) {
    if command.command == .skipAhead {
      logger.info("sync: the server asks to skip \(command.value) ms")
      player.skip(milliseconds: Int(command.value))
    } else {
      logger.info("sync: the server asks for \(command.value) ms of silence")
      player.insertSilence(milliseconds: Int(command.value))
    }
  }

  /// The CLOCK_MONOTONIC time (ns) at which our jiffies clock reads `jiffies` next (or just read it).
  static func monotonicTime(ofJiffies jiffies: UInt32) -> UInt64 {
    let nowMs = MonotonicClock.milliseconds()
    let base = nowMs & ~UInt64(0xffff_ffff)
    var target = base | UInt64(jiffies)
    // Pick the reading closest to now (the 32-bit clock wraps every 49.7 days).
    if target + 0x8000_0000 < nowMs { target += 0x1_0000_0000 }
    if target > nowMs + 0x8000_0000 { target -= 0x1_0000_0000 }
    return target * 1_000_000
  }
}
