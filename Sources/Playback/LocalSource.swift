import Support

/// A cached track to play from disk.
public struct LocalSource: Equatable, Sendable {
  public var path: String
  public var codec: Codec

  public init(path: String, codec: Codec) {
    self.path = path
    self.codec = codec
  }
}
