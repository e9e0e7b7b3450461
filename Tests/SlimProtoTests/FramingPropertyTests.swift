import SlimProto
import Testing

/// Property (a): arbitrary bytes from the network never crash or hang the reader or the parser.
@Suite("Framing properties")
struct FramingPropertyTests {
  static let commands = ["strm", "audg", "aude", "setd", "serv", "vers", "cont", "codc", "body", "dsco", "grfe"]

  /// Half pure noise; half plausible frames (right length field, known command, random payload) so
  /// the message parsers see many inputs, with the odd corrupted byte.
  static func randomInput(_ rng: inout SplitMix64) -> [UInt8] {
    let limit = Int.random(in: 0...600, using: &rng)
    if rng.chance(1, in: 2) { return rng.bytes(limit) }
    var input: [UInt8] = []
    while input.count < limit {
      let command = rng.element(commands)
      var payload = rng.bytes(upTo: command == "strm" ? 90 : 40)
      if command == "strm", !payload.isEmpty, rng.chance(3, in: 4) {
        payload[0] = rng.element(Array("spuqfta".utf8))
        if payload.count > 10, rng.chance(1, in: 2) {
          payload[1] = rng.element(Array("0123".utf8))
          payload[2] = rng.element(Array("pfmouawldsn?".utf8))
          payload[10] = rng.element(Array("012345".utf8))
        }
      }
      input += ServerFrame(command: command, payload: payload).encoded()
      if rng.chance(1, in: 20) {
        input[Int.random(in: 0..<input.count, using: &rng)] = rng.u8()
      }
    }
    return Array(input.prefix(limit))
  }

  /// Exhaustive switch: compiles only because the reader and parsers throw `WireError` and nothing else.
  static func kind(_ error: WireError) -> String {
    switch error {
    case .truncated: "truncated"
    case .frameTooLarge: "frameTooLarge"
    case .frameTooShort: "frameTooShort"
    case .invalidCommand: "invalidCommand"
    case .invalidField: "invalidField"
    }
  }

  @Test func randomBytesYieldFramesOrWireErrors() {
    var rng = SplitMix64(seed: 0x51_1e_b0_c5)
    var frameCount = 0
    var parsedCount = 0
    var readerErrors: [String: Int] = [:]
    var parseErrors: [String: Int] = [:]

    for trial in 0..<2000 {
      let input = Self.randomInput(&rng)
      var reader = ServerFrameReader()
      var consumed = 0
      var failed = false
      var calls = 0
      // One call per chunk returns nil and every frame takes at least 6 bytes, so a working reader
      // needs fewer calls than this.
      let callLimit = 2 * input.count + 16

      feeding: for chunk in rng.chunks(of: input, maximumChunk: Int.random(in: 1...80, using: &rng)) {
        reader.append(chunk)
        while true {
          calls += 1
          guard calls <= callLimit else {
            Issue.record("trial \(trial): reader did not settle after \(callLimit) calls")
            break feeding
          }
          do {
            guard let frame = try reader.nextFrame() else { break }
            frameCount += 1
            consumed += 6 + frame.payload.count
            #expect(frame.command.utf8.count == 4)
            #expect(frame.payload.count + 4 <= FrameLimits.maximumServerFrame)
            do {
              let message = try ServerMessage(frame: frame)
              parsedCount += 1
              Self.checkReencoding(message, trial: trial)
            } catch {
              parseErrors[Self.kind(error), default: 0] += 1
            }
          } catch {
            readerErrors[Self.kind(error), default: 0] += 1
            failed = true
            break feeding  // out of step: a real connection is dropped here
          }
        }
      }
      if !failed {
        // No byte is lost or invented: everything is either in a frame or still buffered.
        #expect(consumed + reader.bufferedByteCount == input.count, "trial \(trial)")
        // And no complete frame is left behind.
        if reader.bufferedByteCount >= 2 {
          let length = Int(input[consumed]) << 8 | Int(input[consumed + 1])
          #expect(reader.bufferedByteCount < 2 + length, "trial \(trial)")
        }
      }
    }
    // The generator must really exercise both paths.
    #expect(frameCount > 2000)
    #expect(parsedCount > 1000)
    #expect(readerErrors.values.reduce(0, +) > 100)
    #expect(parseErrors.values.reduce(0, +) > 100)
  }

  /// A parsed message re-encodes into a frame that parses to the same message (normalisation is
  /// stable). `serv` and `cont` are exempt: they keep malformed tails (non-digit sync group ids,
  /// partial GUIDs) that do not survive re-encoding.
  static func checkReencoding(_ message: ServerMessage, trial: Int) {
    switch message {
    case .switchServer, .continueStream: return
    default: break
    }
    do {
      let again = try ServerMessage(frame: message.frame)
      #expect(again == message, "trial \(trial)")
    } catch {
      Issue.record("trial \(trial): re-encoded \(message) failed to parse: \(error)")
    }
  }
}
