import CSupport

/// `-v`: the samples the output plays, published in shared memory for a VU meter or spectrum in
/// another process (jivelite on piCorePlayer). The segment is squeezelite's: its name
/// (`/squeezelite-` and the player's MAC), layout, lock and update rules (Sources/CSupport/visualiser.c),
/// so an unmodified reader works. One per process.
public struct VisualiserExport: Sendable {
  public let segmentName: String

  /// Opens (or creates) the segment for the player `mac`; the error text when it cannot.
  public static func open(mac: String) -> Result<VisualiserExport, VisualiserError> {
    let name = "/squeezelite-" + mac.lowercased()
    let result = slimplay_visualiser_open(name)
    guard result == 0 else { return .failure(VisualiserError(segmentName: name, errno: -result)) }
    return .success(VisualiserExport(segmentName: name))
  }

  /// Output thread: `frames` stereo frames about to be written (before the volume, as squeezelite's
  /// own outputs export them). Never waits; false when a reader held the lock and the chunk was
  /// skipped.
  func export(_ samples: UnsafeMutableBufferPointer<Int32>, frames: Int, rate: Int) -> Bool {
    slimplay_visualiser_export(samples.baseAddress, frames, UInt32(clamping: rate)) != 0
  }

  /// Output thread: silence plays (paused, stopped, run dry). False when it must be said again.
  func silent() -> Bool { slimplay_visualiser_silent() != 0 }
}

public struct VisualiserError: Error, CustomStringConvertible {
  public let segmentName: String
  public let errno: Int32
  public var description: String { "cannot open the visualiser segment \(segmentName): errno \(errno)" }
}
