import NIOCore
import NIOPosix
import SlimConnection
import SlimProto
import SlimplayPlayer
import Support
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Two players in one process, each built and torn down by its own `Player`: they register with
/// their own MAC addresses, play what the server sends each of them, keep their state folders
/// and caches apart, and a third player for a MAC already running is refused.
@Suite(.serialized) struct TwoPlayersTests {
  /// 0.3 s of a 16-bit stereo WAV at 44.1 kHz.
  static let track: [UInt8] = {
    let frames = 13_230
    var bytes: [UInt8] = []
    func u32(_ v: Int) { bytes += withUnsafeBytes(of: UInt32(v).littleEndian, Array.init) }
    func u16(_ v: Int) { bytes += withUnsafeBytes(of: UInt16(v).littleEndian, Array.init) }
    bytes += Array("RIFF".utf8)
    u32(36 + frames * 4)
    bytes += Array("WAVEfmt ".utf8)
    u32(16)
    u16(1)
    u16(2)
    u32(44100)
    u32(44100 * 4)
    u16(4)
    u16(16)
    bytes += Array("data".utf8)
    u32(frames * 4)
    for index in 0..<frames * 2 {
      bytes += withUnsafeBytes(of: Int16(truncatingIfNeeded: index &* 31).littleEndian, Array.init)
    }
    return bytes
  }()

  func settings(mac: String, server: Int, state: String) -> PlayerSettings {
    var settings = PlayerSettings()
    settings.server = ServerAddress(host: "127.0.0.1", port: server)
    settings.mac = MACAddress(mac)
    settings.output = .null
    settings.stateDirectory = state
    settings.control = nil
    settings.offline.lmsPort = 1  // nothing answers JSON-RPC here: the status poll fails quietly
    settings.offline.syncPort = 0
    return settings
  }

  @Test func twoPlayersInOneProcessRegisterPlayAndStopApart() throws {
    let http = try CannedServer(
      response: Array("HTTP/1.0 200 OK\r\nContent-Type: audio/x-wav\r\n\r\n".utf8) + Self.track)
    defer { http.close() }
    let server = try FakeSlimServer(streamPort: http.port)
    defer { server.close() }
    let state = TemporaryDirectory()
    defer { state.remove() }

    let first = try Player(
      settings: settings(mac: "02:00:00:00:00:01", server: server.port, state: state.path), environment: [:])
    let second = try Player(
      settings: settings(mac: "02:00:00:00:00:02", server: server.port, state: state.path), environment: [:])
    #expect(first.stateFolder != nil && first.stateFolder != second.stateFolder)
    // A second player for a MAC address already in use, in the same process: refused.
    #expect(throws: PlayerError.self) {
      _ = try Player(
        settings: settings(mac: "02:00:00:00:00:01", server: server.port, state: state.path), environment: [:])
    }
    try first.start()
    try second.start()
    let macs = ["02:00:00:00:00:01", "02:00:00:00:00:02"]
    // Each plays its own stream to the end: started (STMs), then the output ran out (STMu).
    #expect(eventually(within: 20) { macs.allSatisfy { server.events(of: $0).contains("STMu") } })
    for mac in macs {
      let events = server.events(of: mac)
      #expect(events.first == "HELO", "\(mac): \(events)")
      #expect(events.contains("STMs"), "\(mac): \(events)")
    }
    #expect(http.requests.count == 2)
    first.stop()
    second.stop()
    // Both connections closed by the players themselves.
    #expect(eventually(within: 5) { server.closedConnections == 2 })
    // Each cache folder is its own, under its player's state folder.
    for player in [first, second] {
      #expect(FileIO.entries(of: player.stateFolder! + "/cache").contains("lock"))
    }
  }

  @Test func aPlayerStoppedAndReleasedFreesItsStateForTheNextOne() throws {
    let server = try FakeSlimServer(streamPort: nil)
    defer { server.close() }
    let state = TemporaryDirectory()
    defer { state.remove() }
    let mac = "02:00:00:00:00:03"
    do {
      let player = try Player(settings: settings(mac: mac, server: server.port, state: state.path), environment: [:])
      try player.start()
      #expect(eventually { server.events(of: mac).contains("HELO") })
      player.stop()
    }
    let again = try Player(settings: settings(mac: mac, server: server.port, state: state.path), environment: [:])
    try again.start()
    #expect(eventually { server.events(of: mac).filter { $0 == "HELO" }.count == 2 })
    again.stop()
  }
}

/// A SlimProto server on loopback that records what each player (by the MAC of its HELO) sends,
/// and answers a HELO with a `strm s` for `streamPort` when there is one.
final class FakeSlimServer: Sendable {
  private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
  private let channel: any Channel
  private let log = Log()
  let port: Int

  init(streamPort: Int?) throws {
    let log = self.log
    channel = try ServerBootstrap(group: group)
      .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHandler(Connection(log: log, streamPort: streamPort))
        }
      }
      .bind(host: "127.0.0.1", port: 0).wait()
    port = channel.localAddress!.port!
  }

  func events(of mac: String) -> [String] { log.state.withLock { $0.events[mac] ?? [] } }
  var closedConnections: Int { log.state.withLock { $0.closed } }

  /// What the players sent, by MAC, and how many connections ended.
  private final class Log: Sendable {
    let state = Mutex<(events: [String: [String]], closed: Int)>(([:], 0))
  }

  func close() {
    try? channel.close().wait()
    try? group.syncShutdownGracefully()
  }

  private final class Connection: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    let log: Log
    let streamPort: Int?
    var reader = PlayerFrameReader()
    var mac: String?

    init(log: Log, streamPort: Int?) {
      self.log = log
      self.streamPort = streamPort
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      let buffer = unwrapInboundIn(data)
      reader.append(buffer.readableBytesView)
      while let frame = try? reader.nextFrame() {
        var event = frame.opcode
        if frame.opcode == "HELO", let hello = try? Hello(parsing: frame.payload) {
          mac = hello.mac.description
          if let streamPort { start(streamPort, context: context) }
        } else if frame.opcode == "STAT", let status = try? PlayerStatus(parsing: frame.payload) {
          event = status.event.rawValue
        }
        if let mac { log.state.withLock { $0.events[mac, default: []].append(event) } }
      }
    }

    private func start(_ port: Int, context: ChannelHandlerContext) {
      let command = StreamCommand(
        command: .start, autostart: .automatic, format: .pcm, pcm: .unspecified, threshold: 1,
        serverPort: UInt16(port), serverIP: 0x7F00_0001, request: Array("GET /track.wav HTTP/1.0\r\n\r\n".utf8))
      let frame = ServerFrame(command: "strm", payload: command.encoded()).encoded()
      context.writeAndFlush(NIOAny(context.channel.allocator.buffer(bytes: frame)), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
      log.state.withLock { $0.closed += 1 }
    }
  }
}
