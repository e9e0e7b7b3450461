import SlimplayCLI
import SlimplayPlayer
import Testing

/// `-i`: lircd's events as the Slim remote's codes LMS's default map knows.
@Suite("Infrared codes")
struct InfraredCodesTests {
  @Test func aLircrcCommandWinsOverTheButtonsName() {
    // LMS's IR/Slim_Devices_Remote.ir: pause 768920df, fwd 7689a05f, volup 7689807f.
    #expect(InfraredCodes.code(line: "0000000000000001 00 KEY_PLAY slim\n", command: "pause") == 0x7689_20df)
    #expect(InfraredCodes.code(line: "0000000000000002 00 ANYTHING slim\n", command: "fwd") == 0x7689_a05f)
    #expect(InfraredCodes.code(line: "0000000000000003 03 ANYTHING slim\n", command: "volup") == 0x7689_807f)
  }

  @Test func withoutACommandTheButtonsNameIsLooked() {
    #expect(InfraredCodes.code(line: "0000000000000001 00 KEY_PAUSE slim\n", command: "") == 0x7689_20df)
    #expect(InfraredCodes.code(line: "0000000000000001 0 KEY_NEXT devinput", command: "") == 0x7689_a05f)
    #expect(InfraredCodes.code(line: "0000000000000001 00 KEY_UNKNOWN slim\n", command: "") == nil)
    #expect(InfraredCodes.code(line: "garbage", command: "") == nil)
    #expect(InfraredCodes.code(line: "", command: "no-such-command") == nil)
  }

  /// Holding volume repeats it; holding play or power sends one press.
  @Test func onlyButtonsThatRepeatSendTheirRepeats() {
    #expect(InfraredCodes.code(line: "0000000000000001 05 KEY_VOLUMEUP slim\n", command: "") == 0x7689_807f)
    #expect(InfraredCodes.code(line: "0000000000000001 00 KEY_POWER slim\n", command: "") == 0x7689_40bf)
    #expect(InfraredCodes.code(line: "0000000000000001 01 KEY_POWER slim\n", command: "") == nil)
    #expect(InfraredCodes.code(line: "0000000000000001 1 KEY_PLAY devinput", command: "") == nil)
  }
}
