import SlimProto

/// LMS's LocalPlayer extension: on the server's own machine (`loc` in HELO) a `strm s` to
/// 127.0.0.1:3483 names a file instead of sending it. It plays through the pipeline's file source,
/// and its progress is reported as a network stream's would be.
extension StreamingEngine {
  /// Body bytes of the server's latest stream (squeezelite counts a local file's bytes the same way).
  var streamBytesReceived: UInt64 {
    streamOrigin == .serversFile ? pipeline.fileStreamer.bytesRead : fetcher.bytesReceived
  }

  /// The file source tells of its end; only the server's file reports it (DSCO).
  func reportServersFileEnds() {
    pipeline.fileStreamer.ended = { [weak self] complete in
      guard let self, self.streamOrigin == .serversFile else { return }
      self.streamEnded(complete ? .closedNormally : .remoteReset)
    }
  }

  /// LocalPlayer: the server shares this machine and names a file instead of sending it; it is
  /// read as squeezelite reads it (connected at once, no response head, the end as a clean close).
  func openServersFile(_ path: String) {
    logger.info("stream: local file \(path)")
    guard pipeline.openFile(path: path) else {
      input.markEnded()
      streamEnded(.unreachable)
      return
    }
    // An empty file has already ended, before anyone could hear of it: its end follows the connect.
    let endedAtOnce = !pipeline.sourceIsOpen
    onEvent?(.status(.connecting))
    if endedAtOnce { streamEnded(.closedNormally) }
  }
}
