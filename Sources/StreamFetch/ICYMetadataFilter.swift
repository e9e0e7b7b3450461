/// Removes Shoutcast/ICY metadata blocks from a stream body. Every `interval` audio bytes comes a
/// length byte n and then 16 × n bytes of metadata (`StreamTitle='…';`).
public struct ICYMetadataFilter: Sendable {
  private enum State: Sendable {
    case audio(remaining: Int)
    case lengthByte
    case metadata(remaining: Int)
  }

  public let interval: Int
  private var state: State
  private var block: [UInt8] = []

  public init(interval: Int) {
    precondition(interval > 0)
    self.interval = interval
    state = .audio(remaining: interval)
  }

  /// Splits `bytes` into audio runs (passed to `audio` in order, without copying) and complete
  /// metadata blocks (passed to `metadata`; empty blocks are skipped).
  public mutating func process(
    _ bytes: UnsafeRawBufferPointer, audio: (UnsafeRawBufferPointer) -> Void, metadata: ([UInt8]) -> Void
  ) {
    var index = 0
    while index < bytes.count {
      switch state {
      case .audio(let remaining):
        let n = min(remaining, bytes.count - index)
        audio(UnsafeRawBufferPointer(rebasing: bytes[index..<index + n]))
        index += n
        state = remaining - n == 0 ? .lengthByte : .audio(remaining: remaining - n)
      case .lengthByte:
        let length = Int(bytes[index]) * 16
        index += 1
        state = length == 0 ? .audio(remaining: interval) : .metadata(remaining: length)
      case .metadata(let remaining):
        let n = min(remaining, bytes.count - index)
        block.append(contentsOf: bytes[index..<index + n])
        index += n
        if remaining - n == 0 {
          metadata(block)
          block.removeAll(keepingCapacity: true)
          state = .audio(remaining: interval)
        } else {
          state = .metadata(remaining: remaining - n)
        }
      }
    }
  }
}
