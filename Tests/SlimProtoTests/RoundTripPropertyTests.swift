import SlimProto
import Testing

/// Property (b): random valid messages survive encode → frame → parse, alone and as one byte stream
/// cut at random points.
@Suite("Round-trip properties")
struct RoundTripPropertyTests {
  @Test func serverMessagesRoundTripOneByOne() throws {
    var rng = SplitMix64(seed: 0xa0d9_0001)
    for _ in 0..<3000 {
      let message = rng.serverMessage()
      let wire = message.frame.encoded()
      var reader = ServerFrameReader()
      reader.append(wire)
      let frame = try #require(try reader.nextFrame())
      #expect(reader.bufferedByteCount == 0)
      #expect(try ServerMessage(frame: frame) == message)
    }
  }

  @Test func randomStrmAudgFieldsRoundTrip() throws {
    var rng = SplitMix64(seed: 0xa0d9_0002)
    for _ in 0..<2000 {
      let strm = rng.streamCommand()
      #expect(try StreamCommand(parsing: strm.encoded()) == strm)
      #expect(strm.encoded().count == StreamCommand.headerLength + strm.request.count)
      let gain = rng.audioGain()
      #expect(try AudioGain(parsing: gain.encoded()) == gain)
    }
  }

  @Test func randomHelloAndStatusFieldsRoundTrip() throws {
    var rng = SplitMix64(seed: 0xa0d9_0003)
    for _ in 0..<2000 {
      let hello = rng.hello()
      let helloPayload = hello.encoded()
      #expect(helloPayload.count == 36 + hello.capabilities.utf8.count)
      #expect(try Hello(parsing: helloPayload) == hello)
      let status = rng.status()
      let statusPayload = status.encoded()
      #expect(statusPayload.count == PlayerStatus.payloadLength)
      #expect(try PlayerStatus(parsing: statusPayload) == status)
    }
  }

  @Test func concatenatedServerStreamSplitAtRandomPoints() throws {
    var rng = SplitMix64(seed: 0xa0d9_0004)
    for _ in 0..<200 {
      let messages = (0..<Int.random(in: 1...50, using: &rng)).map { _ in rng.serverMessage() }
      let wire = messages.flatMap { $0.frame.encoded() }
      var reader = ServerFrameReader()
      var received: [ServerMessage] = []
      for chunk in rng.chunks(of: wire, maximumChunk: Int.random(in: 1...400, using: &rng)) {
        reader.append(chunk)
        received += try drainFrames(&reader).map { try ServerMessage(frame: $0) }
      }
      #expect(received == messages)
      #expect(reader.bufferedByteCount == 0)
    }
  }

  @Test func concatenatedPlayerStreamSplitAtRandomPoints() throws {
    var rng = SplitMix64(seed: 0xa0d9_0005)
    for _ in 0..<200 {
      let messages = (0..<Int.random(in: 1...50, using: &rng)).map { _ in rng.playerMessage() }
      let wire = messages.flatMap { $0.frame.encoded() }
      var reader = PlayerFrameReader()
      var received: [PlayerMessage] = []
      for chunk in rng.chunks(of: wire, maximumChunk: Int.random(in: 1...400, using: &rng)) {
        reader.append(chunk)
        received += try drainFrames(&reader).map { try PlayerMessage(frame: $0) }
      }
      #expect(received == messages)
      #expect(try reader.nextFrame() == nil)
    }
  }
}
