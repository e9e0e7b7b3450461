import AudioBuffers

/// Reads Ogg pages from the stream ring as they arrive and hands out the packets in order (RFC 3533): a
/// packet spans segments of 255 bytes and may continue on the next page. A page that begins a
/// stream (BOS) starts a new link (a chained stream), whose first packet is reported as such;
/// pages of another stream than the latest begun are skipped. Never blocks: `next`
/// returns nil while the rest of a page has not arrived. Buffers are allocated once.
final class OggPacketReader {
  enum Packet {
    /// The first packet of a logical stream (a chained stream's next link begins with one).
    case first(UnsafeRawBufferPointer)
    case next(UnsafeRawBufferPointer)
  }

  static let maxPage = 27 + 255 + 255 * 255
  let maxPacket: Int

  private let page = UnsafeMutableRawBufferPointer.allocate(byteCount: OggPacketReader.maxPage, alignment: 16)
  private var pageCount = 0
  private var pageSize = 0
  /// The next segment of the current page to read.
  private var segment = 0
  private var bodyOffset = 0
  private let packet: UnsafeMutableRawBufferPointer
  private var packetCount = 0
  private var packetIsFirst = false
  private var serial: UInt32?
  /// Bytes passed over since the last page (looking for the next one).
  private var junk = 0
  /// Stretches of the stream lost: junk between pages, a packet whose page went missing.
  private(set) var lostStretches = 0
  private var skippingOrphan = false

  init(maxPacket: Int) {
    self.maxPacket = maxPacket
    packet = .allocate(byteCount: maxPacket, alignment: 16)
  }

  deinit {
    page.deallocate()
    packet.deallocate()
  }

  /// The next whole packet of the stream (valid until the next call), or nil until more arrives.
  func next(from input: StreamInput) throws(DecodeError) -> Packet? {
    while true {
      if pageSize == 0 {
        guard try readPage(input) else { return nil }
      }
      let segments = Int(page[26])
      while segment < segments {
        let length = Int(page[27 + segment])
        if skippingOrphan {
          bodyOffset += length
          segment += 1
          if length < 255 { skippingOrphan = false }
          continue
        }
        guard packetCount + length <= maxPacket else {
          throw .corrupt("Ogg packet larger than \(maxPacket) bytes")
        }
        (packet.baseAddress! + packetCount).copyMemory(from: page.baseAddress! + bodyOffset, byteCount: length)
        packetCount += length
        bodyOffset += length
        segment += 1
        if length < 255 {
          defer {
            packetCount = 0
            packetIsFirst = false
          }
          let bytes = UnsafeRawBufferPointer(rebasing: packet[0..<packetCount])
          return packetIsFirst ? .first(bytes) : .next(bytes)
        }
      }
      pageSize = 0  // the packet, if any, goes on on the next page
    }
  }

  /// Reads one page of this stream into `page`; false while it has not all arrived.
  private func readPage(_ input: StreamInput) throws(DecodeError) -> Bool {
    while true {
      if pageCount < 27 {
        pageCount += input.read(into: UnsafeMutableRawBufferPointer(rebasing: page[pageCount..<27]))
        guard pageCount == 27 else { return false }
        guard page[0] == 0x4F, page[1] == 0x67, page[2] == 0x67, page[3] == 0x53, page[4] == 0 else {
          // Not a page: drop a byte and look again (damage, or junk before the first page).
          if junk == 0 { lostStretches += 1 }
          junk += 1
          page.baseAddress!.copyMemory(from: page.baseAddress! + 1, byteCount: 26)
          pageCount = 26
          if junk > 1 << 20 { throw .corrupt("no Ogg page in 1 MiB") }
          continue
        }
      }
      junk = 0
      let segments = Int(page[26])
      if pageCount < 27 + segments {
        pageCount += input.read(into: UnsafeMutableRawBufferPointer(rebasing: page[pageCount..<(27 + segments)]))
        guard pageCount == 27 + segments else { return false }
      }
      var body = 0
      for i in 0..<segments { body += Int(page[27 + i]) }
      let size = 27 + segments + body
      if pageCount < size {
        pageCount += input.read(into: UnsafeMutableRawBufferPointer(rebasing: page[pageCount..<size]))
        guard pageCount == size else { return false }
      }
      pageCount = 0
      let flags = page[5]
      let pageSerial = UInt32(page[14]) | UInt32(page[15]) << 8 | UInt32(page[16]) << 16 | UInt32(page[17]) << 24
      if flags & 0x02 != 0 {
        // Beginning of a stream: the first, or a chained stream's next link.
        serial = pageSerial
        packetCount = 0
        packetIsFirst = true
      }
      guard pageSerial == serial else { continue }  // another logical stream's page
      if flags & 0x01 == 0 && packetCount > 0 {
        packetCount = 0  // a packet cut off by a lost page: dropped
        lostStretches += 1
      }
      // The rest of a packet whose beginning was never seen (a lost page, or a stream joined
      // midway): skipped up to its end.
      skippingOrphan = flags & 0x01 != 0 && packetCount == 0 && !packetIsFirst
      pageSize = size
      segment = 0
      bodyOffset = 27 + segments
      return true
    }
  }
}
