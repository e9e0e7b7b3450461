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
    tls: Bool = false, consume: (StreamInput, StreamFetcher) -> Void
  ) throws -> FetchLog {
    let input = StreamInput(capacity: ringBytes)
    let loop = group.next()
    let log = FetchLog()
    let fetcher = StreamFetcher(eventLoop: loop, input: input, logger: Logger(label: "test"))
    try loop.submit {
      fetcher.delegate = log
      fetcher.open(host: "127.0.0.1", port: port, request: request, holdBody: false, tls: tls)
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

  /// The server hangs up before its response head is complete: the stream ends (as a reset),
  /// it does not wait for ever.
  @Test func aServerThatClosesBeforeItsHeadEndsAsAReset() throws {
    defer { try? group.syncShutdownGracefully() }
    let server = try CannedServer(response: Array("HTTP/1.0 200 OK\r\nContent-Ty".utf8))
    defer { server.close() }
    let log = try fetch(port: server.port, ringBytes: 4096) { input, _ in
      _ = eventually { input.hasEnded }
    }
    #expect(eventually { log.ending == .remoteReset })
  }

  @Test func aServerThatRefusesIsUnreachable() throws {
    defer { try? group.syncShutdownGracefully() }
    // A port bound and not listening, held for the test: a port bound and closed again was once
    // taken by a test running beside this one before the fetch connected.
    let refusing = try RefusingPort()
    let log = try fetch(port: refusing.port, ringBytes: 4096) { input, _ in
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

  // MARK: TLS

  /// An https stream: `openssl s_server` serves a file larger than the ring; it arrives whole,
  /// in order, through the TLS handshake and backpressure.
  @Test func anHTTPSBodyArrivesWholeThroughTLS() throws {
    defer { try? group.syncShutdownGracefully() }
    let folder = "/tmp/slimplay-tls-test-\(getpid())"
    defer { shell("kill $(cat \(folder)/server.pid) 2>/dev/null; rm -rf \(folder)") }
    let body = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 17 &+ $0 >> 11) }
    #expect(shell("mkdir -p \(folder)") == 0)
    let file = fopen("\(folder)/body.bin", "wb")
    #expect(body.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) } == body.count)
    fclose(file)
    let made = shell(
      "cd \(folder) && openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=stream.test -days 1 "
        + "-keyout key.pem -out cert.pem 2>/dev/null")
    try #require(made == 0, "openssl (Debian's package) makes the test certificate")
    // A free port: bound, then closed, then taken by the server.
    let probe = try CannedServer(response: [])
    let port = probe.port
    probe.close()
    #expect(
      shell(
        "cd \(folder) && { openssl s_server -accept \(port) -naccept 1 -WWW -cert cert.pem -key key.pem "
          + ">server.log 2>&1 & echo $! >server.pid; }") == 0)
    try #require(eventually { shell("grep -q ACCEPT \(folder)/server.log") == 0 }, "the TLS server is listening")
    var received: [UInt8] = []
    let request = Array("GET /body.bin HTTP/1.0\r\nHost: stream.test:\(port)\r\n\r\n".utf8)
    let log = try fetch(port: port, ringBytes: 4096, request: request, tls: true) { input, fetcher in
      received = drain(input, fetcher) { true }
    }
    #expect(received.count == body.count)
    #expect(received == body)
    #expect(eventually { log.ending == .closedNormally })
    guard case .head(let head) = log.all.first(where: { if case .head = $0 { true } else { false } }) else {
      Issue.record("no response head")
      return
    }
    #expect(String(decoding: head, as: UTF8.self).hasPrefix("HTTP/1.0 200"))
  }

  /// A server that does not speak TLS: the handshake fails, the stream ends as a reset.
  @Test func aPlainServerOnAnHTTPSStreamEndsAsAReset() throws {
    defer { try? group.syncShutdownGracefully() }
    let server = try CannedServer(response: Array("HTTP/1.0 200 OK\r\n\r\nplain bytes".utf8))
    defer { server.close() }
    var received: [UInt8] = []
    let log = try fetch(port: server.port, ringBytes: 4096, tls: true) { input, fetcher in
      received = drain(input, fetcher) { true }
    }
    #expect(received.isEmpty)
    #expect(eventually { log.ending == .remoteReset })
    #expect(!log.all.contains { if case .head = $0 { true } else { false } })
  }

  @Test func theServerNameComesFromTheHostHeader() {
    func name(_ request: String) -> String? { StreamFetcher.serverName(in: Array(request.utf8)) }
    #expect(name("GET / HTTP/1.0\r\nHost: radio.example.org:443\r\n\r\n") == "radio.example.org")
    #expect(name("GET / HTTP/1.0\r\nhost:radio.example.org\r\nAccept: */*\r\n\r\n") == "radio.example.org")
    #expect(name("GET / HTTP/1.0\r\nHost: 192.168.1.20:8443\r\n\r\n") == nil)
    #expect(name("GET / HTTP/1.0\r\nHost: [::1]:443\r\n\r\n") == nil)
    #expect(name("GET / HTTP/1.0\r\n\r\n") == nil)
  }
}
