/// A producer of the stream ring: the network stream of a `strm s` (`StreamFetcher`) or a cached
/// file (`FileStreamer`). The pipeline lets one write at a time: opening one closes the other.
///
/// Everything runs on the control event loop except `consumerDrained()`.
public protocol StreamSource: AnyObject, Sendable {
  /// Bytes may still come.
  var isOpen: Bool { get }
  /// Stops writing at once; no end is reported.
  func close()
  /// Decoder thread: it made room in the ring. Resumes a source that waits for room.
  func consumerDrained()
}

extension StreamFetcher: StreamSource {}
extension FileStreamer: StreamSource {}
