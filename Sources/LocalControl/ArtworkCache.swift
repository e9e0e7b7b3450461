import LMSControl
import Logging
import NIOCore
import Offline
import SlimConnection
import Support

#if canImport(Glibc)
  import Glibc
#endif

/// Covers from LMS (`/music/<coverid>/cover_300x300.jpg`) in a folder capped in size, least
/// recently used out first. Files are named by server and cover id, checked to be an image
/// when read (a damaged one is dropped and fetched again), and survive restarts.
public final class ArtworkCache {
  private let directory: String
  private let capacityBytes: Int
  private let client: LMSClient
  private let logger: Logger
  /// Cover ids being fetched, with who waits for them.
  private var pending: [String: [([UInt8]?) -> Void]] = [:]
  /// Covers never evicted (those of pinned music).
  public var kept: () -> Set<String> = { [] }

  public init(directory: String, capacityBytes: Int, client: LMSClient, logger: Logger) {
    self.directory = directory
    self.capacityBytes = capacityBytes
    self.client = client
    self.logger = logger
    if !FileIO.makeDirectories(directory) { logger.error("artwork: cannot create \(directory)") }
  }

  private func path(for coverID: String) -> String? {
    guard let server = client.endpoint?.identity else { return nil }
    return directory + "/" + CacheKey(server: server, url: "cover:" + coverID, fileSize: nil).value + ".img"
  }

  /// Whether a cover is on disk (checked cheaply: it is looked at as an image when read).
  public func hasImage(_ coverID: String) -> Bool {
    guard let file = path(for: coverID) else { return false }
    var info = stat()
    return stat(file, &info) == 0 && info.st_size > 0
  }

  /// The cover from disk, if it is there and is an image.
  public func cached(_ coverID: String) -> [UInt8]? {
    guard let file = path(for: coverID), let bytes = FileIO.read(file, limit: 8 << 20) else { return nil }
    guard Self.isImage(bytes) else {
      logger.warning("artwork: \(file) is not an image: dropped")
      unlink(file)
      return nil
    }
    utime(file, nil)  // recently used
    return bytes
  }

  /// The cover, from disk or fetched (on the loop); nil when the server has none.
  public func image(_ coverID: String, completion: @escaping ([UInt8]?) -> Void) {
    if let bytes = cached(coverID) {
      completion(bytes)
      return
    }
    if pending[coverID] != nil {
      pending[coverID]!.append(completion)
      return
    }
    guard let endpoint = client.endpoint, let file = path(for: coverID) else {
      completion(nil)
      return
    }
    pending[coverID] = [completion]
    let spec = HTTPRequestSpec(
      method: .GET, host: endpoint.host, port: endpoint.port, path: "/music/\(coverID)/cover_300x300.jpg",
      headers: endpoint.headers, deadline: .seconds(10), idleTimeout: .seconds(5))
    let sink = CollectingSink(limit: 8 << 20) { [self] result in
      var image: [UInt8]?
      switch result {
      case .success(let (_, bytes)) where Self.isImage(bytes):
        image = bytes
        do {
          try FileIO.writeAtomically(file, bytes)
          evict()
        } catch {
          logger.warning("artwork: cannot store \(coverID): \(error)")
        }
      case .success:
        logger.warning("artwork: cover \(coverID) is not an image")
      case .failure(let error):
        logger.info("artwork: cover \(coverID): \(error)")
      }
      let waiting = pending.removeValue(forKey: coverID) ?? []
      for done in waiting { done(image) }
    }
    startHTTPExchange(spec, on: client.eventLoop, sink: sink)
  }

  static func isImage(_ bytes: [UInt8]) -> Bool {
    bytes.starts(with: [0xFF, 0xD8, 0xFF]) || bytes.starts(with: [0x89, 0x50, 0x4E, 0x47])
      || bytes.starts(with: Array("GIF8".utf8)) || (bytes.count > 12 && Array(bytes[8..<12]) == Array("WEBP".utf8))
  }

  private func evict() {
    let keep = Set(kept().compactMap(path(for:)))
    var files: [(path: String, size: Int, used: Int)] = []
    for name in FileIO.entries(of: directory) where name.hasSuffix(".img") {
      var info = stat()
      let file = directory + "/" + name
      guard !keep.contains(file) else { continue }
      if stat(file, &info) == 0 { files.append((file, Int(info.st_size), Int(info.st_mtim.tv_sec))) }
    }
    var total = files.reduce(0) { $0 + $1.size }
    for file in files.sorted(by: { $0.used < $1.used }) where total > capacityBytes {
      unlink(file.path)
      total -= file.size
    }
  }
}
