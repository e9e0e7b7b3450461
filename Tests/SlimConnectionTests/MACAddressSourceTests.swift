import SlimConnection
import SlimProto
import Support
import TestSupport
import Testing

@Suite("MACAddressSource")
struct MACAddressSourceTests {
  @Test func derivedAddressIsDeterministic() {
    let a = MACAddressSource.derivedAddress(from: "0123456789abcdef0123456789abcdef")
    let b = MACAddressSource.derivedAddress(from: "0123456789abcdef0123456789abcdef")
    #expect(a == b)
    #expect(a != MACAddressSource.derivedAddress(from: "0123456789abcdef0123456789abcdee"))
    // The machine-id file ends in a newline; it must not change the address.
    #expect(a == MACAddressSource.derivedAddress(from: "0123456789abcdef0123456789abcdef\n"))
    #expect(a == MACAddressSource.derivedAddress(from: " 0123456789abcdef0123456789abcdef\r\n"))
  }

  @Test func derivedAddressesAreLocallyAdministeredUnicast() {
    for seed in ["", "slimplay", "host", "a", "b", "c"] + (0..<200).map({ "machine-\($0)" }) {
      let address = MACAddressSource.derivedAddress(from: seed)
      #expect(address.bytes.count == 6)
      #expect(address.bytes[0] & 0x02 == 0x02, "locally administered: \(address)")
      #expect(address.bytes[0] & 0x01 == 0, "unicast: \(address)")
      #expect(!address.isZero)
    }
  }

  @Test func derivedAddressesSpread() {
    let addresses = Set((0..<500).map { MACAddressSource.derivedAddress(from: "seed\($0)") })
    #expect(addresses.count == 500)
  }

  @Test func picksTheFirstRealInterfaceByName() {
    let root = TemporaryDirectory()
    defer { root.remove() }
    for name in ["aaa0", "bond0", "dummy0", "eth0", "lo", "wlan0"] { root.makeDirectory(name) }
    // aaa0 has no address file.
    root.writeFile("bond0/address", "not a mac\n")
    root.writeFile("dummy0/address", "00:00:00:aa:bb:cc\n")  // zero OUI: not a real NIC
    root.writeFile("eth0/address", "b8:27:eb:12:34:56\n")
    root.writeFile("lo/address", "00:00:00:00:00:00\n")
    root.writeFile("wlan0/address", "dc:a6:32:00:00:01\n")
    let address = MACAddressSource.stableAddress(sysfsRoot: root.path)
    #expect(address == MACAddress("b8:27:eb:12:34:56"))
  }

  @Test func loopbackIsSkippedEvenWithAnAddress() {
    let root = TemporaryDirectory()
    defer { root.remove() }
    for name in ["enp3s0", "lo"] { root.makeDirectory(name) }
    root.writeFile("enp3s0/address", "00:00:00:00:00:00\n")
    root.writeFile("lo/address", "02:42:ac:11:00:02\n")
    root.makeDirectory("wlp2s0")
    root.writeFile("wlp2s0/address", "3c:22:fb:aa:bb:cc\r\n")
    #expect(MACAddressSource.stableAddress(sysfsRoot: root.path) == MACAddress("3c:22:fb:aa:bb:cc"))
  }

  @Test func withoutARealInterfaceTheAddressIsDerived() {
    let root = TemporaryDirectory()
    defer { root.remove() }
    root.makeDirectory("lo")
    root.writeFile("lo/address", "02:42:ac:11:00:02\n")
    root.makeDirectory("veth0")
    root.writeFile("veth0/address", "00:00:00:11:22:33\n")
    let address = MACAddressSource.stableAddress(sysfsRoot: root.path)
    #expect(address != MACAddress("02:42:ac:11:00:02"))
    #expect(address.bytes[0] & 0x03 == 0x02)
    // Same source on every run.
    #expect(MACAddressSource.stableAddress(sysfsRoot: root.path) == address)
    let seed = FileIO.readText("/etc/machine-id") ?? FileIO.readText("/etc/hostname") ?? "slimplay"
    #expect(address == MACAddressSource.derivedAddress(from: seed))
  }

  @Test func missingSysfsRootFallsBackToTheDerivedAddress() {
    let address = MACAddressSource.stableAddress(sysfsRoot: "/nonexistent/slimplay/net")
    #expect(address.bytes[0] & 0x03 == 0x02)
  }
}
