import LMSControl
import Logging
import NIOCore
import NIOHTTP1
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// A track the cache should hold, in priority order (the current track first).
public struct PlannedDownload: Equatable, Sendable {
  public var key: CacheKey
  public var track: QueueTrack
  /// The server the key was made for (`LMSEndpoint.identity`), recorded with the file.
  public var server: String?

  public init(key: CacheKey, track: QueueTrack, server: String? = nil) {
    self.key = key
    self.track = track
    self.server = server
  }
}

/// Keeps the planned tracks in the cache through `/music/<id>/download`: one download at a time,
/// resumed with `Range` after an interruption, written to a `.part` file, verified (length, and
/// the decoder can read it) and only then moved into place. Runs on its own event loop so file
/// writes never delay the control loop; it holds back while playback is filling its buffers.
public final class DownloadManager: @unchecked Sendable {
  public let eventLoop: any EventLoop
  private let store: CacheStore
  private let endpoint: @Sendable () -> LMSEndpoint?
  /// True while a live stream or the output is filling (`StreamingEngine.playbackIsFilling`):
  /// downloads read at most every 50 ms.
  private let playbackIsFilling: @Sendable () -> Bool
  private let logger: Logger

  // Loop state.
  private var plan: [PlannedDownload] = []
  private var active: (key: CacheKey, handle: HTTPExchangeHandle)?
  private var retryAfter: [CacheKey: NIODeadline] = [:]
  private var failures: [CacheKey: Int] = [:]
  /// Tracks already logged as not fitting, so a plan replaced every few seconds says it once.
  private var toldNoRoom: Set<CacheKey> = []
  private var wakeTask: Scheduled<Void>?
  /// Reported back on the control loop when a file lands in the cache.
  public var completed: (@Sendable (CacheKey) -> Void)?

  public init(
    eventLoop: any EventLoop, store: CacheStore, logger: Logger,
    endpoint: @escaping @Sendable () -> LMSEndpoint?, playbackIsFilling: @escaping @Sendable () -> Bool
  ) {
    self.eventLoop = eventLoop
    self.store = store
    self.logger = logger
    self.endpoint = endpoint
    self.playbackIsFilling = playbackIsFilling
  }

  /// Replaces the plan (any thread). A download no longer planned is stopped; its `.part` stays
  /// for a later resume. Called on every status change, so each planned file is rechecked
  /// (cheaply: size and time) every few seconds while playing.
  public func setPlan(_ plan: [PlannedDownload]) {
    eventLoop.execute { [self] in
      self.plan = plan
      if let active, !plan.contains(where: { $0.key == active.key }) {
        logger.info("download: \(active.key) left the plan, stopping")
        active.handle.cancel("left the plan")
        self.active = nil
      }
      startNext()
    }
  }

  private func startNext() {
    guard active == nil else { return }
    let protected = Set(plan.map(\.key))
    let now = NIODeadline.now()
    for item in plan {
      if store.entry(item.key) != nil {
        if store.verify(item.key) { continue }
      }
      if let until = retryAfter[item.key], until > now { continue }
      guard store.isWritable else { return }
      if let size = item.track.fileSize {
        let pinned = store.isPinned(item.key)
        guard pinned ? store.hasPinRoom(for: size) : store.hasRoom(for: size, protecting: protected) else {
          if toldNoRoom.insert(item.key).inserted {
            logger.warning(
              "download: no room for track \(item.track.id) '\(item.track.title)' (\(size) bytes) under the \(pinned ? "pin cap (--pin-size)" : "cache cap (--cache-size)")"
            )
          }
          continue
        }
      }
      start(item)
      return
    }
    // Nothing to do now; look again when a retry falls due.
    if let soonest = retryAfter.values.filter({ $0 > now }).min() {
      wakeTask?.cancel()
      wakeTask = eventLoop.assumeIsolated().scheduleTask(deadline: soonest) { [self] in startNext() }
    }
  }

  private func start(_ item: PlannedDownload) {
    guard let endpoint = endpoint() else { return }
    let partial = store.partialPath(of: item.key)
    let resumeFrom = CacheFiles.status(partial)?.size ?? 0
    var headers = endpoint.headers
    if resumeFrom > 0 { headers.append(("Range", "bytes=\(resumeFrom)-")) }
    let spec = HTTPRequestSpec(
      method: .GET, host: endpoint.host, port: endpoint.port, path: "/music/\(item.track.id)/download",
      headers: headers, deadline: nil, idleTimeout: .seconds(15))
    logger.info(
      "download: track \(item.track.id) '\(item.track.title)'\(resumeFrom > 0 ? " from byte \(resumeFrom)" : "")")
    let sink = PartialFileSink(
      path: partial, resumeFrom: resumeFrom, expectedSize: item.track.fileSize,
      playbackIsFilling: playbackIsFilling
    ) { [self] result in finished(item, result) }
    active = (item.key, startHTTPExchange(spec, on: eventLoop, sink: sink))
  }

