/// The HELO capabilities string: `Key=Value` pairs and format tokens, comma-separated.
/// LMS takes the first listed format it can stream, so the format order is the preference order.
public struct Capabilities: Equatable, Sendable {
  public var model: String
  public var modelName: String
  public var firmware: String
  public var maxSampleRate: Int
  public var accuratePlayPoints: Bool
  public var canHTTPS: Bool
  public var hasPolarityInversion: Bool
  /// LMS then offers its "fixed volume" setting: `audg` without digital volume control plays at unity.
  public var hasDigitalOut: Bool
  /// Left and right gains of `audg` apply separately (LMS 8's balance setting).
  public var balance: Bool
  public var syncGroupID: String?
  /// Format tokens (`flc`, `ops`, `mp3`, `aif`, `pcm`…), most preferred first.
  public var formats: [String]

  public init(
    model: String = "squeezelite", modelName: String, firmware: String, maxSampleRate: Int,
    accuratePlayPoints: Bool = true, canHTTPS: Bool = false, hasPolarityInversion: Bool = true,
    hasDigitalOut: Bool = true, balance: Bool = true, syncGroupID: String? = nil, formats: [String]
  ) {
    self.model = model
    self.modelName = modelName
    self.firmware = firmware
    self.maxSampleRate = maxSampleRate
    self.accuratePlayPoints = accuratePlayPoints
    self.canHTTPS = canHTTPS
    self.hasPolarityInversion = hasPolarityInversion
    self.hasDigitalOut = hasDigitalOut
    self.balance = balance
    self.syncGroupID = syncGroupID
    self.formats = formats
  }

  public var encoded: String {
    var items: [String] = []
    if canHTTPS { items.append("CanHTTPS=1") }
    items.append("Model=\(model)")
    items.append("ModelName=\(modelName)")
    items.append("Firmware=\(firmware)")
    if accuratePlayPoints { items.append("AccuratePlayPoints=1") }
    if hasDigitalOut { items.append("HasDigitalOut=1") }
    if hasPolarityInversion { items.append("HasPolarityInversion=1") }
    if balance { items.append("Balance=1") }
    items.append("MaxSampleRate=\(maxSampleRate)")
    items.append(contentsOf: formats)
    if let syncGroupID { items.append("SyncgroupID=\(syncGroupID)") }
    return items.joined(separator: ",")
  }

  /// Splits a capabilities string into its key/value pairs and format tokens, as LMS does.
  public static func parse(_ text: String) -> (values: [String: String], formats: [String]) {
    var values: [String: String] = [:]
    var formats: [String] = []
    for item in text.split(separator: ",") {
      if let equals = item.firstIndex(of: "=") {
        values[String(item[..<equals])] = String(item[item.index(after: equals)...])
      } else if isFormatToken(item) {
        formats.append(String(item))
      }
    }
    return (values, formats)
  }

  /// LMS's rule: `^[a-z][a-z0-9]{1,4}$`.
  static func isFormatToken(_ item: Substring) -> Bool {
    guard (2...5).contains(item.count), let first = item.first, first.isASCII, first.isLowercase else {
      return false
    }
    return item.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber) }
  }
}
