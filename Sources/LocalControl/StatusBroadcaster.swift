import LMSControl
import NIOCore

/// Server-sent events for the page: the player's status whenever something that matters
/// changed, and the position at most once a second, so the page never flickers.
final class StatusBroadcaster {
  private let eventLoop: any EventLoop
  private let target: any ControlTarget
  private var listeners: [ObjectIdentifier: (String) -> Void] = [:]
  private var task: RepeatedTask?
  private var lastSent: JSONValue?
  private var lastSentAt: NIODeadline = .distantPast

  init(eventLoop: any EventLoop, target: any ControlTarget) {
    self.eventLoop = eventLoop
    self.target = target
  }

  /// Adds a listener and sends it the current status at once.
  func add(_ key: ObjectIdentifier, send: @escaping (String) -> Void) {
    listeners[key] = send
    send(Self.event(target.status()))
    guard task == nil else { return }
    let bound = NIOLoopBound(self, eventLoop: eventLoop)
    task = eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(250), delay: .milliseconds(250)) { _ in
      bound.value.tick()
    }
  }

  func remove(_ key: ObjectIdentifier) {
    listeners.removeValue(forKey: key)
    if listeners.isEmpty {
      task?.cancel()
      task = nil
      lastSent = nil
    }
  }

  private func tick() {
    let status = target.status()
    let now = NIODeadline.now()
    // Everything but the position changes rarely and goes out at once; the position alone
    // goes out once a second.
    let significant = Self.withoutPosition(status) != lastSent.map(Self.withoutPosition)
    guard significant || now - lastSentAt >= .seconds(1) else { return }
    lastSent = status
    lastSentAt = now
    let event = Self.event(status)
    for send in listeners.values { send(event) }
  }

  static func withoutPosition(_ status: JSONValue) -> JSONValue {
    guard var members = status.object else { return status }
    members["position"] = nil
    return .object(members)
  }

  static func event(_ status: JSONValue) -> String { "event: status\ndata: \(status.encoded)\n\n" }
}
