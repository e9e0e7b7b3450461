/// Where each sample (an AAC or ALAC packet) of a track lies in the file and how large it is:
/// `stsz`/`stz2` (sizes), `stsc` (samples per chunk), `stco`/`co64` (chunk offsets); plus the
/// sum of `stts` (the track's length in media timescale units, priming and padding included).
struct MP4SampleTable {
  struct ChunkRun: Equatable {
    /// 0-based index of the first chunk of the run.
    var firstChunk: Int
    var samplesPerChunk: Int
  }

  var count: Int
  /// Every sample's size when the file gives one for all (`stsz` sample_size), else 0.
  var constantSize: Int
  var sizes: [UInt32]
  var chunkOffsets: [UInt64]
  var runs: [ChunkRun]
  var totalDuration: Int
  var largestSample: Int
  /// `stts`: runs of samples of one duration.
  var durations: [(count: Int, delta: Int)] = []

  func size(of sample: Int) -> Int { constantSize > 0 ? constantSize : Int(sizes[sample]) }

  /// The sample that plays at `time` (media timescale units) and the time it starts at; past the
  /// end: the sample count and the total duration.
  func sample(at time: Int) -> (index: Int, start: Int) {
    var index = 0
    var start = 0
    for run in durations {
      let count = min(run.count, self.count - index)
      guard count > 0 else { break }
      if run.delta > 0 && time < start + count * run.delta {
        let within = max(0, time - start) / run.delta
        return (index + within, start + within * run.delta)
      }
      index += count
      start += count * run.delta
    }
    return (index, start)
  }

  /// When sample `index` starts (media timescale units).
  func start(of index: Int) -> Int {
    var remaining = index
    var start = 0
    for run in durations {
      let count = min(run.count, remaining)
      start += count * run.delta
      remaining -= count
      if remaining == 0 { break }
    }
    return start
  }

