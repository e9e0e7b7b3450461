import AudioBuffers
import Logging
import NIOCore
import Support
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Feeds a local file (a cached track) into the stream ring, as `StreamFetcher` feeds a network
/// stream: it fills the ring, waits while it is full and marks the input ended at the last byte.
/// Reads are of a local file in 64 KiB steps, short enough to run on the event loop.
public final class FileStreamer: @unchecked Sendable {
  public let eventLoop: any EventLoop
  private let input: StreamInput
  private let logger: Logger
  private var descriptor: Int32 = -1
  private let paused = Atomic<Bool>(false)
  /// Called on the loop after each fill, so the decoder can be woken.
  public var dataArrived: (() -> Void)?
  /// Called on the loop when the file cannot be read to its end.
  public var failed: ((String) -> Void)?
  /// Called on the loop once the whole file is in the ring (true) or reading it failed (false).
  public var ended: ((Bool) -> Void)?

  public init(eventLoop: any EventLoop, input: StreamInput, logger: Logger) {
    self.eventLoop = eventLoop
    self.input = input
    self.logger = logger
  }

  public var isOpen: Bool { descriptor >= 0 }
  /// Bytes of the current (or last) file put into the ring.
  public private(set) var bytesRead: UInt64 = 0

  /// Starts feeding `path`. The ring must be empty and reopened by the caller.
  public func open(path: String) -> Bool {
    eventLoop.preconditionInEventLoop()
    close()
    let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else {
      logger.error("cannot open \(path): \(errorText(errno))")
      return false
    }
    descriptor = fd
    bytesRead = 0
    paused.store(false, ordering: .relaxed)
    pump()
    return true
  }

  public func close() {
    if descriptor >= 0 { Glibc.close(descriptor) }
    descriptor = -1
  }

  /// Decoder thread: room was made in the ring. The fence pairs with `pump`'s, as in
  /// `StreamFetcher.consumerDrained`: the ring's `commitRead` and `paused` are each stored by one
  /// side and read by the other, and neither side may miss both.
  public func consumerDrained() {
    atomicMemoryFence(ordering: .sequentiallyConsistent)
    guard paused.compareExchange(expected: true, desired: false, ordering: .acquiringAndReleasing).exchanged else {
      return
    }
    eventLoop.execute { self.pump() }
  }

  private func pump() {
    guard descriptor >= 0 else { return }
    var moved = false
    while true {
      let region = input.ring.writableRegion()
      guard region.count > 0 else {
        paused.store(true, ordering: .releasing)
        atomicMemoryFence(ordering: .sequentiallyConsistent)  // see `consumerDrained`
        // The consumer may have drained between the check and the store.
        if input.ring.space > 0 { consumerDrained() }
        break
      }
      let n: Int
      switch POSIXIO.read(descriptor, into: region.baseAddress, count: min(region.count, 64 * 1024)) {
      case .success(let count): n = count
      case .failure(let failure):
        close()
        input.markEnded()
        failed?("read error: \(failure)")
        ended?(false)
        n = -1
      }
      if n < 0 { break }
      if n == 0 {
        close()
        input.markEnded()
        ended?(true)
        break
      }
      input.ring.commitWrite(n)
      bytesRead += UInt64(n)
      moved = true
      // One step per turn of the loop while the ring takes more, so the loop stays responsive.
      if input.ring.space > 0 {
        eventLoop.execute { self.pump() }
        break
      }
    }
    if moved || !isOpen { dataArrived?() }
  }
}
