/// Decides that the server is gone before its connection times out. LMS sends `strm t` every
/// 5 s; a half-open connection (the server's machine or the network gone) stays quiet without
/// failing. When the live stream also stops delivering while the player has room for it, waiting
/// for the full server timeout would let the buffered audio run out (a 24-bit/96 kHz stream
/// buffers under 10 s), so silence plus a stall is enough. So is silence while the player plays
/// its last buffered track: LMS sends the next track only once the current one is heard, and
/// with the server gone none will come.
public struct ServerLiveness: Equatable, Sendable {
  /// Seconds without any server message, more than one missed heartbeat.
  public var silenceSeconds: Double
  /// Seconds the live stream delivered nothing while the stream ring had room.
  public var stallSeconds: Double

  public init(silenceSeconds: Double = 7, stallSeconds: Double = 2) {
    self.silenceSeconds = silenceSeconds
    self.stallSeconds = stallSeconds
  }

  /// True when the server counts as gone: silent past `silenceSeconds` while the stream has
  /// stalled past `stallSeconds`, or while the player plays with no stream open (it waits for
  /// the server's next track). `silence` is nil while disconnected, `stall` nil while no stream
  /// waits for the network.
  public func serverIsGone(silence: Double?, stall: Double?, playingWithoutStream: Bool = false) -> Bool {
    guard let silence, silence >= silenceSeconds else { return false }
    if playingWithoutStream { return true }
    guard let stall else { return false }
    return stall >= stallSeconds
  }
}
