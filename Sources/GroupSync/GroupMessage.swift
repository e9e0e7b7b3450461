import SlimProto

/// One datagram of the protocol that keeps an LMS sync group's members in time while LMS is away:
/// small, versioned, big-endian, every field fixed in size.
///
/// ```
///  0  4  "SPGS"
///  4  1  version (1)
///  5  1  kind: 1 play point, 2 time request, 3 time reply
///  6  1  flags: bit 0, a 16-byte authentication tag follows the body
///  7  1  0
///  8  6  sender: the player's MAC
/// 14  6  group: the MAC of the master LMS showed for the group
/// 20  4  boot: drawn at random when the sender starts (its sequence starts again then)
/// 24  8  sequence: one more for each message the sender sends
/// 32  …  body (below), then the tag when flagged
/// ```
public struct GroupMessage: Equatable, Sendable {
  public static let magic: [UInt8] = Array("SPGS".utf8)
  public static let version: UInt8 = 1
  static let headerBytes = 32
  public static let tagBytes = 16

  public var sender: MACAddress
  public var group: MACAddress
  public var boot: UInt32
  public var sequence: UInt64
  public var body: Body

  public enum Body: Equatable, Sendable {
    /// Where the sender's playback is: what the group's other members follow.
    case playPoint(PlayPoint)
    /// A member asks the sender's clock (its `sent` time, on its own clock).
    case timeRequest(sent: UInt64)
    /// The answer: the request's `sent`, when it arrived and when the answer left, on the
    /// answering member's clock (an NTP-style exchange: the asker gets offset and round trip).
    case timeReply(requestSent: UInt64, received: UInt64, sent: UInt64)

    var kind: UInt8 {
      switch self {
      case .playPoint: 1
      case .timeRequest: 2
      case .timeReply: 3
      }
    }
  }

  /// The track, the frame of it heard and when (on the sender's monotonic clock, ns).
  public struct PlayPoint: Equatable, Sendable {
    public enum State: UInt8, Sendable {
      case playing = 0
      case paused = 1
      case stopped = 2
      /// Playing, started at the leader's position and not yet found in step: leads nobody.
      case joining = 3
    }

    /// The track's entry in LMS's queue.
    public var queueIndex: UInt32
    /// LMS's track id (negative for remote streams): which track, whatever the queue's order.
    public var trackID: Int32
    public var sampleRate: UInt32
    /// Where in the track the members' stream began, in frames (0, or a seek's offset as the sender
    /// knows it): the origin of `frame`. LMS streams a seek to every member alike, so `frame`
    /// compares between them exactly; `trackStart + frame` places a member that joins.
    public var trackStart: UInt64
    /// Frames heard at `heardAt`, from `trackStart`.
    public var frame: UInt64
    public var heardAt: UInt64
    public var state: State

    public init(
      queueIndex: UInt32, trackID: Int32, sampleRate: UInt32, trackStart: UInt64 = 0, frame: UInt64, heardAt: UInt64,
      state: State = .playing
    ) {
      self.queueIndex = queueIndex
      self.trackID = trackID
      self.sampleRate = sampleRate
      self.trackStart = trackStart
      self.frame = frame
      self.heardAt = heardAt
      self.state = state
    }
  }

  public init(sender: MACAddress, group: MACAddress, boot: UInt32, sequence: UInt64, body: Body) {
    self.sender = sender
    self.group = group
    self.boot = boot
    self.sequence = sequence
    self.body = body
  }

  /// The datagram without a tag, or with room for one (`tagged`): the tag covers every byte
  /// before it, and `GroupMessage(datagram:)` hands back where it starts.
  public func encoded(tagged: Bool = false) -> [UInt8] {
    var writer = ByteWriter(capacity: 80)
    writer.append(Self.magic)
    writer.u8(Self.version)
    writer.u8(body.kind)
    writer.u8(tagged ? 1 : 0)
    writer.u8(0)
    writer.append(sender.bytes)
    writer.append(group.bytes)
    writer.u32(boot)
    writer.u64(sequence)
    switch body {
    case .playPoint(let point):
      writer.u32(point.queueIndex)
      writer.u32(UInt32(bitPattern: point.trackID))
      writer.u32(point.sampleRate)
      writer.u64(point.trackStart)
      writer.u64(point.frame)
      writer.u64(point.heardAt)
      writer.u8(point.state.rawValue)
    case .timeRequest(let sent):
      writer.u64(sent)
    case .timeReply(let requestSent, let received, let sent):
      writer.u64(requestSent)
      writer.u64(received)
      writer.u64(sent)
    }
    return writer.bytes
  }

  /// A received datagram: the message, and the tag with the bytes it covers when it carries one.
  public static func decode(_ datagram: [UInt8]) throws(WireError) -> (message: GroupMessage, tag: Tag?) {
    var reader = ByteReader(datagram, message: "group message")
    guard try reader.bytes(4) == magic else {
      throw .invalidField(message: "group message", field: "magic", value: 0)
    }
    let version = try reader.u8()
    guard version == Self.version else {
      throw .invalidField(message: "group message", field: "version", value: UInt32(version))
    }
    let kind = try reader.u8()
    let flags = try reader.u8()
    _ = try reader.u8()
    guard let sender = MACAddress(bytes: try reader.bytes(6)), let group = MACAddress(bytes: try reader.bytes(6))
    else { throw .truncated(message: "group message", needed: 20, available: datagram.count) }
    let boot = try reader.u32()
    let sequence = try reader.u64()
    let body: Body
    switch kind {
    case 1:
      let queueIndex = try reader.u32()
      let trackID = Int32(bitPattern: try reader.u32())
      let sampleRate = try reader.u32()
      let trackStart = try reader.u64()
      let frame = try reader.u64()
      let heardAt = try reader.u64()
      let code = try reader.u8()
      guard let state = PlayPoint.State(rawValue: code) else {
        throw .invalidField(message: "group message", field: "state", value: UInt32(code))
      }
      body = .playPoint(
        PlayPoint(
          queueIndex: queueIndex, trackID: trackID, sampleRate: sampleRate, trackStart: trackStart, frame: frame,
          heardAt: heardAt,
          state: state))
    case 2:
      body = .timeRequest(sent: try reader.u64())
    case 3:
      body = .timeReply(requestSent: try reader.u64(), received: try reader.u64(), sent: try reader.u64())
    default:
      throw .invalidField(message: "group message", field: "kind", value: UInt32(kind))
    }
    let message = GroupMessage(sender: sender, group: group, boot: boot, sequence: sequence, body: body)
    let covered = reader.offset
    guard flags & 1 != 0 else {
      guard reader.remaining == 0 else {
        throw .invalidField(message: "group message", field: "length", value: UInt32(datagram.count))
      }
      return (message, nil)
    }
    let tag = try reader.bytes(tagBytes)
    guard reader.remaining == 0 else {
      throw .invalidField(message: "group message", field: "length", value: UInt32(datagram.count))
    }
    return (message, Tag(bytes: tag, covered: Array(datagram[..<covered])))
  }

  /// An authentication tag and the bytes it must match.
  public struct Tag: Equatable, Sendable {
    public var bytes: [UInt8]
    public var covered: [UInt8]
  }
}
