/// Decides that the server is gone before its connection times out. LMS sends `strm t` every
/// 5 s; a half-open connection (the server's machine or the network gone) stays quiet without
/// failing. When the live stream also stops delivering while the player has room for it, waiting
/// for the full server timeout would let the buffered audio run out (a 24-bit/96 kHz stream
/// buffers under 10 s), so silence plus a stall is enough.
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
  /// stalled past `stallSeconds`. `silence` is nil while disconnected, `stall` nil while no
  /// stream waits for the network.
  public func serverIsGone(silence: Double?, stall: Double?) -> Bool {
    guard let silence, let stall else { return false }
    return silence >= silenceSeconds && stall >= stallSeconds
  }
}
