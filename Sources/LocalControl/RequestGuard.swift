/// Who may drive the player through the API. A page open in a browser on the same machine (or
/// on the same network) can send requests to the API's address: it must not get to play, skip
/// or change the volume.
///
/// - DNS rebinding: a page on the attacker's domain, re-resolved to the player's address, sends
///   its own domain as `Host`. Only an IP literal, `localhost` or one of the player's own names is
///   accepted as `Host`.
/// - Cross-site requests: a foreign page's `POST` (a form, or `fetch` without CORS) carries its
///   `Origin`, and `Sec-Fetch-Site: cross-site` in current browsers. A state-changing request is
///   refused unless its origin is the API's own.
///
/// Pure: the server hands it the request's headers and answers what it says.
public struct RequestGuard: Sendable {
  public enum Refusal: Error, Equatable, Sendable {
    case foreignHost(String)
    case foreignOrigin(String)

    public var description: String {
      switch self {
      case .foreignHost(let host): "Host '\(host)' is not this player's address"
      case .foreignOrigin(let origin): "requests from '\(origin)' may not control this player"
      }
    }
  }

  /// Names besides IP literals and `localhost` that reach the player (its host name, the API's
  /// listening name), lower-cased.
  private let ownNames: Set<String>

  public init(ownNames: [String]) {
    var names = Set<String>()
    for name in ownNames where !name.isEmpty {
      let lower = name.lowercased()
      names.insert(lower)
      // mDNS: a Pi answers to <hostname>.local.
      if !lower.contains(".") { names.insert(lower + ".local") }
    }
    self.ownNames = names
  }

  /// Checks one request. `host`, `origin` and `fetchSite` are the `Host`, `Origin` and
  /// `Sec-Fetch-Site` headers (nil when absent).
  public func check(method: String, host: String?, origin: String?, fetchSite: String?) -> Refusal? {
    // No Host: not a browser (every browser sends one), so not a rebinding page.
    if let host, !isOwn(hostName(ofAuthority: host)) { return .foreignHost(host) }
    guard Self.changesState(method) else { return nil }
    if fetchSite?.lowercased() == "cross-site" { return .foreignOrigin(origin ?? "another site") }
    guard let origin else { return nil }
    guard let authority = Self.authority(ofOrigin: origin), let host,
      Self.sameAuthority(authority, host, defaultPort: origin.lowercased().hasPrefix("https:") ? 443 : 80)
    else { return .foreignOrigin(origin) }
    return nil
  }

  static func changesState(_ method: String) -> Bool {
    !["GET", "HEAD", "OPTIONS"].contains(method.uppercased())
  }

  private func isOwn(_ name: String) -> Bool {
    let name = name.lowercased()
    return Self.isIPLiteral(name) || name == "localhost" || name.hasSuffix(".localhost") || ownNames.contains(name)
  }

  /// `name[:port]` or `[v6][:port]` → the name (brackets kept off).
  func hostName(ofAuthority authority: String) -> String {
    if authority.hasPrefix("[") {
      guard let close = authority.firstIndex(of: "]") else { return authority }
      return String(authority[authority.index(after: authority.startIndex)..<close])
    }
    if let colon = authority.lastIndex(of: ":") { return String(authority[..<colon]) }
    return authority
  }

  static func isIPLiteral(_ name: String) -> Bool {
    if name.contains(":") {
      // IPv6: hex digits, colons, and perhaps a dotted IPv4 tail.
      return name.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
    }
    let parts = name.split(separator: ".", omittingEmptySubsequences: false)
    return parts.count == 4
      && parts.allSatisfy { part in
        !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCII) && part.allSatisfy(\.isNumber)
          && Int(part).map { $0 <= 255 } == true
      }
  }

  /// `scheme://authority` → the authority; nil for `null` and anything else.
  static func authority(ofOrigin origin: String) -> String? {
    guard let range = origin.firstRange(of: "://") else { return nil }
    let scheme = origin[..<range.lowerBound].lowercased()
    guard scheme == "http" || scheme == "https" else { return nil }
    let authority = origin[range.upperBound...]
    guard !authority.isEmpty, !authority.contains("/") else { return nil }
    return String(authority)
  }

  /// `a` and `b` name the same host and port (`b` is a Host header, which omits port 80).
  static func sameAuthority(_ a: String, _ b: String, defaultPort: Int) -> Bool {
    func split(_ value: String, _ port: Int) -> (String, Int) {
      let lower = value.lowercased()
      if let close = lower.lastIndex(of: "]") {
        let rest = lower[lower.index(after: close)...]
        return (String(lower[...close]), rest.hasPrefix(":") ? Int(rest.dropFirst()) ?? -1 : port)
      }
      if let colon = lower.lastIndex(of: ":") {
        return (String(lower[..<colon]), Int(lower[lower.index(after: colon)...]) ?? -1)
      }
      return (lower, port)
    }
    return split(a, defaultPort) == split(b, defaultPort)
  }
}
