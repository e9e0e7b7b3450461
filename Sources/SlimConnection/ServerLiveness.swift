/// Decides that the server is gone before its connection times out. LMS sends `strm t` every
/// 5 s; a half-open connection (the server's machine or the network gone) stays quiet without
/// failing. When the live stream also stops delivering while the player has room for it, waiting
/// for the full server timeout would let the buffered audio run out (a 24-bit/96 kHz stream
/// buffers under 10 s), so silence plus a stall is enough. So is silence while the player plays
/// its last buffered track: LMS sends the next track only once the current one is heard, and
/// with the server gone none will come.
///
/// Silence alone can come too late: how long the buffers last depends on the stream's bitrate,
/// the rings' sizes and how near the end of a track the network went. So when the player has
/// waited on the server (a stream stalled for `stallSeconds`, or a next track overdue by
/// `nextTrackOverdueSeconds`: LMS sends it within milliseconds of hearing the player is ready)
/// and the cache holds what it waits for, the server is judged gone, silent or not, once the
/// audio left falls to `starvingSeconds`: the handoff then comes before the output runs dry. A
/// server merely slow costs a reconnect and a resync instead of a gap.
public struct ServerLiveness: Equatable, Sendable {
  /// Seconds without any server message, more than one missed heartbeat.
  public var silenceSeconds: Double
  /// Seconds the live stream delivered nothing while the stream ring had room.
  public var stallSeconds: Double
  /// Seconds of decoded audio left at which a stalled stream with a cached copy is given up on.
  /// The handoff needs a fraction of a second (a cached file opened, its first frames decoded);
  /// the rest is the server's time. A sync group's next track waits for every member's STMd, and
  /// a loaded LMS 7.9.1 and 8.3.0 were seen to send it 3.2 s after the members' (6 s of output),
  /// past a rule of 3 s left: each member then judged its server gone and resynced again.
  public var starvingSeconds: Double
  /// Seconds after the last track was decoded by which the server's next track is overdue. Once
  /// a track is decoded only the output ring's audio is left (2.3 s at 192 kHz), so this is short.
  public var nextTrackOverdueSeconds: Double = 1

  public init(silenceSeconds: Double = 7, stallSeconds: Double = 2, starvingSeconds: Double = 2) {
    self.silenceSeconds = silenceSeconds
    self.stallSeconds = stallSeconds
    self.starvingSeconds = starvingSeconds
  }

  /// `serverIsGone(silence:stall:playingWithoutStream:)`, or the player starving (`isStarving`).
  /// `silence` nil (disconnected) is never a gone server.
  public func serverIsGone(silence: Double?, health: StreamHealth) -> Bool {
    guard silence != nil else { return false }
    if isStarving(health) { return true }
    return serverIsGone(
      silence: silence, stall: health.stalledSeconds, playingWithoutStream: health.playingWithoutStream)
  }

  /// Waited on the server (see the type's comment) with at most `starvingSeconds` of audio left
  /// and a cached copy of what it waits for.
  public func isStarving(_ health: StreamHealth) -> Bool {
    guard health.cacheCanContinue, let left = health.secondsBuffered, left <= starvingSeconds else { return false }
    if let stall = health.stalledSeconds { return stall >= stallSeconds }
    if let waited = health.waitingForNextTrackSeconds { return waited >= nextTrackOverdueSeconds }
    return false
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
