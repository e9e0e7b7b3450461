import LMSControl
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import LocalControl

/// The API's HTTP handling over an `EmbeddedChannel`, raw bytes in and out: a kept connection,
/// one asked to close, a command, a refused origin, an oversized body, a silent client.
@Suite struct ControlServerTests {
  final class Rig {
    let loop = EmbeddedEventLoop()
    let target: Target
    let server: ControlServer
    let channel: EmbeddedChannel

    init() throws {
      target = Target(loop: loop)
      server = ControlServer(eventLoop: loop, token: nil, target: target, logger: Logger(label: "test"))
      channel = EmbeddedChannel(loop: loop)
      try server.configure(channel)
      try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 50000)).wait()
    }

    func request(_ text: String) throws {
      try channel.writeInbound(channel.allocator.buffer(string: text))
      loop.run()
    }

    /// What the server wrote since the last call.
    func response() throws -> String {
      var text = ""
      while let buffer = try channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: buffer) }
      return text
    }
  }

  final class Target: ControlTarget {
    let loop: any EventLoop
    var commands: [ControlCommand] = []
    init(loop: any EventLoop) { self.loop = loop }
    func status() -> JSONValue { ["state": "online", "volume": 40] }
    func perform(_ command: ControlCommand) -> EventLoopFuture<Void> {
      commands.append(command)
      return loop.makeSucceededVoidFuture()
    }
    func currentArtwork() -> EventLoopFuture<[UInt8]?> { loop.makeSucceededFuture(nil) }
    func artwork(coverID: String) -> EventLoopFuture<[UInt8]?> { loop.makeSucceededFuture(nil) }
  }

  @Test func aKeptConnectionAnswersEachRequestAndClosesWhenAsked() throws {
    let rig = try Rig()
    try rig.request("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1:9393\r\n\r\n")
    let first = try rig.response()
    #expect(first.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(first)")
    #expect(first.contains("\"volume\":40"), "\(first)")
    #expect(rig.channel.isActive)
    try rig.request("GET /api/status HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    let second = try rig.response()
    #expect(second.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(second)")
    #expect(second.lowercased().contains("connection: close"), "\(second)")
    #expect(!rig.channel.isActive)
  }

  @Test func aCommandReachesThePlayer() throws {
    let rig = try Rig()
    let body = "{\"value\": 25}"
    try rig.request(
      "POST /api/volume HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
    #expect(try rig.response().hasPrefix("HTTP/1.1 200 OK\r\n"))
    #expect(rig.target.commands == [.volume(percent: 25)])
  }

  @Test func aRequestFromAForeignPageIsRefusedAndTheConnectionClosed() throws {
    let rig = try Rig()
    try rig.request(
      "POST /api/pause HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://evil.example\r\nContent-Length: 0\r\n\r\n")
    #expect(try rig.response().hasPrefix("HTTP/1.1 403 "))
    #expect(rig.target.commands.isEmpty)
    #expect(!rig.channel.isActive)
  }

  @Test func anOversizedBodyIsRefusedWithoutReadingIt() throws {
    let rig = try Rig()
    let size = 70 * 1024
    try rig.request("POST /api/pause HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(size)\r\n\r\n")
    try? rig.request(String(repeating: "x", count: size))
    #expect(try rig.response().hasPrefix("HTTP/1.1 413 "))
    #expect(rig.target.commands.isEmpty)
    #expect(!rig.channel.isActive)
  }

  @Test func aClientThatSendsNothingIsClosedAfterTenSeconds() throws {
    let rig = try Rig()
    try rig.request("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n")  // the head never ends
    rig.loop.advanceTime(by: .seconds(9))
    #expect(rig.channel.isActive)
    rig.loop.advanceTime(by: .seconds(2))
    #expect(!rig.channel.isActive)
  }
}
