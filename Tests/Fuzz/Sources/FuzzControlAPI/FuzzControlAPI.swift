import LMSControl
import LocalControl
import NIOCore
import NIOEmbedded

/// A request to the control API, from anyone who can reach it: the guard's verdict and the
/// router's answer for any method, URI, Host, Origin, Sec-Fetch-Site, authorization and body.
/// Without the token nothing gets past 401; a cross-site request never changes anything.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzControlAPI(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = UnsafeBufferPointer(start: data, count: size)
  // method, URI, Host, Origin, Sec-Fetch-Site, Authorization: one line each; the rest is the body.
  var fields: [String?] = []
  var start = 0
  var index = 0
  while fields.count < 6, index < bytes.count {
    if bytes[index] == UInt8(ascii: "\n") {
      let text = String(decoding: bytes[start..<index], as: UTF8.self)
      fields.append(text == "-" ? nil : text)
      start = index + 1
    }
    index += 1
  }
  guard fields.count == 6, let method = fields[0], let uri = fields[1] else { return 0 }
  let body = Array(bytes[start...])
  let (host, origin, fetchSite, authorization) = (fields[2], fields[3], fields[4], fields[5])

  let refusal = RequestGuard(ownNames: ["pi"]).check(method: method, host: host, origin: origin, fetchSite: fetchSite)
  if fetchSite?.lowercased() == "cross-site", !["GET", "HEAD", "OPTIONS"].contains(method.uppercased()) {
    precondition(refusal != nil, "a cross-site \(method) was let through")
  }

  let loop = EmbeddedEventLoop()
  let target = RecordingTarget(loop: loop)
  let request = ControlRequest(method: method, uri: uri, body: body, authorization: authorization)
  for token in [nil, "s3cret"] as [String?] {
    let answer = ControlRouter(token: token).route(request, to: target, on: loop)
    loop.run()
    guard let response = try? answer.wait() else { preconditionFailure("the router's future failed") }
    precondition((200..<600).contains(response.status), "status \(response.status)")
    let offered = [authorization == "Bearer s3cret", request.query["token"] == "s3cret"]
    if token != nil, !offered.contains(true) {
      precondition(response.status == 401, "\(method) \(uri) without the token got \(response.status)")
    }
    if response.status != 200 {
      precondition(response.body.object?["error"]?.string != nil, "an error without a message")
    }
  }
  try? loop.syncShutdownGracefully()
  return 0
}

private final class RecordingTarget: ControlTarget {
  let loop: EmbeddedEventLoop
  var commands: [ControlCommand] = []
  init(loop: EmbeddedEventLoop) { self.loop = loop }
  func status() -> JSONValue { ["mode": "play", "volume": 50] }
  func perform(_ command: ControlCommand) -> EventLoopFuture<Void> {
    commands.append(command)
    return loop.makeSucceededVoidFuture()
  }
  func currentArtwork() -> EventLoopFuture<[UInt8]?> { loop.makeSucceededFuture(nil) }
  func artwork(coverID: String) -> EventLoopFuture<[UInt8]?> { loop.makeSucceededFuture(nil) }
}