  static func parse(_ stbl: [MP4Box]) throws(DecodeError) -> MP4SampleTable {
    var table = MP4SampleTable(
      count: 0, constantSize: 0, sizes: [], chunkOffsets: [], runs: [], totalDuration: 0, largestSample: 0)
    if let stsz = MP4Box.first(.stsz, in: stbl) {
      var reader = MP4Reader(stsz.payload)
      try reader.skip(4, "stsz version")
      table.constantSize = Int(try reader.u32("stsz sample size"))
      table.count = Int(try reader.u32("stsz sample count"))
      if table.constantSize == 0 {
        guard table.count <= reader.remaining / 4 else { throw .corrupt("MP4: stsz lists fewer sizes than samples") }
        table.sizes.reserveCapacity(table.count)
        for _ in 0..<table.count { table.sizes.append(try reader.u32("stsz entry")) }
      }
    } else if let stz2 = MP4Box.first(.stz2, in: stbl) {
      var reader = MP4Reader(stz2.payload)
      try reader.skip(7, "stz2 version")
      let fieldSize = Int(try reader.u8("stz2 field size"))
      table.count = Int(try reader.u32("stz2 sample count"))
      guard [4, 8, 16].contains(fieldSize) else { throw .corrupt("MP4: stz2 field size \(fieldSize)") }
      guard table.count <= reader.remaining * 8 / fieldSize else { throw .corrupt("MP4: stz2 too short") }
      table.sizes.reserveCapacity(table.count)
      var i = 0
      while i < table.count {
        switch fieldSize {
        case 4:
          let byte = try reader.u8("stz2 entry")
          table.sizes.append(UInt32(byte >> 4))
          if i + 1 < table.count { table.sizes.append(UInt32(byte & 15)) }
          i += 2
        case 8:
          table.sizes.append(UInt32(try reader.u8("stz2 entry")))
          i += 1
        default:
          table.sizes.append(UInt32(try reader.u16("stz2 entry")))
          i += 1
        }
      }
    } else {
      throw .corrupt("MP4: no sample sizes (stsz)")
    }
    table.largestSample = table.constantSize > 0 ? table.constantSize : Int(table.sizes.max() ?? 0)

    guard let stsc = MP4Box.first(.stsc, in: stbl) else { throw .corrupt("MP4: no sample-to-chunk table (stsc)") }
    var reader = MP4Reader(stsc.payload)
    try reader.skip(4, "stsc version")
    let entries = Int(try reader.u32("stsc entry count"))
    guard entries <= reader.remaining / 12 else { throw .corrupt("MP4: stsc shorter than its count") }
    for _ in 0..<entries {
      let first = Int(try reader.u32("stsc first chunk"))
      let perChunk = Int(try reader.u32("stsc samples per chunk"))
      try reader.skip(4, "stsc description index")
      guard first >= 1, first > (table.runs.last?.firstChunk ?? -1) + 1, perChunk > 0 else {
        throw .corrupt("MP4: stsc entry (first chunk \(first), \(perChunk) samples) out of order")
      }
      table.runs.append(ChunkRun(firstChunk: first - 1, samplesPerChunk: perChunk))
    }
    guard table.runs.first?.firstChunk == 0 || table.count == 0 else {
      throw .corrupt("MP4: stsc does not start at the first chunk")
    }

    if let stco = MP4Box.first(.stco, in: stbl) {
      var reader = MP4Reader(stco.payload)
      try reader.skip(4, "stco version")
      let count = Int(try reader.u32("stco entry count"))
      guard count <= reader.remaining / 4 else { throw .corrupt("MP4: stco shorter than its count") }
      table.chunkOffsets.reserveCapacity(count)
      for _ in 0..<count { table.chunkOffsets.append(UInt64(try reader.u32("stco entry"))) }
    } else if let co64 = MP4Box.first(.co64, in: stbl) {
      var reader = MP4Reader(co64.payload)
      try reader.skip(4, "co64 version")
      let count = Int(try reader.u32("co64 entry count"))
      guard count <= reader.remaining / 8 else { throw .corrupt("MP4: co64 shorter than its count") }
      table.chunkOffsets.reserveCapacity(count)
      for _ in 0..<count { table.chunkOffsets.append(try reader.u64("co64 entry")) }
    } else {
      throw .corrupt("MP4: no chunk offsets (stco)")
    }

    if let stts = MP4Box.first(FourCC("stts"), in: stbl) {
      var reader = MP4Reader(stts.payload)
      try reader.skip(4, "stts version")
      let entries = Int(try reader.u32("stts entry count"))
      for _ in 0..<entries {
        let samples = Int(try reader.u32("stts sample count"))
        let delta = Int(try reader.u32("stts sample delta"))
        let (length, overflow) = samples.multipliedReportingOverflow(by: delta)
        guard !overflow, length <= MP4Trim.limit - table.totalDuration else {
          throw .corrupt("MP4: sample durations (stts) longer than any track")
        }
        table.durations.append((samples, delta))
        table.totalDuration += length
      }
    }
    return table
  }
}

/// Walks the sample table in file order: each sample's offset and size.
struct MP4SampleCursor {
  private(set) var sample = 0
  private var chunk = 0
  private var inChunk = 0
  private var run = 0
  private var offset: UInt64 = 0

  /// The next sample, or nil after the last; throws when the table runs out of chunks first.
  mutating func next(in table: MP4SampleTable) throws(DecodeError) -> (offset: UInt64, size: Int)? {
    guard sample < table.count else { return nil }
    if sample == 0 || inChunk == table.runs[run].samplesPerChunk {
      if sample > 0 {
        chunk += 1
        inChunk = 0
      }
      while run + 1 < table.runs.count && table.runs[run + 1].firstChunk <= chunk { run += 1 }
      guard chunk < table.chunkOffsets.count else {
        throw .corrupt("MP4: sample \(sample) of \(table.count) lies beyond the last chunk")
      }
      offset = table.chunkOffsets[chunk]
    }
    let size = table.size(of: sample)
    defer {
      sample += 1
      inChunk += 1
      offset &+= UInt64(size)  // an offset that wraps lands before the read position: refused there
    }
    return (offset, size)
  }
}

