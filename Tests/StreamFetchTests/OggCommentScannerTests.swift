import TestSupport
import Testing

@testable import StreamFetch

#if canImport(Glibc)
  import Glibc
#endif

/// Real encoders' files (Debian's oggenc, opusenc and flac), chained as a station sends them.
@Suite("OggCommentScanner", .serialized)  // the tests share one folder of encoded links
struct OggCommentScannerTests {
  private let folder = "/tmp/slimplay-ogg-comments-\(getpid())"

  private func read(_ path: String) -> [UInt8] {
    guard let file = fopen(path, "rb") else { return [] }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
      let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
      if n == 0 { break }
      bytes += chunk[0..<n]
    }
    return bytes
  }

  /// Encodes a second of tone with `tags` (name, value) by `encoder`: "vorbis", "opus" or "flac".
  private func link(
    _ name: String, encoder: String, tags: [(String, String)], serial: Int? = nil
  ) throws -> [UInt8] {
    let wav = "\(folder)/\(name).wav"
    let out = "\(folder)/\(name).ogg"
    try #require(shell("mkdir -p \(folder) && sox -n -r 48000 -c 2 -b 16 \(wav) synth 1 sine 440") == 0)
    let command: String
    switch encoder {
    case "vorbis":
      command =
        "oggenc -Q " + (serial.map { "-s \($0) " } ?? "") + tags.map { "-c '\($0.0)=\($0.1)'" }.joined(separator: " ")
        + " -o \(out) \(wav)"
    case "opus":
      command =
        "opusenc --quiet " + tags.map { "--comment '\($0.0)=\($0.1)'" }.joined(separator: " ") + " \(wav) \(out)"
    default:
      command = "flac -s --ogg " + tags.map { "-T '\($0.0)=\($0.1)'" }.joined(separator: " ") + " -o \(out) \(wav)"
    }
    try #require(shell(command) == 0, "\(encoder) encodes the test link")
    return read(out)
  }

  private func scanInPieces(_ bytes: [UInt8], pieceSizes: [Int]) -> [[UInt8]] {
    var scanner = OggCommentScanner()
    var found: [[UInt8]] = []
    var offset = 0
    var turn = 0
    while offset < bytes.count {
      let size = min(pieceSizes[turn % pieceSizes.count], bytes.count - offset)
      found += bytes[offset..<offset + size].withUnsafeBytes { scanner.scan($0) }
      offset += size
      turn += 1
    }
    return found
  }

  private func meta(_ comments: [String]) -> [UInt8] {
    comments.reduce(Array("Ogg".utf8)) { payload, comment in
      let text = Array(comment.utf8)
      return payload + [UInt8(text.count >> 8), UInt8(text.count & 0xFF)] + text
    }
  }

  @Test func eachLinkOfAChainedStationGivesItsTitleArtistAndAlbumOnce() throws {
    defer { shell("rm -rf \(folder)") }
    let stream =
      try link("a", encoder: "vorbis", tags: [("TITLE", "One"), ("ARTIST", "First Band"), ("GENRE", "Noise")])
      + link("b", encoder: "opus", tags: [("title", "Two"), ("ALBUM", "Second Album")])
      + link("c", encoder: "flac", tags: [("ARTIST", "Third"), ("TITLE", "Trois")])
      + link("d", encoder: "vorbis", tags: [("COMMENT", "no title here")])
    let expected = [
      meta(["TITLE=One", "ARTIST=First Band"]), meta(["title=Two", "ALBUM=Second Album"]),
      meta(["ARTIST=Third", "TITLE=Trois"]),
    ]
    // Whole, byte by byte, and in odd pieces across page and packet boundaries.
    #expect(scanInPieces(stream, pieceSizes: [stream.count]) == expected)
    #expect(scanInPieces(stream, pieceSizes: [1]) == expected)
    #expect(scanInPieces(stream, pieceSizes: [7, 1400, 3, 4096, 27]) == expected)
  }

  @Test func garbageAndACutStreamGiveNothingAndDoNotTrap() {
    var scanner = OggCommentScanner()
    var noise = SystemRandomNumberGenerator()
    let bytes = (0..<200_000).map { _ in UInt8.random(in: 0...255, using: &noise) }
    #expect(bytes.withUnsafeBytes { scanner.scan($0) }.isEmpty)
    // A header page that claims a comment packet longer than what follows.
    var page: [UInt8] = Array("OggS".utf8) + [0, 0] + [UInt8](repeating: 0, count: 8) + [1, 0, 0, 0]
    page += [UInt8](repeating: 0, count: 8) + [1, 40]  // sequence, checksum; 1 segment of 40 bytes
    page += Array("\u{03}vorbis".utf8) + [0xFF, 0xFF, 0xFF, 0x7F] + [UInt8](repeating: 0x41, count: 29)
    var fresh = OggCommentScanner()
    #expect(page.withUnsafeBytes { fresh.scan($0) }.isEmpty)
  }

  /// Some stations give every song the same serial number: each link still reports its own.
  @Test func linksThatShareASerialNumberEachReport() throws {
    defer { shell("rm -rf \(folder)") }
    let stream =
      try link("s1", encoder: "vorbis", tags: [("TITLE", "First")], serial: 7)
      + link("s2", encoder: "vorbis", tags: [("TITLE", "Second")], serial: 7)
    #expect(scanInPieces(stream, pieceSizes: [1000]) == [meta(["TITLE=First"]), meta(["TITLE=Second"])])
  }
}
