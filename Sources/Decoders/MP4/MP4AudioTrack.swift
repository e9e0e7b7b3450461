/// The audio track of an MP4 file, as its `moov` box describes it: the codec and its
/// configuration, the sample table, and the trim that makes it gapless.
struct MP4AudioTrack {
  enum Codec: Equatable {
    /// MPEG-4 audio (AAC): the AudioSpecificConfig from the `esds` descriptor.
    case aac(config: [UInt8])
    /// Apple Lossless: the 24-byte ALACSpecificConfig ("magic cookie").
    case alac(cookie: [UInt8])
  }

  var codec: Codec
  /// From the sample entry (the codec's own configuration may say otherwise: HE-AAC doubles it).
  var sampleRate: Int
  var channels: Int
  var bitsPerSample: Int
  /// Units of the sample table's durations and of the trim.
  var mediaTimescale: Int
  var samples: MP4SampleTable
  var trim: MP4Trim

  /// Reads the first audio track with a codec this player decodes out of a `moov` payload.
  static func parse(moov: UnsafeRawBufferPointer) throws(DecodeError) -> MP4AudioTrack {
    let boxes = try MP4Box.children(of: moov, in: "moov")
    var movieTimescale = 0
    if let mvhd = MP4Box.first(.mvhd, in: boxes) {
      var reader = MP4Reader(mvhd.payload)
      let version = try reader.u8("mvhd version")
      try reader.skip(3 + (version == 1 ? 16 : 8), "mvhd times")
      movieTimescale = Int(try reader.u32("mvhd timescale"))
    }
    let smpb = try iTunSMPB(in: boxes)
    var found: [String] = []
    for trak in boxes where trak.type == .trak {
      let children = try MP4Box.children(of: trak.payload, in: "trak")
      guard let mdia = MP4Box.first(.mdia, in: children) else { continue }
      let media = try MP4Box.children(of: mdia.payload, in: "mdia")
      guard let hdlr = MP4Box.first(.hdlr, in: media), hdlr.payload.count >= 12,
        MP4Reader.u32(hdlr.payload, at: 8) == FourCC.soun.value,
        let mdhd = MP4Box.first(.mdhd, in: media), let minf = MP4Box.first(.minf, in: media)
      else { continue }
      var reader = MP4Reader(mdhd.payload)
      let version = try reader.u8("mdhd version")
      try reader.skip(3 + (version == 1 ? 16 : 8), "mdhd times")
      let timescale = Int(try reader.u32("mdhd timescale"))
      guard
        let stbl = MP4Box.first(.stbl, in: try MP4Box.children(of: minf.payload, in: "minf"))
      else { throw .corrupt("MP4: audio track without a sample table") }
      let table = try MP4Box.children(of: stbl.payload, in: "stbl")
      guard let stsd = MP4Box.first(.stsd, in: table) else { throw .corrupt("MP4: no sample description") }
      let entry = try MP4SampleEntry.parse(stsd: stsd.payload)
      guard let codec = entry.codec else {
        found.append(entry.format.description)
        continue
      }
      guard timescale > 0 else { throw .corrupt("MP4: media timescale 0") }
      let samples = try MP4SampleTable.parse(table)
      var edit: MP4EditList?
      if let edts = MP4Box.first(.edts, in: children) { edit = try MP4EditList.parse(edts: edts.payload) }
      let trim = MP4Trim(
        iTunSMPB: smpb, edit: edit, movieTimescale: movieTimescale, mediaTimescale: timescale,
        mediaDuration: samples.totalDuration)
      return MP4AudioTrack(
        codec: codec, sampleRate: entry.sampleRate, channels: entry.channels, bitsPerSample: entry.bitsPerSample,
        mediaTimescale: timescale, samples: samples, trim: trim)
    }
    if found.isEmpty { throw .unsupportedStream("MP4 without an audio track") }
    throw .unsupportedStream("MP4 audio in '\(found.joined(separator: "', '"))', not AAC or ALAC")
  }

  /// iTunes' gapless record: moov/udta/meta/ilst/----(name "iTunSMPB"), a text of hex fields
  /// " 00000000 <delay> <padding> <original length> …".
  static func iTunSMPB(in moov: [MP4Box]) throws(DecodeError) -> (delay: Int, padding: Int, length: Int)? {
    guard let udta = MP4Box.first(.udta, in: moov),
      let meta = MP4Box.first(.meta, in: try MP4Box.children(of: udta.payload, in: "udta"))
    else { return nil }
    // ISO's meta is a full box (4 bytes of version and flags before its boxes); QuickTime's is
    // not, and its first box, `hdlr`, then starts at once.
    let quickTime = meta.payload.count >= 8 && MP4Reader.u32(meta.payload, at: 4) == FourCC.hdlr.value
    guard meta.payload.count >= 4,
      let ilst = MP4Box.first(
        .ilst,
        in: try MP4Box.children(of: UnsafeRawBufferPointer(rebasing: meta.payload[(quickTime ? 0 : 4)...]), in: "meta"))
    else { return nil }
    for item in try MP4Box.children(of: ilst.payload, in: "ilst") where item.type == .freeform {
      let parts = try MP4Box.children(of: item.payload, in: "----")
      guard let name = MP4Box.first(.name, in: parts), name.payload.count > 4,
        String(decoding: name.payload[4...], as: UTF8.self) == "iTunSMPB",
        let data = MP4Box.first(.data, in: parts), data.payload.count > 8
      else { continue }
      let fields = String(decoding: data.payload[8...], as: UTF8.self).split(separator: " ")
      guard fields.count >= 4, let delay = Int(fields[1], radix: 16), let padding = Int(fields[2], radix: 16),
        let length = Int(fields[3], radix: 16)
      else { return nil }
      return (delay, padding, length)
    }
    return nil
  }
}

