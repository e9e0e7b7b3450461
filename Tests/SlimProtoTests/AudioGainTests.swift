import SlimProto
import Testing

@Suite("audg")
struct AudioGainTests {
  /// Message 7: old 46/46, dvc 1, preamp 255, new 3840/3840, seq 0 (volume 50).
  static let message7: [UInt8] =
    [0, 0, 0, 46, 0, 0, 0, 46]  // old gains
    + [1, 255]  // dvc, preamp
    + [0x00, 0x00, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x00]  // new gains 16.16
    + [0, 0, 0, 0]  // sequence number

  /// Message 62: volume 80 → old 92/92, new 20992/20992.
  static let message62: [UInt8] =
    [0, 0, 0, 92, 0, 0, 0, 92] + [1, 255] + [0x00, 0x00, 0x52, 0x00, 0x00, 0x00, 0x52, 0x00] + [0, 0, 0, 0]

  @Test func parsesMessage7() throws {
    #expect(Self.message7.count == 22)
    let gain = try AudioGain(parsing: Self.message7)
    #expect(gain.oldLeft == 46)
    #expect(gain.oldRight == 46)
    #expect(gain.digitalVolumeControl)
    #expect(gain.preamp == 255)
    #expect(gain.left == 3840)
    #expect(gain.right == 3840)
    #expect(gain.sequenceNumber == 0)
    #expect(gain.controllerSequenceID.isEmpty)
    #expect(gain.effectiveGains == (left: 3840, right: 3840))
  }

  @Test func encodesMessage7Exactly() {
    let gain = AudioGain(
      oldLeft: 46, oldRight: 46, digitalVolumeControl: true, preamp: 255, left: 3840, right: 3840,
      sequenceNumber: 0)
    #expect(gain.encoded() == Self.message7)
    let wire = ServerMessage.audioGain(gain).frame.encoded()
    #expect(wire == [0x00, 26] + ascii("audg") + Self.message7)
  }

  @Test func parsesMessage62() throws {
    let gain = try AudioGain(parsing: Self.message62)
    #expect(gain.oldLeft == 92)
    #expect(gain.left == 20992)
    #expect(gain.right == 20992)
    #expect(gain.encoded() == Self.message62)
  }

  @Test func pauseGainIsZero() throws {
    // Messages 29 and 32: old 0/0, new 0/0 before strm p / strm u.
    var payload = Self.message7
    for index in [3, 7, 12, 13, 16, 17] { payload[index] = 0 }
    let gain = try AudioGain(parsing: payload)
    #expect(gain.effectiveGains == (left: 0, right: 0))
  }

  @Test func fixedVolumeMeansUnityGain() throws {
    var payload = Self.message62
    payload[8] = 0  // dvc off
    let gain = try AudioGain(parsing: payload)
    #expect(!gain.digitalVolumeControl)
    #expect(gain.left == 20992)  // still carried
    #expect(gain.effectiveGains == (left: 0x10000, right: 0x10000))
    #expect(AudioGain.unity == 65536)
  }

  @Test func legacy18BytePayloadHasNoSequenceNumber() throws {
    let gain = try AudioGain(parsing: Array(Self.message7.prefix(18)))
    #expect(gain.sequenceNumber == nil)
    #expect(gain.encoded() == Array(Self.message7.prefix(18)))
  }

  @Test func controllerSequenceIDFollowsTheSequenceNumber() throws {
    let payload = Self.message7.prefix(18) + [0, 0, 0, 9] + ascii("abc123")
    let gain = try AudioGain(parsing: Array(payload))
    #expect(gain.sequenceNumber == 9)
    #expect(gain.controllerSequenceID == ascii("abc123"))
    #expect(gain.encoded() == Array(payload))
  }

  @Test func truncatedPayloadThrows() {
    #expect(throws: WireError.truncated(message: "audg", needed: 18, available: 17)) {
      try AudioGain(parsing: Array(Self.message7.prefix(17)))
    }
  }
}
