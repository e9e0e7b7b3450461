/// When to ask the socket for the next bytes. A stream that arrives at play speed (radio, a
/// transcode) brings a few KiB per read; read as it comes, every network packet is a trip through
/// the event loop. While the decoder waits patiently for a worthwhile chunk (it has audio queued,
/// see `StreamInput.wantedFill`), the bytes can wait in the socket's buffer a little longer and be
/// read in one go.
enum ReadPacing: Equatable {
  case now
  case after(milliseconds: Int64)

  /// A read at least this large means the sender is ahead of us: read on at once.
  static let smallReadBytes = 16 * 1024
  /// How long the next read may wait; the socket's 128 KiB buffer holds far more than this much
  /// of any stream slow enough to bring small reads.
  static let delayMilliseconds: Int64 = 100

  /// `lastRead`: bytes the last read brought; `ringFill`: bytes buffered for the decoder;
  /// `wantedFill`: the fill the decoder waits for (0 when it is not waiting).
  static func next(lastRead: Int, ringFill: Int, wantedFill: Int) -> ReadPacing {
    let decoderIsPatient = wantedFill - ringFill > smallReadBytes
    return lastRead < smallReadBytes && decoderIsPatient ? .after(milliseconds: delayMilliseconds) : .now
  }
}