/// The first edit that plays media (`elst`): where the track's presentation starts in the media
/// and how long it lasts (in the movie's timescale).
struct MP4EditList: Equatable {
  var mediaTime: Int
  var segmentDuration: Int

  static func parse(edts: UnsafeRawBufferPointer) throws(DecodeError) -> MP4EditList? {
    guard let elst = MP4Box.first(.elst, in: try MP4Box.children(of: edts, in: "edts")) else { return nil }
    var reader = MP4Reader(elst.payload)
    let version = try reader.u8("elst version")
    try reader.skip(3, "elst flags")
    let count = Int(try reader.u32("elst entry count"))
    for _ in 0..<count {
      let duration: Int
      let time: Int
      if version == 1 {
        duration = Int(truncatingIfNeeded: try reader.u64("elst duration"))
        time = Int(Int64(bitPattern: try reader.u64("elst media time")))
      } else {
        duration = Int(try reader.u32("elst duration"))
        time = Int(Int32(bitPattern: try reader.u32("elst media time")))
      }
      try reader.skip(4, "elst rate")
      if time >= 0 { return MP4EditList(mediaTime: time, segmentDuration: duration) }  // -1: an empty edit
    }
    return nil
  }
}

/// What of the decoded track is played, in media timescale units: `leading` units of encoder
/// priming are dropped, and at most `length` units are played after them (the padding after
/// them is dropped).
struct MP4Trim: Equatable {
  var leading: Int
  var length: Int?

  /// The longest track these figures may describe (2^40 units: 290 days at 44.1 kHz); anything
  /// beyond is damage, kept out of the arithmetic that follows.
  static let limit = 1 << 40

  init(leading: Int, length: Int?) {
    self.leading = leading
    self.length = length
  }

  /// iTunes' record wins (encoders that write it also write an edit list that covers the padding
  /// only roughly); else the edit list, whose duration, in the coarser movie timescale, is
  /// rounded up, so the sample table's own total bounds it; else the whole track.
  ///
  /// After a seek LMS sends a rewritten index: the sample table starts at the seek's sample, while
  /// `iTunSMPB` and the edit list still describe the whole file. A table shorter than they say is
  /// such a tail: it has no priming left to drop, only the padding at its end.
  init(
    iTunSMPB: (delay: Int, padding: Int, length: Int)?, edit: MP4EditList?, movieTimescale: Int,
    mediaTimescale: Int, mediaDuration: Int
  ) {
    let valid = 0...Self.limit
    var edit = edit
    if let e = edit, !valid.contains(e.mediaTime) || !valid.contains(e.segmentDuration) { edit = nil }
    let movieTimescale = valid.contains(movieTimescale) ? movieTimescale : 0
    let mediaTimescale = (1...(1 << 30)).contains(mediaTimescale) ? mediaTimescale : 1
    if let smpb = iTunSMPB, valid.contains(smpb.delay), valid.contains(smpb.padding), valid.contains(smpb.length) {
      let whole = smpb.delay + smpb.padding + smpb.length
      if smpb.length > 0 && mediaDuration >= whole {
        leading = smpb.delay
        length = smpb.length
      } else if smpb.length > 0 && mediaDuration > 0 {
        leading = 0
        length = max(0, mediaDuration - smpb.padding)
      } else {
        leading = smpb.delay
        length = max(0, mediaDuration - smpb.delay - smpb.padding)
      }
    } else if let edit {
      var available = mediaDuration - edit.mediaTime
      leading = edit.mediaTime
      if edit.segmentDuration > 0 && movieTimescale > 0 {
        let (product, overflow) = edit.segmentDuration.multipliedReportingOverflow(by: mediaTimescale)
        let scaled = overflow ? Self.limit : (product + movieTimescale - 1) / movieTimescale
        let rounding = (mediaTimescale + movieTimescale - 1) / movieTimescale
        if mediaDuration > 0 && available + rounding < scaled {
          leading = 0
          available = mediaDuration
        } else {
          available = mediaDuration > 0 ? min(available, scaled) : scaled
        }
      }
      length = max(0, available)
    } else {
      leading = 0
      length = mediaDuration > 0 ? mediaDuration : nil
    }
  }
}
