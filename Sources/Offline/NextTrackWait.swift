/// How long the server's next track is overdue. LMS sends it within milliseconds of both hearing
/// that the player has decoded the last track and hearing that track start, so the wait counts
/// from the later of the two, and only once they concern the same track: a short track decoded
/// while the one before it still plays is not waiting for anything yet.
struct NextTrackWait: Sendable {
  private var decoded: (track: Int, nanoseconds: UInt64)?
  private var started: (track: Int, nanoseconds: UInt64)?

  mutating func trackDecoded(_ track: Int, at nanoseconds: UInt64) { decoded = (track, nanoseconds) }

  mutating func trackStarted(_ track: Int, at nanoseconds: UInt64) { started = (track, nanoseconds) }

  /// The engine track whose successor is awaited, and for how many seconds; nil while none is.
  func overdue(now: UInt64) -> (after: Int, seconds: Double)? {
    guard let decoded, let started, decoded.track == started.track else { return nil }
    let since = max(decoded.nanoseconds, started.nanoseconds)
    return (decoded.track, Double(now - min(now, since)) / 1e9)
  }
}
