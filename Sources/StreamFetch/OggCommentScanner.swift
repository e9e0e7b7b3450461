/// Finds the comments of each link of an Ogg stream as its bytes arrive (Vorbis, Opus, Ogg FLAC:
/// an internet station sends a new link, with its own comments, for each song) and makes of the
/// title, artist and album the META that LMS reads for Ogg: `Ogg`, then each comment as a 2-byte
/// big-endian length and its text, as squeezelite sends them.
///
/// Only pages of granule position 0 (a link's header pages) are kept to be looked into (a page
/// holds at most 64 KiB); a comment packet is read as far as its first page holds it (what follows
/// is usually artwork). One META per link: a link's first page (BOS) starts it afresh, so a
/// station that gives every song the same serial number is followed too. Pure and incremental:
/// bytes in, payloads out.
public struct OggCommentScanner {
  private enum Stage {
    /// Looking for `OggS`; `matched` of its bytes seen.
    case sync(matched: Int)
    /// The rest of the 27-byte page header, then the segment table.
    case header
    case body(remaining: Int)
  }

  public init() {}

  static let headerBytes = 27
  static let capturePattern: [UInt8] = [0x4F, 0x67, 0x67, 0x53]  // OggS
  static let largestComment = 1024
  public static let largestPayload = 4096

  private var stage = Stage.sync(matched: 0)
  private var header: [UInt8] = []
  private var segments: [UInt8] = []
  /// The body of a header page, kept to be read once complete.
  private var page: [UInt8]?
  /// Serial numbers of the current links whose comments were reported.
  private var reported: Set<UInt32> = []
  /// Ogg FLAC links seen (their comments are a FLAC metadata block after the mapping header).
  private var flacLinks: Set<UInt32> = []

  /// Takes the next bytes of the stream; returns the META payloads of links whose comments
  /// arrived in them.
  public mutating func scan(_ bytes: UnsafeRawBufferPointer) -> [[UInt8]] {
    var found: [[UInt8]] = []
    var index = 0
    while index < bytes.count {
      switch stage {
      case .sync(let matched):
        let byte = bytes[index]
        index += 1
        let capture = Self.capturePattern
        if byte == capture[matched] {
          if matched == 3 {
            header = capture
            segments = []
            stage = .header
          } else {
            stage = .sync(matched: matched + 1)
          }
        } else {
          stage = .sync(matched: byte == capture[0] ? 1 : 0)
        }
      case .header:
        if header.count < Self.headerBytes {
          let take = min(Self.headerBytes - header.count, bytes.count - index)
          header += bytes[index..<index + take]
          index += take
          continue
        }
        let wanted = Int(header[26])
        let take = min(wanted - segments.count, bytes.count - index)
        segments += bytes[index..<index + take]
        index += take
        guard segments.count == wanted else { continue }
        let size = segments.reduce(0) { $0 + Int($1) }
        if header[5] & 0x02 != 0 {  // beginning of a link
          reported.remove(serial)
          flacLinks.remove(serial)
        }
        page = granule == 0 ? [] : nil
        page?.reserveCapacity(size)
        stage = .body(remaining: size)
        if size == 0 { finishPage(into: &found) }
      case .body(let remaining):
        let take = min(remaining, bytes.count - index)
        page? += bytes[index..<index + take]
        index += take
        stage = .body(remaining: remaining - take)
        if remaining - take == 0 { finishPage(into: &found) }
      }
    }
    return found
  }

  private var granule: UInt64 {
    (0..<8).reduce(0) { $0 | UInt64(header[6 + $1]) << (8 * $1) }
  }

  private var serial: UInt32 {
    (0..<4).reduce(0) { $0 | UInt32(header[14 + $1]) << (8 * $1) }
  }

  private mutating func finishPage(into found: inout [[UInt8]]) {
    defer {
      page = nil
      stage = .sync(matched: 0)
    }
    guard let page, !reported.contains(serial) else { return }
    let continued = header[5] & 0x01 != 0
    // Packet starts: the page's start unless it continues a packet, and after every lacing value
    // below 255.
    var starts: [Int] = continued ? [] : [0]
    var offset = 0
    for lacing in segments {
      offset += Int(lacing)
      if lacing < 255 && offset < page.count { starts.append(offset) }
    }
    for start in starts {
      let packet = page[start...]
      if packet.starts(with: [0x7F, 0x46, 0x4C, 0x41, 0x43]) {  // \x7FFLAC: an Ogg FLAC link
        flacLinks.insert(serial)
        continue
      }
      let commentStart: Int?
      if packet.starts(with: [0x03, 0x76, 0x6F, 0x72, 0x62, 0x69, 0x73]) {  // \x03vorbis
        commentStart = start + 7
      } else if packet.starts(with: Array("OpusTags".utf8)) {
        commentStart = start + 8
      } else if flacLinks.contains(serial), let type = packet.first, type & 0x7F == 4 {
        commentStart = start + 4  // VORBIS_COMMENT block: type, 24-bit length
      } else {
        commentStart = nil
      }
      guard let commentStart, commentStart <= page.count else { continue }
      reported.insert(serial)
      if let payload = Self.payload(comments: page[commentStart...]) { found.append(payload) }
      return
    }
  }

  /// `Ogg` + the title, artist and album comments; nil when the link names none of them.
  static func payload(comments: ArraySlice<UInt8>) -> [UInt8]? {
    var reader = comments.startIndex
    func u32() -> Int? {
      guard reader + 4 <= comments.endIndex else { return nil }
      defer { reader += 4 }
      return (0..<4).reduce(0) { $0 | Int(comments[reader + $1]) << (8 * $1) }
    }
    guard let vendor = u32(), vendor <= comments.endIndex - reader else { return nil }
    reader += vendor
    guard let count = u32() else { return nil }
    var payload = Array("Ogg".utf8)
    for _ in 0..<count {
      guard let length = u32(), length <= comments.endIndex - reader else { break }
      let text = comments[reader..<reader + length]
      reader += length
      let name = text.prefix { $0 != 0x3D }.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }
      guard ["TITLE", "ARTIST", "ALBUM"].map({ Array($0.utf8) }).contains(name), length <= largestComment,
        payload.count + 2 + length <= largestPayload
      else { continue }
      payload += [UInt8(length >> 8), UInt8(length & 0xFF)] + text
    }
    return payload.count > 3 ? payload : nil
  }
}
