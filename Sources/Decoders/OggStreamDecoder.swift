import AudioBuffers

/// An Ogg stream decoded by what it holds, whatever the server called it: its first packet says
/// Vorbis, FLAC or Opus. LMS 7.9 names a radio stream's format by its HTTP content type, so an
/// Ogg FLAC station served as `audio/flac` arrives as `strm` format `o` (Ogg Vorbis), and one
/// served as `audio/ogg` as `f`; both play.
public final class OggStreamDecoder: AudioDecoder {
  public enum Content: Equatable, Sendable { case vorbis, flac, opus }

  private var inner: (any AudioDecoder)?
  private var found: Content?
  private let announced: Content?

  /// `announced`: what the server said the stream is (nil: nothing); `content` names what it
  /// turned out to hold when that differs.
  public init(announced: Content? = nil) {
    self.announced = announced
  }

  public var minimumFreeFrames: Int { inner?.minimumFreeFrames ?? 4096 }
  public var format: AudioFormat? { inner?.format }
  public var damage: StreamDamage { inner?.damage ?? StreamDamage() }
  public var content: String? {
    guard found != announced else { return nil }
    return switch found {
    case .vorbis: "Ogg Vorbis"
    case .flac: "Ogg FLAC"
    case .opus: "Ogg Opus"
    case nil: nil
    }
  }

  public func decode(from input: StreamInput, to output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    if let inner { return try inner.decode(from: input, to: output) }
    guard let content = try Self.content(of: input) else { return .needsInput }
    found = content
    switch content {
    case .vorbis: inner = VorbisDecoder()
    case .flac: inner = try OggFLACDecoder()
    case .opus: inner = OpusDecoder()
    }
    return .decoded
  }

  /// The codec of the stream's first packet; nil until it has arrived (its first 8 bytes).
  static func content(of input: StreamInput) throws(DecodeError) -> Content? {
    let ended = input.hasEnded
    // A Result out of the closure: Swift 6.2's withUnsafeTemporaryAllocation does not rethrow typed errors.
    let sniffed = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 27 + 255 + 8) { buffer in
      let available = input.ring.peek(into: UnsafeMutableRawBufferPointer(buffer))
      return Result { () throws(DecodeError) in
        try content(of: UnsafeBufferPointer(rebasing: buffer[..<available]), ended: ended)
      }
    }
    return try sniffed.get()
  }

  private static func content(of bytes: UnsafeBufferPointer<UInt8>, ended: Bool) throws(DecodeError) -> Content? {
    guard bytes.count >= 27 else {
      if ended { throw .unsupportedStream("stream too short for Ogg") }
      return nil
    }
    let base = bytes.baseAddress!
    guard base[0] == 0x4F, base[1] == 0x67, base[2] == 0x67, base[3] == 0x53 else {
      throw .unsupportedStream("not an Ogg stream (starts with \(hex(base, 4)))")
    }
    let start = 27 + Int(base[26])
    guard bytes.count >= start + 8 else {
      if ended { throw .unsupportedStream("stream too short for Ogg") }
      return nil
    }
    let packet = UnsafeBufferPointer(start: base + start, count: 8)
    if packet.starts(with: [0x01] + Array("vorbis".utf8)) { return .vorbis }
    if packet.starts(with: [0x7F] + Array("FLAC".utf8)) { return .flac }
    if packet.starts(with: Array("OpusHead".utf8)) { return .opus }
    throw .unsupportedStream("an Ogg stream of another codec (its first packet starts with \(hex(base + start, 8)))")
  }
}

/// FLAC as LMS sends it (`strm` format `f`): native FLAC, or an Ogg stream (Ogg FLAC, LMS's `ogf`
/// with sample size `o`, or whatever an Ogg radio stream holds), told apart by the first bytes.
public final class FLACStreamDecoder: AudioDecoder {
  private var inner: (any AudioDecoder)?

  public init() {}

  public var minimumFreeFrames: Int { inner?.minimumFreeFrames ?? 4096 }
  public var format: AudioFormat? { inner?.format }
  public var damage: StreamDamage { inner?.damage ?? StreamDamage() }
  public var content: String? { inner?.content }

  public func decode(from input: StreamInput, to output: FrameOutput) throws(DecodeError) -> DecodeProgress {
    if let inner { return try inner.decode(from: input, to: output) }
    guard input.ring.fill >= 4 || input.hasEnded else { return .needsInput }
    var magic: UInt32 = 0
    _ = withUnsafeMutableBytes(of: &magic) { input.ring.peek(into: $0) }
    inner = UInt32(bigEndian: magic) == 0x4F67_6753 ? OggStreamDecoder() : try FLACDecoder()  // "OggS"
    return .decoded
  }
}