/// The first sample entry of a `stsd` box, for the audio fields and the codec configuration.
struct MP4SampleEntry {
  var format: FourCC
  var codec: MP4AudioTrack.Codec?
  var sampleRate: Int
  var channels: Int
  var bitsPerSample: Int

  static func parse(stsd: UnsafeRawBufferPointer) throws(DecodeError) -> MP4SampleEntry {
    var reader = MP4Reader(stsd)
    try reader.skip(4, "stsd version")
    guard try reader.u32("stsd entry count") >= 1 else { throw .corrupt("MP4: empty sample description") }
    let entries = try MP4Box.children(of: UnsafeRawBufferPointer(rebasing: stsd[8...]), in: "stsd")
    guard let entry = entries.first else { throw .corrupt("MP4: empty sample description") }
    var audio = MP4Reader(entry.payload)
    try audio.skip(8, "sample entry reserved")  // reserved 6, data reference index 2
    let version = try audio.u16("sound description version")
    try audio.skip(6, "sound description revision and vendor")
    var channels = Int(try audio.u16("channel count"))
    var bits = Int(try audio.u16("sample size"))
    try audio.skip(4, "compression id and packet size")
    var rate = Int(try audio.u32("sample rate") >> 16)
    switch version {
    case 1: try audio.skip(16, "sound description v1")
    case 2:
      // QuickTime v2: the rate as a 64-bit float, then the real channel count and bit depth.
      try audio.skip(4, "size of struct")
      let rateValue = Double(bitPattern: try audio.u64("v2 sample rate"))
      guard rateValue.isFinite, rateValue >= 1, rateValue <= 16_777_216 else {
        throw .corrupt("MP4: sample rate \(rateValue)")
      }
      rate = Int(rateValue)
      channels = Int(try audio.u32("v2 channel count"))
      try audio.skip(4, "v2 reserved")
      bits = Int(try audio.u32("v2 bits per channel"))
      try audio.skip(12, "v2 flags and packet sizes")
    default: break
    }
    let children = UnsafeRawBufferPointer(rebasing: entry.payload[audio.position...])
    var codec: MP4AudioTrack.Codec?
    if entry.type == .mp4a {
      if let esds = try find(.esds, in: children) {
        codec = .aac(config: try ESDescriptor.audioSpecificConfig(esds: esds))
      } else {
        throw .corrupt("MP4: 'mp4a' entry without an 'esds' box")
      }
    } else if entry.type == .alac {
      guard let box = try find(.alac, in: children), box.count >= 28 else {
        throw .corrupt("MP4: 'alac' entry without its configuration")
      }
      codec = .alac(cookie: Array(box[4..<28]))
    }
    return MP4SampleEntry(format: entry.type, codec: codec, sampleRate: rate, channels: channels, bitsPerSample: bits)
  }

  /// A box among `bytes`, or inside a QuickTime `wave` box among them.
  private static func find(_ type: FourCC, in bytes: UnsafeRawBufferPointer) throws(DecodeError)
    -> UnsafeRawBufferPointer?
  {
    let boxes = try MP4Box.children(of: bytes, in: "sample entry")
    if let box = MP4Box.first(type, in: boxes) { return box.payload }
    if let wave = MP4Box.first(.wave, in: boxes) {
      return MP4Box.first(type, in: try MP4Box.children(of: wave.payload, in: "wave"))?.payload
    }
    return nil
  }
}

/// MPEG-4 Systems descriptors inside `esds`: ES_Descriptor → DecoderConfigDescriptor →
/// DecoderSpecificInfo, whose bytes are the AudioSpecificConfig.
enum ESDescriptor {
  static func audioSpecificConfig(esds: UnsafeRawBufferPointer) throws(DecodeError) -> [UInt8] {
    var reader = MP4Reader(esds)
    try reader.skip(4, "esds version")
    var body = try descriptor(&reader, tag: 0x03, "ES_Descriptor")
    try body.skip(2, "ES id")
    let flags = try body.u8("ES flags")
    if flags & 0x80 != 0 { try body.skip(2, "depends-on ES id") }
    if flags & 0x40 != 0 { try body.skip(Int(try body.u8("URL length")), "URL") }
    if flags & 0x20 != 0 { try body.skip(2, "OCR ES id") }
    var config = try descriptor(&body, tag: 0x04, "DecoderConfigDescriptor")
    let objectType = try config.u8("object type")
    // 0x40: MPEG-4 audio; 0x66–0x68: MPEG-2 AAC main, LC, SSR.
    guard objectType == 0x40 || (0x66...0x68).contains(objectType) else {
      throw .unsupportedStream("MP4 audio object type 0x\(String(objectType, radix: 16)), not AAC")
    }
    try config.skip(12, "decoder config")
    let info = try descriptor(&config, tag: 0x05, "DecoderSpecificInfo")
    guard info.remaining >= 2 else { throw .corrupt("MP4: AudioSpecificConfig of \(info.remaining) bytes") }
    return Array(info.bytes)
  }

  /// The next descriptor's body, which must carry `tag`; its length is 1–4 bytes of 7 bits.
  private static func descriptor(_ reader: inout MP4Reader, tag: UInt8, _ name: String) throws(DecodeError)
    -> MP4Reader
  {
    let found = try reader.u8("\(name) tag")
    guard found == tag else {
      throw .corrupt("MP4: expected \(name) (tag \(tag)), found tag \(found)")
    }
    var length = 0
    for _ in 0..<4 {
      let byte = try reader.u8("\(name) length")
      length = length << 7 | Int(byte & 0x7F)
      if byte & 0x80 == 0 { break }
    }
    return MP4Reader(try reader.slice(min(length, reader.remaining), name))
  }
}
