import SlimProto
import Testing

@Suite("MACAddress")
struct MACAddressTests {
  @Test func parsesColonAndDashForms() {
    let expected: [UInt8] = [0x00, 0x11, 0x22, 0x33, 0x44, 0x55]
    #expect(MACAddress("00:11:22:33:44:55")?.bytes == expected)
    #expect(MACAddress("00-11-22-33-44-55")?.bytes == expected)
    #expect(MACAddress("AA:bb:Cc:dD:ee:FF")?.bytes == [0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff])
  }

  @Test(arguments: [
    "", "00:11:22:33:44", "00:11:22:33:44:55:66", "0:11:22:33:44:55", "000:11:22:33:44:55",
    "gg:11:22:33:44:55", "00:11:22:33:44:5", "00112233445",
  ])
  func rejectsMalformedText(_ text: String) {
    #expect(MACAddress(text) == nil)
  }

  @Test func rejectsWrongByteCount() {
    #expect(MACAddress(bytes: [1, 2, 3, 4, 5]) == nil)
    #expect(MACAddress(bytes: [1, 2, 3, 4, 5, 6, 7]) == nil)
  }

  @Test func descriptionIsLowerCaseAndZeroPadded() {
    #expect(MACAddress(bytes: [0x00, 0x0a, 0xb0, 0xff, 0x01, 0x10])?.description == "00:0a:b0:ff:01:10")
    let text = "de:ad:be:ef:00:01"
    #expect(MACAddress(text)?.description == text)
  }

  @Test func isZero() {
    #expect(MACAddress(bytes: [0, 0, 0, 0, 0, 0])?.isZero == true)
    #expect(MACAddress(bytes: [0, 0, 0, 0, 0, 1])?.isZero == false)
  }
}
