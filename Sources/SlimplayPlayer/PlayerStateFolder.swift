import Logging
import SlimProto
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// Each player keeps its state (its name from the server, the heard position, the now-playing
/// snapshot, artwork, the offline cache) in a folder of its own under the state folder, named
/// by its MAC address: several players on one machine (one per DAC or zone, as squeezelite users
/// run them) share the state folder and nothing in it. The folder is locked while its player
/// runs, so a second process for the same player is refused with a clear message.
public enum PlayerStateFolder {
  /// What the state folder held before players had folders of their own.
  static let singlePlayerEntries = ["name", "playback.json", "nowplaying.json", "artwork", "cache"]

  /// The folder's name: the MAC with dashes (colons are awkward in shells and unit files).
  public static func name(for mac: MACAddress) -> String {
    String(mac.description.map { $0 == ":" ? "-" : $0 })
  }

  /// Locks `mac`'s folder under `base`, first moving a single-player layout into it: a set-up
  /// from before players had their own folders keeps its name, position and cache. Only the
  /// first player to start takes it (under the state folder's own lock); the others start empty.
  public static func prepare(base: String, mac: MACAddress, logger: Logger) -> Result<FolderLock, FolderLock.Failure> {
    let folder = base + "/" + name(for: mac)
    if access(folder, F_OK) != 0 {
      switch FolderLock.acquire(base, waitMilliseconds: 5000) {
      case .success(let baseLock):
        let moved = adoptSinglePlayerLayout(base: base, into: folder)
        if !moved.isEmpty {
          logger.notice("state: \(moved.joined(separator: ", ")) moved from \(base) into this player's \(folder)")
        }
        withExtendedLifetime(baseLock) {}
      case .failure(let failure):
        logger.warning("state: \(failure); the single-player state there is left as it is")
      }
    }
    return FolderLock.acquire(folder)
  }

  /// Moves the single-player entries found in `base` into `folder`; the names moved.
  static func adoptSinglePlayerLayout(base: String, into folder: String) -> [String] {
    let present = singlePlayerEntries.filter { access(base + "/" + $0, F_OK) == 0 }
    guard !present.isEmpty, access(folder, F_OK) != 0, FileIO.makeDirectories(folder) else { return [] }
    return present.filter { rename(base + "/" + $0, folder + "/" + $0) == 0 }
  }
}
