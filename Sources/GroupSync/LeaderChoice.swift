import SlimProto

/// Which member the others follow while LMS is away: the master LMS showed for the group, as long
/// as it is heard; otherwise the member with the lowest MAC among those heard (the same answer on
/// every member that hears the same members, with nothing to negotiate).
public enum LeaderChoice {
  /// `heard`: the members heard from recently, this player included.
  public static func leader(master: MACAddress, heard: Set<MACAddress>) -> MACAddress? {
    if heard.contains(master) { return master }
    return heard.min { $0.bytes.lexicographicallyPrecedes($1.bytes) }
  }
}