  private func finished(_ item: PlannedDownload, _ result: Result<DownloadedFile, DownloadError>) {
    guard active?.key == item.key else { return }
    active = nil
    let partial = store.partialPath(of: item.key)
    switch result {
    case .success(let file):
      let size = file.size
      if let codec = Codec(fileType: item.track.type),
        CacheVerifier.decodes(path: partial, codec: codec),
        let checksum = file.checksum ?? CacheFiles.checksum(partial),
        store.add(
          item.key, url: item.track.url, type: item.track.type, from: partial, checksum: checksum,
          protected: Set(plan.map(\.key)), track: item.track, server: item.server)
      {
        logger.info("download: track \(item.track.id) cached (\(size) bytes)")
        failures[item.key] = nil
        retryAfter[item.key] = nil
        completed?(item.key)
      } else {
        logger.error("download: track \(item.track.id) is not playable audio: discarded")
        CacheFiles.remove(partial)
        backOff(item.key)
      }
    case .failure(let error):
      logger.error("download: track \(item.track.id): \(error)")
      if error.discardsPartial { CacheFiles.remove(partial) }
      backOff(item.key)
    }
    startNext()
  }

  private func backOff(_ key: CacheKey) {
    let count = (failures[key] ?? 0) + 1
    failures[key] = count
    let seconds = min(300, 5 << min(count - 1, 6))
    retryAfter[key] = .now() + .seconds(Int64(seconds))
  }
}

enum DownloadError: Error, CustomStringConvertible {
  case transport(HTTPExchangeError)
  case diskFull
  case write(String)
  case wrongLength(got: Int, expected: Int)

  var description: String {
    switch self {
    case .transport(let error): "\(error)"
    case .diskFull: "the cache's disk is full: download dropped, nothing else touched"
    case .write(let reason): "cannot write the cache file: \(reason)"
    case .wrongLength(let got, let expected): "got \(got) bytes, expected \(expected): discarded"
    }
  }

  /// A partial file worth keeping for a `Range` resume, or not.
  var discardsPartial: Bool {
    switch self {
    case .transport(.timedOut), .transport(.closedEarly), .transport(.cannotConnect): false
    default: true
    }
  }
}

/// A complete download: its size, and its checksum when every byte came in this transfer (a
/// resumed one is checksummed from the file).
struct DownloadedFile {
  var size: Int
  var checksum: UInt64?
}

/// Writes a download's body to its `.part` file, appending after a `206` resume.
final class PartialFileSink: HTTPResponseSink {
  private let path: String
  private let resumeFrom: Int
  private let expectedSize: Int?
  private let playbackIsFilling: @Sendable () -> Bool
  private let completion: (Result<DownloadedFile, DownloadError>) -> Void
  private var descriptor: Int32 = -1
  private var written = 0
  /// Of the bytes as they arrive, when the file is written from its first byte.
  private var checksum: ContentChecksum?
  private var totalSize: Int?
  private var writeError: DownloadError?

  init(
    path: String, resumeFrom: Int, expectedSize: Int?, playbackIsFilling: @escaping @Sendable () -> Bool,
    completion: @escaping (Result<DownloadedFile, DownloadError>) -> Void
  ) {
    self.path = path
    self.resumeFrom = resumeFrom
    self.expectedSize = expectedSize
    self.playbackIsFilling = playbackIsFilling
    self.completion = completion
  }

  func received(head: HTTPResponseHead) -> HTTPExchangeError? {
    let code = Int(head.status.code)
    let resuming = code == 206 && resumeFrom > 0
    guard code == 200 || resuming else { return .badStatus(code) }
    let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (resuming ? O_APPEND : O_TRUNC)
    descriptor = open(path, flags, 0o644)
    guard descriptor >= 0 else {
      writeError = errno == ENOSPC ? .diskFull : .write(errorText(errno))
      return .refusedBySink("cannot open \(path)")
    }
    written = resuming ? resumeFrom : 0
    checksum = resuming ? nil : ContentChecksum()
    if resuming, let range = head.headers.first(name: "Content-Range"), let slash = range.lastIndex(of: "/") {
      totalSize = Int(range[range.index(after: slash)...])
    } else if let length = head.headers.first(name: "Content-Length").flatMap({ Int($0) }) {
      totalSize = length + (resuming ? resumeFrom : 0)
    }
    return nil
  }

  func received(body: ByteBuffer) -> HTTPExchangeError? {
    let result = body.withUnsafeReadableBytes { bytes in
      checksum?.update(bytes)
      return POSIXIO.writeAll(descriptor, bytes)
    }
    if case .failure(let failure) = result {
      writeError = failure.code == ENOSPC || failure.code == EDQUOT ? .diskFull : .write(failure.description)
      return .refusedBySink("write failed")
    }
    written += body.readableBytes
    return nil
  }

  func delayBeforeNextRead() -> TimeAmount? {
    playbackIsFilling() ? .milliseconds(50) : nil
  }

  func finished(_ error: HTTPExchangeError?) {
    if descriptor >= 0 {
      if error == nil { fsync(descriptor) }
      close(descriptor)
    }
    if let writeError {
      completion(.failure(writeError))
    } else if let error {
      completion(.failure(.transport(error)))
    } else if let expected = expectedSize ?? totalSize, expected != written {
      completion(.failure(.wrongLength(got: written, expected: expected)))
    } else {
      completion(.success(DownloadedFile(size: written, checksum: checksum?.value)))
    }
  }
}
