import AudioBuffers
import Logging
import NIOCore
import NIOPosix
import NetworkSupport
import SlimProto
import Support
import Synchronization

/// What a stream reports to the engine, on the control event loop.
public protocol StreamFetcherDelegate: AnyObject {
  func streamConnected()
  func streamReceivedHead(_ head: HTTPResponseHead)
  func streamReceivedMetadata(_ block: [UInt8])
  /// New body bytes are in the stream ring.
  func streamReceivedData()
  /// The connection is over; `reason` is `.closedNormally` only for a clean end of the body.
  func streamEnded(_ reason: DisconnectReason)
}

/// Fetches one `strm s` stream: connects to the given address, sends the request bytes verbatim,
/// reads the response head, then moves the body into the stream ring with backpressure — it stops
/// reading from the socket while the ring is full, so TCP holds the sender back.
///
/// Everything runs on `eventLoop` except `consumerDrained()`, which the decoder thread calls.
public final class StreamFetcher: @unchecked Sendable {
  public struct Configuration: Sendable {
    public var connectTimeout: TimeAmount = .seconds(10)
    /// No byte for this long while the ring has room: the stream has stalled.
    public var stallTimeout: TimeAmount = .seconds(20)
    public init() {}
  }

  public let eventLoop: any EventLoop
  public weak var delegate: (any StreamFetcherDelegate)?
  private let input: StreamInput
  private let configuration: Configuration
  private let logger: Logger
  private var channel: (any Channel)?
  private(set) var handler: StreamHandler?
  /// Set (by the loop) when reading stopped because the ring was full; cleared by whoever resumes.
  private let paused = Atomic<Bool>(false)

  /// Body bytes received so far (ICY metadata included, the response head not): a reconnecting
  /// HELO reports it and LMS resumes the file at that offset.
  public private(set) var bytesReceived: UInt64 = 0

  public init(
    eventLoop: any EventLoop, input: StreamInput, configuration: Configuration = Configuration(), logger: Logger
  ) {
    self.eventLoop = eventLoop
    self.input = input
    self.configuration = configuration
    self.logger = logger
  }

  /// The socket's receive buffer, set before connecting (it also sets the advertised window).
  static let receiveBufferBytes = 128 * 1024

