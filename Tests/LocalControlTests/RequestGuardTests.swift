import Testing

@testable import LocalControl

@Suite("RequestGuard")
struct RequestGuardTests {
  let requestGuard = RequestGuard(ownNames: ["0.0.0.0", "livingroom-pi"])

  private func check(
    _ method: String = "POST", host: String? = "127.0.0.1:9393", origin: String? = nil, site: String? = nil
  ) -> RequestGuard.Refusal? {
    requestGuard.check(method: method, host: host, origin: origin, fetchSite: site)
  }

  @Test func addressesLocalhostAndTheMachinesOwnNamesAreThisPlayer() {
    for host in [
      "127.0.0.1:9393", "192.168.1.20:9393", "[::1]:9393", "[fe80::1]", "localhost:9393", "LocalHost",
      "app.localhost:9393", "livingroom-pi:9393", "livingroom-pi.local:9393", "LIVINGROOM-PI",
    ] {
      #expect(check("GET", host: host) == nil, "\(host)")
      #expect(check(host: host) == nil, "\(host)")
    }
  }

  @Test func aRebindingPagesOwnDomainAsHostIsRefusedEvenForReading() {
    #expect(check("GET", host: "attacker.example:9393") == .foreignHost("attacker.example:9393"))
    #expect(check(host: "attacker.example") == .foreignHost("attacker.example"))
    // Names that merely look like addresses are names.
    #expect(check("GET", host: "127.0.0.1.attacker.example:9393") != nil)
    #expect(check("GET", host: "1.2.3.256:9393") != nil)
    #expect(check("GET", host: "livingroom-pi.attacker.example") != nil)
  }

  @Test func aClientWithoutHostIsNoBrowserAndPasses() {
    #expect(check(host: nil) == nil)
  }

  @Test func aForeignOriginMayReadButNotControl() {
    let origin = "http://attacker.example"
    #expect(check("GET", origin: origin) == nil)
    #expect(check("POST", origin: origin) == .foreignOrigin(origin))
    #expect(check("PUT", origin: origin) == .foreignOrigin(origin))
    #expect(check("POST", origin: "null") == .foreignOrigin("null"))
    // The same host on another port is another origin.
    #expect(check("POST", origin: "http://127.0.0.1:8080") == .foreignOrigin("http://127.0.0.1:8080"))
  }

  @Test func thePlayersOwnPageControlsIt() {
    #expect(check("POST", host: "127.0.0.1:9393", origin: "http://127.0.0.1:9393", site: "same-origin") == nil)
    #expect(check("POST", host: "livingroom-pi:80", origin: "http://livingroom-pi") == nil)
    #expect(check("POST", host: "[::1]:9393", origin: "http://[::1]:9393") == nil)
  }

  @Test func aCrossSiteFetchIsRefusedEvenWithoutAnOrigin() {
    #expect(check("POST", site: "cross-site") == .foreignOrigin("another site"))
    #expect(check("GET", site: "cross-site") == nil)
  }

  @Test func tokensCompareEqualOnlyWhenEveryByteAndTheLengthMatch() {
    #expect(ControlRouter.constantTimeEqual("s3cret-token", "s3cret-token"))
    #expect(!ControlRouter.constantTimeEqual("s3cret-token", "s3cret-tokeN"))
    #expect(!ControlRouter.constantTimeEqual("s3cret-token", "s3cret-toke"))
    #expect(!ControlRouter.constantTimeEqual("", "s3cret-token"))
    #expect(!ControlRouter.constantTimeEqual("s3cret-token\0", "s3cret-token"))
    #expect(ControlRouter.constantTimeEqual("", ""))
  }
}
