import NIOCore
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
  static let track = track(seconds: 0.3)

  static func track(seconds: Double) -> [UInt8] {
    let frames = Int(seconds * 44100)
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
  }

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
    try takingThreadCensusTurn { try twoPlayersInOneProcessRegisterPlayAndStopApartBody() }
  }

  private func twoPlayersInOneProcessRegisterPlayAndStopApartBody() throws {
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

  @Test func twoPlayersInOneProcessStartATimedTrackTogether() throws {
    try takingThreadCensusTurn { try twoPlayersInOneProcessStartATimedTrackTogetherBody() }
  }

  private func twoPlayersInOneProcessStartATimedTrackTogetherBody() throws {
    let http = try CannedServer(
      response: Array("HTTP/1.0 200 OK\r\nContent-Type: audio/x-wav\r\n\r\n".utf8) + Self.track(seconds: 3))
    defer { http.close() }
    let server = try FakeSlimServer(streamPort: http.port, manualStart: true)
    defer { server.close() }
    let state = TemporaryDirectory()
    defer { state.remove() }
    let macs = ["02:00:00:00:00:04", "02:00:00:00:00:05"]
    let players = try macs.map {
      try Player(settings: settings(mac: $0, server: server.port, state: state.path), environment: [:])
    }
    for player in players { try player.start() }
    defer { for player in players { player.stop() } }
    // Both buffered and held (STMl), as LMS waits for every member of a group.
    #expect(eventually(within: 10) { macs.allSatisfy { server.events(of: $0).contains("STMl") } })
    // One start time for both, 300 ms ahead, in the jiffies both report (one clock: one process).
    let start = UInt32(truncatingIfNeeded: MonotonicClock.milliseconds() + 300)
    for mac in macs {
      server.send(
        ServerFrame(command: "strm", payload: StreamCommand(command: .unpause, value: start).encoded()), to: mac)
    }
    #expect(eventually(within: 5) { macs.allSatisfy { server.events(of: $0).contains("STMs") } })
    usleep(700_000)
    for mac in macs {
      server.send(ServerFrame(command: "strm", payload: StreamCommand(command: .status).encoded()), to: mac)
    }
    #expect(
      eventually(within: 5) {
        macs.allSatisfy { mac in
          server.statuses(of: mac).contains { $0.event == .heartbeat && $0.elapsedMilliseconds > 0 }
        }
      })
    // Where each says its track began: the jiffies of its last report less the time heard then.
    let began = macs.map { mac -> Int64 in
      let status = server.statuses(of: mac).last { $0.event == .heartbeat && $0.elapsedMilliseconds > 0 }!
      return Int64(status.jiffies) - Int64(status.elapsedMilliseconds)
    }
    #expect(abs(began[0] - began[1]) <= 2, "\(began)")
    #expect(abs(began[0] - Int64(start)) <= 5, "\(began) against \(start)")
  }

  @Test func aPlayerStoppedAndReleasedFreesItsStateForTheNextOne() throws {
    try takingThreadCensusTurn { try aPlayerStoppedAndReleasedFreesItsStateForTheNextOneBody() }
  }

  private func aPlayerStoppedAndReleasedFreesItsStateForTheNextOneBody() throws {
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
/// and answers a HELO with a `strm s` for `streamPort` when there is one: started at once, or
/// (`manualStart`) held until the test sends `strm u`, as LMS starts a sync group.
final class FakeSlimServer: Sendable {
  private let server: LoopbackServer
  private let log = Log()
  var port: Int { server.port }

  init(streamPort: Int?, manualStart: Bool = false) throws {
    let log = self.log
    server = try LoopbackServer { channel in
      try channel.pipeline.syncOperations.addHandler(
        Connection(log: log, streamPort: streamPort, manualStart: manualStart))
    }
  }

  func events(of mac: String) -> [String] { log.state.withLock { $0.events[mac] ?? [] } }
  func statuses(of mac: String) -> [PlayerStatus] { log.state.withLock { $0.statuses[mac] ?? [] } }
  var closedConnections: Int { log.state.withLock { $0.closed } }

  /// Sends `frame` to the player `mac` (any thread).
  func send(_ frame: ServerFrame, to mac: String) {
    guard let channel = log.state.withLock({ $0.channels[mac] }) else { return }
    channel.writeAndFlush(channel.allocator.buffer(bytes: frame.encoded()), promise: nil)
  }

  /// What the players sent, by MAC, their connections, and how many connections ended.
  private final class Log: Sendable {
    struct State {
      var events: [String: [String]] = [:]
      var statuses: [String: [PlayerStatus]] = [:]
      var channels: [String: any Channel] = [:]
      var closed = 0
    }
    let state = Mutex(State())
  }

  func close() {
    server.close()
  }

  private final class Connection: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    let log: Log
    let streamPort: Int?
    let manualStart: Bool
    var reader = PlayerFrameReader()
    var mac: String?

    init(log: Log, streamPort: Int?, manualStart: Bool) {
      self.log = log
      self.streamPort = streamPort
      self.manualStart = manualStart
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      let buffer = unwrapInboundIn(data)
      reader.append(buffer.readableBytesView)
      while let frame = try? reader.nextFrame() {
        var event = frame.opcode
        if frame.opcode == "HELO", let hello = try? Hello(parsing: frame.payload) {
          let mac = hello.mac.description
          self.mac = mac
          let channel = context.channel
          log.state.withLock { $0.channels[mac] = channel }
          if let streamPort { start(streamPort, context: context) }
        } else if frame.opcode == "STAT", let status = try? PlayerStatus(parsing: frame.payload) {
          event = status.event.rawValue
          if let mac { log.state.withLock { $0.statuses[mac, default: []].append(status) } }
        }
        if let mac { log.state.withLock { $0.events[mac, default: []].append(event) } }
      }
    }

    private func start(_ port: Int, context: ChannelHandlerContext) {
      let command = StreamCommand(
        command: .start, autostart: manualStart ? .manual : .automatic, format: .pcm, pcm: .unspecified, threshold: 1,
        serverPort: UInt16(port), serverIP: 0x7F00_0001, request: Array("GET /track.wav HTTP/1.0\r\n\r\n".utf8))
      let frame = ServerFrame(command: "strm", payload: command.encoded()).encoded()
      context.writeAndFlush(NIOAny(context.channel.allocator.buffer(bytes: frame)), promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
      log.state.withLock { $0.closed += 1 }
    }
  }
}
