import Logging
import NIOCore
import NIOEmbedded
import SlimProto
import Synchronization
import Testing

@testable import SlimConnection

/// The client and the session over an `EmbeddedChannel`: HELO on connect, the server's frames
/// to the engine however they are split, the engine's events to the server, and a connection
/// that breaks reconnecting with a reconnect HELO.
@Suite struct SlimProtoClientTests {
  static let mac = MACAddress("02:00:00:00:00:42")!

  /// The connections the client opened, in order.
  final class Connections: @unchecked Sendable {
    var channels: [EmbeddedChannel] = []
  }

  final class Rig {
    let loop = EmbeddedEventLoop()
    let engine = RecordingEngine()
    let connections = Connections()
    let session: PlayerSession
    let client: SlimProtoClient

    init() {
      let logger = Logger(label: "test")
      session = PlayerSession(
        identity: .init(mac: SlimProtoClientTests.mac, modelName: "SlimPlay", firmware: "test", formats: ["flc"]),
        name: nil, nameStore: NameStore(path: nil), engine: engine, logger: logger)
      let connections = connections
      client = SlimProtoClient(
        configuration: .init(
          server: ServerAddress(host: "127.0.0.1", port: 3483), backoff: Backoff(quickRetry: .milliseconds(100))),
        session: session, eventLoop: loop, logger: logger,
        connector: { _, eventLoop, configure in
          let channel = EmbeddedChannel(loop: eventLoop as! EmbeddedEventLoop)
          connections.channels.append(channel)
          return configure(channel).flatMap {
            channel.connect(to: try! SocketAddress(ipAddress: "127.0.0.1", port: 3483))
          }.map { channel }
        })
      client.start()
      loop.run()
    }

    var channel: EmbeddedChannel { connections.channels.last! }

    /// Everything the player wrote since the last call, as frames.
    func sent() throws -> [PlayerFrame] {
      var reader = PlayerFrameReader()
      while let buffer = try channel.readOutbound(as: ByteBuffer.self) { reader.append(buffer.readableBytesView) }
      var frames: [PlayerFrame] = []
      while let frame = try reader.nextFrame() { frames.append(frame) }
      return frames
    }

    func serverSends(_ bytes: [UInt8]) throws {
      try channel.writeInbound(channel.allocator.buffer(bytes: bytes))
      loop.run()
    }
  }

  static func frame(_ command: String, _ payload: [UInt8]) -> [UInt8] {
    ServerFrame(command: command, payload: payload).encoded()
  }

  @Test func connectingSendsHELOAndTheServersFramesReachTheEngineHoweverSplit() throws {
    let rig = Rig()
    let hello = try rig.sent()
    #expect(hello.map(\.opcode) == ["HELO"])
    let parsed = try Hello(parsing: hello[0].payload)
    #expect(parsed.mac == Self.mac && !parsed.isReconnect)
    #expect(rig.engine.connection == [true])

    // `strm t` is answered at once with a STMt; `aude` goes to the engine, split over three reads.
    try rig.serverSends(Self.frame("strm", StreamCommand(command: .status).encoded()))
    let answer = try rig.sent()
    #expect(answer.map(\.opcode) == ["STAT"])
    #expect(try PlayerStatus(parsing: answer[0].payload).event == .heartbeat)
    let aude = Self.frame("aude", AudioEnable(spdifEnable: false, dacEnable: false).encoded())
    try rig.serverSends(Array(aude[0..<3]))
    try rig.serverSends(Array(aude[3..<5]))
    #expect(rig.engine.handled.isEmpty)
    try rig.serverSends(Array(aude[5...]))
    #expect(rig.engine.handled == [.audioEnable(AudioEnable(spdifEnable: false, dacEnable: false))])
  }

  @Test func theEnginesEventsForTheServerGoOutAndTheRestStayIn() throws {
    let rig = Rig()
    _ = try rig.sent()
    rig.engine.onEvent?(.trackCreated(id: 1))
    rig.engine.onEvent?(.status(.trackStarted))
    rig.engine.onEvent?(.playbackEnded)
    rig.engine.onEvent?(.message(.disconnected(.closedNormally)))
    rig.loop.run()
    let frames = try rig.sent()
    #expect(frames.map(\.opcode) == ["STAT", "DSCO"])
    #expect(try PlayerStatus(parsing: frames[0].payload).event == .trackStarted)
  }

  @Test func aFramingErrorClosesTheConnectionAndTheClientReconnectsWithAReconnectHELO() throws {
    let rig = Rig()
    _ = try rig.sent()
    let first = rig.channel
    // A length of 60,000 bytes: the stream is out of step.
    try? rig.serverSends([0xEA, 0x60] + Array("strm".utf8) + [0, 0, 0])
    #expect(!first.isActive)
    #expect(rig.engine.connection == [true, false])
    // The quick retry (100 ms ± 20 %), then a new connection and a HELO saying it reconnects.
    rig.loop.advanceTime(by: .milliseconds(130))
    #expect(rig.connections.channels.count == 2)
    let hello = try rig.sent()
    #expect(hello.map(\.opcode) == ["HELO"])
    #expect(try Hello(parsing: hello[0].payload).isReconnect)
    #expect(rig.engine.connection == [true, false, true])
  }

  @Test func stopClosesTheConnectionAndCompletes() throws {
    let rig = Rig()
    _ = try rig.sent()
    rig.client.stop()
    rig.loop.run()
    #expect(!rig.channel.isActive)
    #expect(try rig.client.stopped.wait() == ())
    #expect(rig.engine.connection == [true, false])
    rig.loop.advanceTime(by: .seconds(30))
    #expect(rig.connections.channels.count == 1)
  }
}

/// An engine that records what the session hands it.
final class RecordingEngine: PlaybackEngine {
  var onEvent: ((EngineEvent) -> Void)?
  var handled: [ServerMessage] = []
  var connection: [Bool] = []
  let maximumSampleRate = 96_000

  func handle(_ message: ServerMessage) { handled.append(message) }
  func snapshot(at instant: UInt64) -> PlaybackSnapshot { PlaybackSnapshot() }
  func serverConnectionChanged(_ isConnected: Bool) { connection.append(isConnected) }
}
