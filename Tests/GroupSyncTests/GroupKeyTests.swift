import Testing

@testable import GroupSync

/// The hash and the HMAC against the published test vectors (FIPS 180-4's examples, RFC 4231).
@Suite struct GroupKeyTests {
  private static func hex(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
  }

  @Test func sha256MatchesThePublishedExamples() {
    #expect(Self.hex(SHA256.hash([UInt8]())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    #expect(
      Self.hex(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    // 56 bytes: the padding needs a second block.
    let twoBlocks = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
    #expect(Self.hex(SHA256.hash(twoBlocks)) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    // Fed in uneven pieces, the same.
    var pieces = SHA256()
    pieces.update(twoBlocks[0..<3])
    pieces.update(twoBlocks[3..<50])
    pieces.update(twoBlocks[50...])
    #expect(Self.hex(pieces.finish()) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
  }

  @Test func hmacMatchesRFC4231() {
    let first = GroupKey(bytes: [UInt8](repeating: 0x0b, count: 20))
    #expect(
      Self.hex(first.authenticationCode(Array("Hi There".utf8)))
        == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
    #expect(
      Self.hex(GroupKey("Jefe").authenticationCode(Array("what do ya want for nothing?".utf8)))
        == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    // A key longer than a block is hashed first.
    let long = GroupKey(bytes: [UInt8](repeating: 0xaa, count: 131))
    #expect(
      Self.hex(long.authenticationCode(Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
        == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
  }

  @Test func aTagVerifiesOnlyTheBytesItWasMadeFor() {
    let key = GroupKey("living room")
    let covered = Array("a message".utf8)
    let tag = key.tag(covered)
    #expect(tag.count == 16)
    #expect(key.verify(GroupMessage.Tag(bytes: tag, covered: covered)))
    #expect(!GroupKey("kitchen").verify(GroupMessage.Tag(bytes: tag, covered: covered)))
    #expect(!key.verify(GroupMessage.Tag(bytes: tag, covered: Array("a messagE".utf8))))
    var flipped = tag
    flipped[15] ^= 1
    #expect(!key.verify(GroupMessage.Tag(bytes: flipped, covered: covered)))
  }
}
