import SlimProto

/// SplitMix64: a tiny, seeded, deterministic generator so property tests are reproducible.
struct SplitMix64: RandomNumberGenerator {
  private var state: UInt64

  init(seed: UInt64) { state = seed }

  mutating func next() -> UInt64 {
    state &+= 0x9e37_79b9_7f4a_7c15
    var z = state
    z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
    z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
    return z ^ (z >> 31)
  }

  mutating func bytes(_ count: Int) -> [UInt8] {
    (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &self) }
  }

  mutating func bytes(upTo maximum: Int) -> [UInt8] {
    bytes(Int.random(in: 0...maximum, using: &self))
  }

  mutating func chance(_ numerator: Int, in denominator: Int) -> Bool {
    Int.random(in: 0..<denominator, using: &self) < numerator
  }
}

func ascii(_ text: String) -> [UInt8] { Array(text.utf8) }

/// The parts one after another. A long `a + b + c …` of array literals and calls is too much for
/// Swift 6.2's type checker (the arm64 compiler), which gives up on it; a list of `[UInt8]` is not.
func bytes(_ parts: [UInt8]...) -> [UInt8] { parts.flatMap { $0 } }

func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xff)] }

func be32(_ value: UInt32) -> [UInt8] {
  [UInt8(value >> 24), UInt8((value >> 16) & 0xff), UInt8((value >> 8) & 0xff), UInt8(value & 0xff)]
}

/// Reads a big-endian u16 at a payload offset (independent of the codec under test).
func u16(at offset: Int, in bytes: [UInt8]) -> UInt16 {
  UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
}

/// Reads a big-endian u32 at a payload offset (independent of the codec under test).
func u32(at offset: Int, in bytes: [UInt8]) -> UInt32 {
  bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
}

/// Drains every complete frame a reader holds.
func drainFrames(_ reader: inout ServerFrameReader) throws(WireError) -> [ServerFrame] {
  var frames: [ServerFrame] = []
  while let frame = try reader.nextFrame() { frames.append(frame) }
  return frames
}

func drainFrames(_ reader: inout PlayerFrameReader) throws(WireError) -> [PlayerFrame] {
  var frames: [PlayerFrame] = []
  while let frame = try reader.nextFrame() { frames.append(frame) }
  return frames
}

/// Observed in the LMS 7.9.1 ⇄ squeezelite 1.9.9 session (reference §4, §12).
enum Observed {
  static let playerMAC = MACAddress(bytes: [0x00, 0x11, 0x22, 0x33, 0x44, 0x55])!

  static let squeezeliteCapabilities =
    "CanHTTPS=1,Model=squeezelite,AccuratePlayPoints=1,HasDigitalOut=1,HasPolarityInversion=1,Balance=1,"
    + "Firmware=v1.9.9-1414,ModelName=SqueezeLite,MaxSampleRate=384000,"
    + "dsf,dff,alc,wma,wmap,wmal,aac,ogg,ops,ogf,flc,aif,pcm,mp3,loc"

  static let streamRequest = "GET /stream.mp3?player=00:11:22:33:44:55 HTTP/1.0\r\n\r\n"

  static let httpResponse =
    "HTTP/1.1 200 OK\r\nServer: Logitech Media Server (7.9.1 - TRUNK)\r\nConnection: close\r\n"
    + "Content-Type: audio/x-flac\r\n\r\n"
}
