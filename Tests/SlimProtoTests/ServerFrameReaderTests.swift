import SlimProto
import Testing

@Suite("ServerFrameReader")
struct ServerFrameReaderTests {
  static let frames: [ServerFrame] = [
    ServerFrame(command: "strm", payload: StreamCommandTests.message16),
    ServerFrame(command: "audg", payload: AudioGainTests.message7),
    ServerFrame(command: "setd", payload: [0]),
  ]

  @Test func splitDeliveryOneByteAtATime() throws {
    let wire = Self.frames.flatMap { $0.encoded() }
    var reader = ServerFrameReader()
    var received: [ServerFrame] = []
    let firstLength = Self.frames[0].encoded().count
    for (index, byte) in wire.enumerated() {
      reader.append(CollectionOfOne(byte))
      let before = received.count
      received += try drainFrames(&reader)
      if index < firstLength - 1 {
        #expect(received.isEmpty)
        #expect(reader.bufferedByteCount == index + 1)
      }
      if index == firstLength - 1 {
        #expect(received.count == before + 1)
        #expect(reader.bufferedByteCount == 0)
      }
    }
    #expect(received == Self.frames)
    #expect(reader.bufferedByteCount == 0)
  }

  @Test func coalescedFramesInOneAppend() throws {
    var reader = ServerFrameReader()
    reader.append(Self.frames.flatMap { $0.encoded() })
    #expect(try reader.nextFrame() == Self.frames[0])
    #expect(try reader.nextFrame() == Self.frames[1])
    #expect(try reader.nextFrame() == Self.frames[2])
    #expect(try reader.nextFrame() == nil)
    #expect(reader.bufferedByteCount == 0)
  }

  @Test func partialTrailingFrameStaysBuffered() throws {
    let wire = Self.frames.flatMap { $0.encoded() }
    var reader = ServerFrameReader()
    reader.append(wire.dropLast(2))
    #expect(try drainFrames(&reader) == Array(Self.frames.prefix(2)))
    #expect(reader.bufferedByteCount == Self.frames[2].encoded().count - 2)
    reader.append(wire.suffix(2))
    #expect(try drainFrames(&reader) == [Self.frames[2]])
  }

  @Test func emptyPayloadFrame() throws {
    var reader = ServerFrameReader()
    reader.append([0x00, 0x04] + ascii("dsco"))
    #expect(try reader.nextFrame() == ServerFrame(command: "dsco", payload: []))
  }

  @Test func lessThanTwoBytesIsNotAFrameYet() throws {
    var reader = ServerFrameReader()
    #expect(try reader.nextFrame() == nil)
    reader.append([0x00])
    #expect(try reader.nextFrame() == nil)
  }

  @Test(arguments: [0, 1, 2, 3])
  func lengthBelowFourThrowsFrameTooShort(_ length: Int) {
    var reader = ServerFrameReader()
    reader.append([0x00, UInt8(length)] + ascii("strm"))
    #expect(throws: WireError.frameTooShort(length: length)) { try reader.nextFrame() }
  }

  @Test func lengthAboveTheLimitThrowsFrameTooLarge() {
    #expect(FrameLimits.maximumServerFrame == 8192)
    var reader = ServerFrameReader()
    reader.append(be16(UInt16(FrameLimits.maximumServerFrame + 1)))
    #expect(throws: WireError.frameTooLarge(length: 8193, limit: 8192)) { try reader.nextFrame() }

    var huge = ServerFrameReader()
    huge.append([0xff, 0xff])
    #expect(throws: WireError.frameTooLarge(length: 65535, limit: 8192)) { try huge.nextFrame() }
  }

  @Test func lengthAtTheLimitIsAccepted() throws {
    let payload = [UInt8](repeating: 0x55, count: FrameLimits.maximumServerFrame - 4)
    let wire = ServerFrame(command: "grfe", payload: payload).encoded()
    #expect(Array(wire[0..<2]) == [0x20, 0x00])
    var reader = ServerFrameReader()
    reader.append(wire.prefix(100))
    #expect(try reader.nextFrame() == nil)
    reader.append(wire.dropFirst(100))
    #expect(try reader.nextFrame()?.payload.count == 8188)
  }

  @Test func nonASCIICommandThrowsInvalidCommand() {
    var reader = ServerFrameReader()
    reader.append([0x00, 0x08, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4])
    #expect(throws: WireError.invalidCommand([0xde, 0xad, 0xbe, 0xef])) { try reader.nextFrame() }
  }

  @Test func upperCaseCommandIsOutOfStep() {
    var reader = ServerFrameReader()
    reader.append([0x00, 0x04] + ascii("STRM"))
    #expect(throws: WireError.invalidCommand(ascii("STRM"))) { try reader.nextFrame() }
  }

  @Test func badCommandIsDetectedBeforeThePayloadArrives() {
    var reader = ServerFrameReader()
    reader.append([0x01, 0x00, 0x00, 0x73, 0x74, 0x72])  // length 256, command "\0str"
    #expect(throws: WireError.invalidCommand([0x00, 0x73, 0x74, 0x72])) { try reader.nextFrame() }
  }

  @Test func commandsWithDigitsAndSpacesAreAccepted() throws {
    var reader = ServerFrameReader()
    reader.append([0x00, 0x05] + ascii("i2cc") + [9] + [0x00, 0x04] + ascii("ab  "))
    #expect(try reader.nextFrame() == ServerFrame(command: "i2cc", payload: [9]))
    #expect(try reader.nextFrame() == ServerFrame(command: "ab  ", payload: []))
  }

  @Test func manyFramesThroughTheQueueKeepTheirOrder() throws {
    // Exercises the lazy compaction of the internal queue across many appends.
    var reader = ServerFrameReader()
    var received: [ServerFrame] = []
    var sent: [ServerFrame] = []
    for index in 0..<500 {
      let frame = ServerFrame(command: "vers", payload: ascii(String(index)))
      sent.append(frame)
      let wire = frame.encoded()
      reader.append(wire.prefix(3))
      received += try drainFrames(&reader)
      reader.append(wire.dropFirst(3))
      received += try drainFrames(&reader)
    }
    #expect(received == sent)
  }
}
