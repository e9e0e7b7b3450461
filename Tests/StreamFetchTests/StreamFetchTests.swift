import AudioBuffers
import Logging
import NIOCore
import NIOPosix
import SlimProto
import Support
import Synchronization
import TestSupport
import Testing

@testable import StreamFetch

#if canImport(Glibc)
  import Glibc
#endif

/// What the fetcher reported, in order.
final class FetchLog: StreamFetcherDelegate, Sendable {
  enum Entry: Equatable {
    case connected, head([UInt8]), ended(DisconnectReason)
  }
  private let entries = Mutex<[Entry]>([])
  var all: [Entry] { entries.withLock { $0 } }
  var ending: DisconnectReason? {
    all.compactMap { if case .ended(let reason) = $0 { reason } else { nil } }.first
  }

  func streamConnected() { entries.withLock { $0.append(.connected) } }
  func streamReceivedHead(_ head: HTTPResponseHead) { entries.withLock { $0.append(.head(head.raw)) } }
  func streamReceivedMetadata(_ block: [UInt8]) {}
  func streamReceivedData() {}
  func streamEnded(_ reason: DisconnectReason) { entries.withLock { $0.append(.ended(reason)) } }
}

@Suite("StreamFetch", .timeLimit(.minutes(1)))
struct StreamFetchTests {
  let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

  private func fetch(
    port: Int, ringBytes: Int, request: [UInt8] = Array("GET /stream.flac HTTP/1.0\r\n\r\n".utf8),
    consume: (StreamInput, StreamFetcher) -> Void
  ) throws -> FetchLog {
    let input = StreamInput(capacity: ringBytes)
    let loop = group.next()
    let log = FetchLog()
    let fetcher = StreamFetcher(eventLoop: loop, input: input, logger: Logger(label: "test"))
    try loop.submit {
      fetcher.delegate = log
      fetcher.open(host: "127.0.0.1", port: port, request: request, holdBody: false)
    }.wait()
    consume(input, fetcher)
    return log
  }

  /// Reads the ring as the decoder does, telling the fetcher each time it made room.
  private func drain(_ input: StreamInput, _ fetcher: StreamFetcher, until done: () -> Bool) -> [UInt8] {
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1500)
    let deadline = MonotonicClock.nanoseconds() + 20_000_000_000
    while MonotonicClock.nanoseconds() < deadline {
      let n = chunk.withUnsafeMutableBytes { input.read(into: $0) }
      if n > 0 {
        received += chunk[0..<n]
        fetcher.consumerDrained()
      } else if input.hasEnded && input.ring.fill == 0 && done() {
        break
      } else {
        usleep(200)
      }
    }
    return received
  }

  @Test func aBodyLargerThanTheRingArrivesWholeAndInOrderThroughBackpressure() throws {
    defer { try? group.syncShutdownGracefully() }
    let head = Array("HTTP/1.0 200 OK\r\nContent-Type: audio/flac\r\nContent-Length: 300000\r\n\r\n".utf8)
    let body = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
    let server = try CannedServer(response: head + body)
    defer { server.close() }
    var received: [UInt8] = []
    let log = try fetch(port: server.port, ringBytes: 4096) { input, fetcher in
      received = drain(input, fetcher) { true }
    }
    #expect(received == body)
    #expect(log.all.first == .connected)
    #expect(log.all.contains(.head(head)))
    #expect(eventually { log.ending == .closedNormally })
    #expect(server.requests.first == Array("GET /stream.flac HTTP/1.0\r\n\r\n".utf8))
  }

  @Test func aBodyShorterThanItsLengthEndsAsAReset() throws {
    defer { try? group.syncShutdownGracefully() }
    let head = Array("HTTP/1.0 200 OK\r\nContent-Length: 5000\r\n\r\n".utf8)
    let server = try CannedServer(response: head + [UInt8](repeating: 7, count: 1000))
    defer { server.close() }
    var received: [UInt8] = []
    let log = try fetch(port: server.port, ringBytes: 65536) { input, fetcher in
      received = drain(input, fetcher) { true }
    }
    #expect(received.count == 1000)
    #expect(eventually { log.ending == .remoteReset })
  }

  @Test func aServerThatRefusesIsUnreachable() throws {
    defer { try? group.syncShutdownGracefully() }
    // A port that was just free: bound, then closed.
    let server = try CannedServer(response: [])
    let port = server.port
    server.close()
    let log = try fetch(port: port, ringBytes: 4096) { input, _ in
      _ = eventually { input.hasEnded }
    }
    #expect(eventually { log.ending == .unreachable })
  }

  @Test func anAbandonedStreamEndsAsATimeoutAndStopsWaiting() throws {
    defer { try? group.syncShutdownGracefully() }
    let head = Array("HTTP/1.0 200 OK\r\n\r\n".utf8)
    let server = try CannedServer(response: head + [1, 2, 3, 4], holdOpen: true)
    defer { server.close() }
    let loop = group.next()
    let log = try fetch(port: server.port, ringBytes: 4096) { input, fetcher in
      #expect(eventually { input.ring.fill == 4 })
      // The server sends nothing more: the fetcher waits for the network.
      #expect(eventually { (try? loop.submit { fetcher.stalledFor != nil }.wait()) == true })
      try? loop.submit { fetcher.abandon(reason: .timeout) }.wait()
      #expect(eventually { input.hasEnded })
    }
    #expect(eventually { log.ending == .timeout })
  }

  /// A skipped track: its stream is closed while bytes wait for room in the ring. The handler,
  /// its channel context and those bytes must go with the connection (they once stayed, about
  /// 15 KB a skip and 0.4 KB a track).
  @Test func aStreamClosedMidBodyLeavesNothingBehind() throws {
    defer { try? group.syncShutdownGracefully() }
    let head = Array("HTTP/1.0 200 OK\r\n\r\n".utf8)
    let server = try CannedServer(response: head + [UInt8](repeating: 7, count: 300_000), holdOpen: true)
    defer { server.close() }
    let loop = group.next()
    final class WeakHandler: @unchecked Sendable { weak var value: StreamHandler? }
    let left = WeakHandler()
    _ = try fetch(port: server.port, ringBytes: 4096) { input, fetcher in
      #expect(eventually { input.ring.fill == 4096 })  // full: the rest waits in the handler
      try? loop.submit {
        left.value = fetcher.handler
        fetcher.close()
      }.wait()
    }
    #expect(eventually { (try? loop.submit { left.value == nil }.wait()) == true })
  }
}