  /// Starts a stream. `holdBody` (autostart 2/3) keeps the body back until `releaseBody`; `tls`:
  /// an `https` stream (see `StreamCommand.usesTLS`); `oggMetadata`: an Ogg stream, whose links'
  /// comments go to the server as META (see `StreamCommand.carriesOgg`).
  public func open(
    host: String, port: Int, request: [UInt8], holdBody: Bool, tls: Bool = false, oggMetadata: Bool = false
  ) {
    eventLoop.preconditionInEventLoop()
    close()
    bytesReceived = 0
    paused.store(false, ordering: .relaxed)
    let handler = StreamHandler(fetcher: self, request: request, holdBody: holdBody, oggMetadata: oggMetadata)
    self.handler = handler
    // The handler never leaves this loop: the channel is created on it.
    let bound = NIOLoopBound(handler, eventLoop: eventLoop)
    logger.info("stream: connecting to \(host):\(port)\(tls ? " (TLS)" : "")")
    let serverName = tls ? Self.serverName(in: request) : nil
    let logger = logger
    ClientBootstrap(group: eventLoop)
      .connectTimeout(configuration.connectTimeout)
      .channelOption(.autoRead, value: false)
      .channelOption(.maxMessagesPerRead, value: 1)
      // A file arrives at LAN speed and each read is a trip through the event loop and the
      // pipeline: up to 64 KiB per read (a stream at play speed reads what is there). On loopback
      // the event loop's CPU barely changed from 16 KiB; the syscalls are a quarter.
      .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 64 * 1024))
      // When the server closes a finished stream, NIO reads everything the socket holds at once,
      // room in the ring or not; the handler must keep it. Left to autotuning, the kernel's
      // receive buffer grows to megabytes (the rest of a track sent at LAN speed), which became a
      // transient heap buffer of up to 4 MB. 128 KiB still fills a 5 Mbit/s stream over a 200 ms path.
      .channelOption(.socketOption(.so_rcvbuf), value: StreamFetcher.receiveBufferBytes)
      .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          if tls {
            // libssl is loaded here, by the first `https` stream.
            let tlsHandler = try TLSHandler(serverName: serverName) { logger.info("stream: TLS \($0)") }
            try channel.pipeline.syncOperations.addHandler(tlsHandler)
          }
          try channel.pipeline.syncOperations.addHandler(bound.value)
        }
      }
      .connect(hostOrAddress: host, port: port)
      .hop(to: eventLoop)
      .whenComplete { result in
        let handler = bound.value
        guard self.handler === handler else {
          if case .success(let channel) = result { channel.close(promise: nil) }
          return
        }
        switch result {
        case .success(let channel):
          self.channel = channel
          self.scheduleStallCheck(for: handler)
          self.delegate?.streamConnected()
        case .failure(let error):
          self.logger.error("stream: cannot connect to \(host):\(port): \(error)")
          self.finish(handler, reason: .unreachable)
        }
      }
  }

  /// The host the request names (its `Host:` header, without a port), to ask the server for its
  /// certificate (SNI); nil for an address, which SNI does not carry.
  static func serverName(in request: [UInt8]) -> String? {
    let text = String(decoding: request, as: UTF8.self)
    for line in text.split(separator: "\r\n") where line.lowercased().hasPrefix("host:") {
      var host = line.dropFirst(5).trimmingSpaces()
      if let colon = host.lastIndex(of: ":"), !host.hasPrefix("[") { host = String(host[..<colon]) }
      let isAddress = host.hasPrefix("[") || host.allSatisfy { $0.isNumber || $0 == "." }
      return host.isEmpty || isAddress ? nil : host
    }
    return nil
  }

  /// `cont`: let a held direct-stream body through, stripping ICY metadata every `metaInterval` bytes.
  public func releaseBody(metaInterval: Int) {
    eventLoop.preconditionInEventLoop()
    handler?.release(metaInterval: metaInterval)
  }

  /// Ends the stream on the player's initiative (`strm q`, a new `strm s`): no DSCO is due.
  public func close() {
    eventLoop.preconditionInEventLoop()
    handler?.detach()
    handler = nil
    channel?.close(promise: nil)
    channel = nil
  }

  public var isOpen: Bool { handler != nil }

  /// How long the stream has been waiting for bytes with room in the ring; nil while it is not
  /// waiting for the network (closed, ring full, held for `cont`).
  public var stalledFor: TimeAmount? {
    guard let handler, handler.isWaitingForNetwork else { return nil }
    return NIODeadline.now() - handler.lastActivity
  }

  /// Gives up on a stream whose server is gone: the end is reported (`streamEnded`) with `reason`
  /// once the connection has closed, as for a stall.
  public func abandon(reason: DisconnectReason) {
    eventLoop.preconditionInEventLoop()
    handler?.abort(reason: reason)
  }

  /// Decoder thread: it has made room in the ring. Resumes reading if the stream was waiting.
  public func consumerDrained() {
    // A store then a load on each side, as in `Wakeup`: the decoder's `commitRead` then this
    // read of `paused`, against `markPaused`'s store then its read of the ring's space. Without
    // the fence (also in `markPaused`) each load may pass its store and both sides miss the other:
    // reading would stay paused until the decoder's next step. The exchange itself is
    // acquire/release with `markPaused`'s store.
    atomicMemoryFence(ordering: .sequentiallyConsistent)
    guard paused.compareExchange(expected: true, desired: false, ordering: .acquiringAndReleasing).exchanged else {
      return
    }
    eventLoop.execute { self.handler?.resume() }
  }

  // MARK: Called by the handler on the loop

  func received(byteCount: Int) {
    bytesReceived += UInt64(byteCount)
  }

  /// Writes body bytes into the ring; returns how many fit.
  func store(_ bytes: UnsafeRawBufferPointer) -> Int {
    input.ring.write(bytes)
  }

  func readPacing(lastRead: Int) -> ReadPacing {
    ReadPacing.next(lastRead: lastRead, ringFill: input.ring.fill, wantedFill: input.wantedFill)
  }

  func markPaused() {
    paused.store(true, ordering: .releasing)
    atomicMemoryFence(ordering: .sequentiallyConsistent)  // see `consumerDrained`
    // The consumer may have drained between the failed write and this store.
    if input.ring.space > 0 { consumerDrained() }
  }

  func finish(_ handler: StreamHandler, reason: DisconnectReason) {
    guard self.handler === handler else { return }
    self.handler = nil
    channel = nil
    input.markEnded()
    logger.info("stream: ended (\(reason)), \(bytesReceived) bytes")
    delegate?.streamEnded(reason)
  }

  func head(_ head: HTTPResponseHead) { delegate?.streamReceivedHead(head) }
  func metadata(_ block: [UInt8]) { delegate?.streamReceivedMetadata(block) }
  func dataArrived() { delegate?.streamReceivedData() }
  var log: Logger { logger }

  private func scheduleStallCheck(for handler: StreamHandler) {
    let timeout = configuration.stallTimeout
    // On the whole second, with the player's other periodic checks (see `AlignedTick`).
    let second = MonotonicClock.nextTick(every: 1_000_000_000, after: eventLoop.now.uptimeNanoseconds)
    eventLoop.assumeIsolated().scheduleTask(deadline: .uptimeNanoseconds(second)) {
      guard self.handler === handler else { return }
      if handler.isWaitingForNetwork && NIODeadline.now() - handler.lastActivity > timeout {
        self.logger.error("stream: no data for \(timeout.nanoseconds / 1_000_000_000) s, closing")
        // The handler reports the end (DSCO 4) once the connection has closed.
        handler.abort(reason: .timeout)
        return
      }
      self.scheduleStallCheck(for: handler)
    }
  }
}
