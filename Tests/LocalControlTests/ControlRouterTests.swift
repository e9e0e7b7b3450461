import LMSControl
import NIOCore
import NIOEmbedded
import Offline
import Testing

@testable import LocalControl

private final class RecordingTarget: ControlTarget {
  let loop: any EventLoop
  var commands: [ControlCommand] = []
  var pinCommands: [PinCommand] = []
  init(loop: any EventLoop) { self.loop = loop }
  func perform(_ command: PinCommand, on loop: any EventLoop) -> EventLoopFuture<JSONValue> {
    pinCommands.append(command)
    return loop.makeSucceededFuture(["title": "Alpha"])
  }
  func status() -> JSONValue { ["state": "online"] }
  func perform(_ command: ControlCommand) -> EventLoopFuture<Void> {
    commands.append(command)
    return loop.makeSucceededVoidFuture()
  }
  func currentArtwork() -> EventLoopFuture<[UInt8]?> { loop.makeSucceededFuture(nil) }
  func artwork(coverID: String) -> EventLoopFuture<[UInt8]?> { loop.makeSucceededFuture(nil) }
}

@Suite struct ControlRouterTests {
  let loop = EmbeddedEventLoop()

  private func route(_ router: ControlRouter, _ method: String, _ uri: String, body: String = "", auth: String? = nil)
    throws -> (ControlResponse, RecordingTarget)
  {
    let target = RecordingTarget(loop: loop)
    let request = ControlRequest(method: method, uri: uri, body: Array(body.utf8), authorization: auth)
    let response = try router.route(request, to: target, on: loop).wait()
    return (response, target)
  }

  @Test func commandsFromQueryOrBody() throws {
    let router = ControlRouter(token: nil)
    #expect(try route(router, "POST", "/api/seek?seconds=12.5").1.commands == [.seek(seconds: 12.5)])
    #expect(try route(router, "POST", "/api/volume", body: #"{"value": 30}"#).1.commands == [.volume(percent: 30)])
    #expect(try route(router, "POST", "/api/toggle").1.commands == [.toggle])
    #expect(try route(router, "GET", "/api/status").0 == ControlResponse(status: 200, body: ["state": "online"]))
  }

  @Test(arguments: [
    ("POST", "/api/volume?value=101", "", 400), ("POST", "/api/volume", #"{"value":"loud"}"#, 400),
    ("POST", "/api/seek?seconds=-1", "", 400), ("POST", "/api/pause", "[1,2]", 400),
    ("POST", "/api/pause", "{", 400), ("POST", "/api/fly", "", 404), ("GET", "/api/pause", "", 404),
    ("GET", "/", "", 404),
  ])
  func badRequestsAreRefusedWithAMessage(method: String, uri: String, body: String, status: Int) throws {
    let (response, target) = try route(ControlRouter(token: nil), method, uri, body: body)
    #expect(response.status == status)
    #expect(response.body["error"]?.string?.isEmpty == false)
    #expect(target.commands.isEmpty)
  }

  @Test func pinsByKindAndIdOrName() throws {
    let router = ControlRouter(token: nil)
    let (response, target) = try route(router, "POST", "/api/pin", body: #"{"kind":"album","id":7}"#)
    #expect(response == ControlResponse(status: 200, body: ["title": "Alpha"]))
    #expect(target.pinCommands == [.pin(.album, id: 7, name: nil)])
    #expect(try route(router, "POST", "/api/pin?kind=track").1.pinCommands == [.pin(.track, id: nil, name: nil)])
    #expect(
      try route(router, "POST", "/api/pin", body: #"{"kind":"playlist","name":"Road"}"#).1.pinCommands == [
        .pin(.playlist, id: nil, name: "Road")
      ])
    #expect(try route(router, "POST", "/api/unpin?kind=album&id=7").1.pinCommands == [.unpin(.album, id: 7)])
    #expect(try route(router, "GET", "/api/pins").0 == ControlResponse(status: 200, body: ["pins": []]))
  }

  @Test(arguments: [
    "/api/pin", "/api/pin?kind=artist", "/api/pin?kind=album&id=0", "/api/pin?kind=album&id=1.5",
    "/api/pin?kind=album&id=x", "/api/unpin?kind=album", "/api/pin?kind=album&name=Alpha",
  ])
  func badPinsAreRefusedWithAMessage(uri: String) throws {
    let (response, target) = try route(ControlRouter(token: nil), "POST", uri)
    #expect(response.status == 400)
    #expect(response.body["error"]?.string?.isEmpty == false)
    #expect(target.pinCommands.isEmpty)
  }

  @Test func theTokenIsRequiredWhenSet() throws {
    let router = ControlRouter(token: "t0k")
    #expect(try route(router, "GET", "/api/status").0.status == 401)
    #expect(try route(router, "GET", "/api/status", auth: "Bearer wrong").0.status == 401)
    #expect(try route(router, "GET", "/api/status", auth: "Bearer t0k").0.status == 200)
    #expect(try route(router, "POST", "/api/play?token=t0k").1.commands == [.play])
  }

  @Test func lmsCommandsMatchTheCLI() {
    #expect(ControlCommand.next.lmsCommand == ["playlist", "index", "+1"])
    #expect(ControlCommand.pause.lmsCommand == ["pause", "1"])
    #expect(ControlCommand.seek(seconds: 3).lmsCommand == ["time", 3])
  }
}

/// A target whose status becomes current only after a query it is waiting for.
private final class WarmingTarget: ControlTarget {
  let loop: any EventLoop
  var state = "stale"
  var ready: EventLoopPromise<Void>
  init(loop: any EventLoop) {
    self.loop = loop
    ready = loop.makePromise()
  }
  func status() -> JSONValue { ["state": .string(state)] }
  func statusReady(on loop: any EventLoop) -> EventLoopFuture<Void> { ready.futureResult }
  func perform(_ command: ControlCommand) -> EventLoopFuture<Void> { loop.makeSucceededVoidFuture() }
  func currentArtwork() -> EventLoopFuture<[UInt8]?> { loop.makeSucceededFuture(nil) }
  func artwork(coverID: String) -> EventLoopFuture<[UInt8]?> { loop.makeSucceededFuture(nil) }
}

extension ControlRouterTests {
  @Test func aStatusRequestWaitsUntilTheTargetIsCurrent() throws {
    let target = WarmingTarget(loop: loop)
    let answer = ControlRouter(token: nil).route(
      ControlRequest(method: "GET", uri: "/api/status"), to: target, on: loop)
    var answered = false
    answer.assumeIsolated().whenComplete { _ in answered = true }
    loop.run()
    #expect(!answered)
    target.state = "online"
    target.ready.succeed()
    loop.run()
    #expect(try answer.wait() == ControlResponse(status: 200, body: ["state": "online"]))
  }
}
