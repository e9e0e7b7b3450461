/// What a DSD file's header says about its audio, DSF or DSDIFF alike.
struct DSDStreamLayout: Equatable, Sendable {
  enum Container: Equatable, Sendable {
    /// Sony's DSF: each channel's bits in blocks of `blockSize` bytes, one block per channel in
    /// turn; least significant bit first when `lsbFirst` (the format's own rule, always so in
    /// practice).
    case dsf(blockSize: Int, lsbFirst: Bool)
    /// Philips' DSDIFF: one byte per channel in turn, most significant bit first.
    case dff
  }

  var container: Container
  /// The 1-bit rate of each channel (2,822,400 for DSD64).
  var sampleRate: Int
  var channels: Int
  /// Audio bytes of each channel; a stream may end sooner (LMS resends the header before the
  /// rest of a file it seeks in, so the header overstates what follows).
  var bytesPerChannel: Int

  /// Bytes read from the stream at a time: whole blocks of every channel for DSF, and for DSDIFF
  /// an even number of bytes per channel (DoP takes them two at a time).
  var groupBytes: Int {
    switch container {
    case .dsf(let blockSize, _): blockSize * channels
    case .dff: 4096 * channels
    }
  }

  var bytesPerChannelInGroup: Int { groupBytes / channels }

  /// The PCM base rate of the rate's family: 44,100, or 48,000 for DSD at multiples of 48 kHz.
  var familyRate: Int { sampleRate % 44100 == 0 ? 44100 : 48000 }

  /// DSD64's rate in the family: 2,822,400 or 3,072,000.
  var dsd64Rate: Int { 64 * familyRate }

  /// "DSD64", "DSD128"…: the rate in multiples of the family's base rate.
  var rateName: String { "DSD\(sampleRate / familyRate)" }

  var containerName: String {
    switch container {
    case .dsf: "DSF"
    case .dff: "DSDIFF"
    }
  }

  static let maximumBlockSize = 65536
  static let maximumChannels = 8

  /// Rates a DSD file can have: 64 to 1024 times 44.1 or 48 kHz.
  static func isValidRate(_ rate: Int) -> Bool {
    [64, 128, 256, 512, 1024].contains { rate == 44100 * $0 || rate == 48000 * $0 }
  }
}
