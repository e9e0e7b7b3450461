import SlimProto

/// What a member lets through of the datagrams that reach it. Without a key: only messages of its
/// own group, from a member LMS listed, from the address LMS listed for it, each newer than the
/// last from that sender (what goes astray on a LAN: other groups, other players, copies, stale
/// datagrams; not a host that forges a member's address). With `--sync-key`: also only messages
/// whose tag proves the sender knows the key (a forged or altered message moves nothing); a
/// recorded one sent again is older than the last from its sender and refused too.
public struct MessageFilter: Sendable {
  public enum Verdict: Equatable, Sendable {
    case accepted
    /// Another group's: every group on the LAN shares the multicast address.
    case otherGroup
    case refused(String)
  }

  /// Whether the datagram's tag was checked against the key.
  public enum Authentication: Equatable, Sendable {
    /// No key is set: tags are neither required nor checked.
    case notRequired
    case valid
    /// No tag, or one that does not match.
    case invalid
  }

  public let group: MACAddress
  /// The members and the address LMS listed for each (nil: not known).
  public private(set) var members: [MACAddress: String?]
  private var latest: [MACAddress: (boot: UInt32, sequence: UInt64)] = [:]

  public init(group: MACAddress, members: [MACAddress: String?]) {
    self.group = group
    self.members = members
  }

  public mutating func check(
    _ message: GroupMessage, from address: String, authentication: Authentication
  ) -> Verdict {
    if authentication == .invalid { return .refused("not signed with the group's key") }
    guard message.group == group else { return .otherGroup }
    guard let listed = members[message.sender] else { return .refused("\(message.sender) is not a member") }
    if let listed, listed != address {
      return .refused("\(message.sender) is at \(listed), not \(address)")
    }
    if let last = latest[message.sender], last.boot == message.boot, message.sequence <= last.sequence {
      return .refused("sent before the last one from \(message.sender) (sequence \(message.sequence))")
    }
    latest[message.sender] = (message.boot, message.sequence)
    return .accepted
  }
}
