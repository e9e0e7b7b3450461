import LMSControl
import Logging
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// What a cached file is, as the server described it when it was downloaded: its URL and type,
/// the server it came from and the track (title, artist, album, ids) for a library built without
/// that server.
public struct CacheRecord: Equatable, Sendable {
  public var key: CacheKey
  public var url: String
  public var type: String
  /// The server it came from (`LMSEndpoint.identity`, what its key was made with).
  public var server: String?
  public var track: QueueTrack?

  public init(key: CacheKey, url: String, type: String, server: String? = nil, track: QueueTrack? = nil) {
    self.key = key
    self.url = url
    self.type = type
    self.server = server
    self.track = track
  }
}

/// The cache's records on disk, `records.jsonl`: one JSON object a line, appended when a file is
/// added, never held in memory (a library of thousands of tracks would cost megabytes, idle).
/// They are read when the library is asked for. A line whose file has left the cache is stale: the
/// newest line of a key counts, and the file is rewritten without stale lines when they outnumber
/// the live ones. A line torn by a crash or a full disk does not parse and is skipped.
///
/// Appends come from the download loop; reads from the control loop read whole lines only (the
/// last, incomplete one is skipped), so no lock is needed; rewrites happen only from the store's
/// load and its additions, which the download loop serialises.
struct CacheRecords {
  let path: String
  let logger: Logger

  /// Appends `record`; a line that cannot be written whole is cut off again, and a line torn
  /// earlier (a crash mid-write) is ended first, so it does not swallow this one.
  func append(_ record: CacheRecord) {
    var line = Array((record.json.encoded + "\n").utf8)
    let fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
    guard fd >= 0 else {
      logger.error("cannot record \(record.key) in \(path): \(errorText(errno))")
      return
    }
    defer { close(fd) }
    let before = lseek(fd, 0, SEEK_END)
    var lastByte: UInt8 = 0
    if before > 0, pread(fd, &lastByte, 1, before - 1) == 1, lastByte != UInt8(ascii: "\n") {
      line.insert(UInt8(ascii: "\n"), at: 0)
    }
    if case .failure(let failure) = line.withUnsafeBytes({ POSIXIO.writeAll(fd, $0) }) {
      logger.error("cannot record \(record.key) in \(path): \(errorText(failure.code))")
      if before >= 0 { _ = ftruncate(fd, before) }
    }
  }

  /// The newest record of each key `wanted` keeps.
  func read(where wanted: (CacheKey) -> Bool) -> [CacheKey: CacheRecord] {
    var records: [CacheKey: CacheRecord] = [:]
    forEachLine { _, record in
      if let record, wanted(record.key) { records[record.key] = record }
    }
    return records
  }

  /// The record that describes `track` (its URL and size), whatever server's key it has.
  func first(recording track: QueueTrack, where wanted: (CacheKey) -> Bool) -> CacheRecord? {
    var found: CacheRecord?
    forEachLine { _, record in
      if let record, wanted(record.key), record.track?.url == track.url, record.track?.fileSize == track.fileSize {
        found = record
      }
    }
    return found
  }

  /// The number of lines (complete or not), to decide when a rewrite is due.
  func lineCount() -> Int {
    guard let bytes = FileIO.read(path, limit: .max) else { return 0 }
    return bytes.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
  }

  /// Rewrites the file with the newest line of each key `live` keeps; returns the lines kept.
  @discardableResult
  func compact(keeping live: (CacheKey) -> Bool) -> Int {
    var newest: [CacheKey: ArraySlice<UInt8>] = [:]
    var order: [CacheKey] = []
    forEachLine { line, record in
      guard let record, live(record.key) else { return }
      if newest.updateValue(line, forKey: record.key) == nil { order.append(record.key) }
    }
    var bytes: [UInt8] = []
    for key in order {
      bytes += newest[key]!
      bytes.append(UInt8(ascii: "\n"))
    }
    do {
      try FileIO.writeAtomically(path, bytes)
    } catch {
      logger.error("cannot rewrite \(path): \(error)")
    }
    return order.count
  }

  /// Replaces the file with `records` (moving records out of an index that held them).
  func replace(with records: [CacheRecord]) {
    var bytes: [UInt8] = []
    for record in records { bytes += Array((record.json.encoded + "\n").utf8) }
    do {
      try FileIO.writeAtomically(path, bytes)
    } catch {
      logger.error("cannot write \(path): \(error)")
    }
  }

  /// Each whole line with its record (nil: a line that does not parse).
  private func forEachLine(_ body: (ArraySlice<UInt8>, CacheRecord?) -> Void) {
    guard let bytes = FileIO.read(path, limit: .max) else { return }
    var start = bytes.startIndex
    while let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) {
      let line = bytes[start..<end]
      start = end + 1
      guard !line.isEmpty else { continue }
      body(line, (try? JSONValue(parsing: line)).flatMap(CacheRecord.init))
    }
  }
}

extension CacheRecord {
  var json: JSONValue {
    var members: [String: JSONValue] = ["key": .string(key.value), "url": .string(url), "type": .string(type)]
    if let server { members["server"] = .string(server) }
    if let track { members["track"] = track.json }
    return .object(members)
  }

  /// From a line of `records.jsonl`, or from an entry of a version 1 index (which held records).
  init?(_ value: JSONValue) {
    guard let key = value["key"]?.string.flatMap(CacheKey.init(hex:)) else { return nil }
    self.init(
      key: key, url: value["url"]?.string ?? "", type: value["type"]?.string ?? "", server: value["server"]?.string,
      track: value["track"].flatMap { QueueTrack($0, index: 0) })
  }
}
