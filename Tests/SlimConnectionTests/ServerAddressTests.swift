import SlimConnection
import Testing

@Suite("ServerAddress")
struct ServerAddressTests {
  @Test func hostAloneUsesTheSlimProtoPort() {
    #expect(ServerAddress.defaultPort == 3483)
    #expect(ServerAddress(parsing: "lms.local") == ServerAddress(host: "lms.local", port: 3483))
    #expect(ServerAddress(parsing: "192.168.1.2") == ServerAddress(host: "192.168.1.2", port: 3483))
    #expect(ServerAddress(parsing: "lms", defaultPort: 9000)?.port == 9000)
  }

  @Test func hostAndPort() {
    #expect(ServerAddress(parsing: "192.168.1.2:3484") == ServerAddress(host: "192.168.1.2", port: 3484))
    #expect(ServerAddress(parsing: "lms:1")?.port == 1)
    #expect(ServerAddress(parsing: "lms:65535")?.port == 65535)
  }

  @Test(arguments: ["", ":3483", "lms:", "lms:0", "lms:65536", "lms:-1", "lms:port", "lms:34 83", "a:b:c", "::1"])
  func rejectsBadText(_ text: String) {
    #expect(ServerAddress(parsing: text) == nil)
  }

  @Test func description() {
    #expect(ServerAddress(host: "lms", port: 3483).description == "lms:3483")
  }

  @Test func fromIPv4Number() {
    #expect(ServerAddress(ipv4: 0xc0a8_010a, port: 3483) == ServerAddress(host: "192.168.1.10", port: 3483))
    #expect(ServerAddress(ipv4: 0x7f00_0001, port: 9000).host == "127.0.0.1")
    #expect(ServerAddress(ipv4: 0, port: 1).host == "0.0.0.0")
    #expect(ServerAddress(ipv4: 0xffff_ffff, port: 1).host == "255.255.255.255")
    #expect(ServerAddress(ipv4: 0x0000_0001, port: 3483).host == "0.0.0.1")
  }
}
