import Support

/// `strm`: the server's stream and transport control (24-byte header + HTTP request).
public struct StreamCommand: Equatable, Sendable {
  public enum Command: UInt8, Sendable, CaseIterable {
    case start = 0x73  // s
    case pause = 0x70  // p
    case unpause = 0x75  // u
    case stop = 0x71  // q
    case flush = 0x66  // f
    case status = 0x74  // t
    case skipAhead = 0x61  // a
  }

  public enum Autostart: UInt8, Sendable, CaseIterable {
    /// Buffer, send STMl at the threshold, wait for `strm u`.
    case manual = 0x30
    /// Start once the output threshold is buffered.
    case automatic = 0x31
    /// Direct stream: send RESP, hold the body until `cont`, then behave as `manual`.
    case directManual = 0x32
    /// Direct stream: send RESP, hold the body until `cont`, then behave as `automatic`.
    case directAutomatic = 0x33

    public var isDirect: Bool { self == .directManual || self == .directAutomatic }
    public var startsAutomatically: Bool { self == .automatic || self == .directAutomatic }
  }

  public enum Format: UInt8, Sendable, CaseIterable {
    case pcm = 0x70  // p
    case flac = 0x66  // f
    case mp3 = 0x6d  // m
    case oggVorbis = 0x6f  // o
    case opus = 0x75  // u
    case aac = 0x61  // a
    case alac = 0x6c  // l
    case wma = 0x77  // w
    case dsd = 0x64  // d
    case squeezePlayDirect = 0x73  // s
    case test = 0x6e  // n
    case unknown = 0x3f  // ? (a `codc` follows)

    /// The codec that decodes this format; nil for those this player does not.
    public var codec: Codec? { Codec(streamFormatByte: rawValue) }
  }

  public enum TransitionType: UInt8, Sendable, CaseIterable {
    case none = 0x30
    case crossfade = 0x31
    case fadeIn = 0x32
    case fadeOut = 0x33
    case fadeInOut = 0x34
    case immediateCrossfade = 0x35
  }

  public var command: Command
  public var autostart: Autostart
  public var format: Format
  /// The PCM parameters as sent (their meaning depends on `format`, see `PCMCodes`).
  public var pcm: PCMCodes
  /// KB of input to buffer before autostart or STMl.
  public var threshold: UInt8
  /// ASCII `'0'` auto, `'1'` on, `'2'` off.
  public var spdifEnable: UInt8
  /// Seconds.
  public var transitionPeriod: UInt8
  public var transitionType: TransitionType
  public var flags: StreamFlags
  /// Tenths of a second of decoded audio before output starts.
  public var outputThreshold: UInt8
  public var slaves: UInt8
  /// 16.16 replay gain for `s`; an interval in ms for `p` and `a`; jiffies for `u`; an opaque
  /// timestamp for `t` (echoed raw in STMt).
  public var value: UInt32
  public var serverPort: UInt16
  /// IPv4 address in network order as a number; 0 means the SlimProto server itself.
  public var serverIP: UInt32
  /// The HTTP request, to be sent verbatim.
  public var request: [UInt8]

  public static let headerLength = 24

  /// 127.0.0.1:3483, the address LMS's LocalPlayer extension gives a stream whose request is a
  /// file name on the machine both share (offered with `loc` in HELO), not an HTTP request.
  public static let localFileAddress = (ip: UInt32(0x7F00_0001), port: UInt16(3483))

  /// The file to play for a LocalPlayer stream; nil for a network stream.
  public var localFilePath: String? {
    guard command == .start, serverIP == Self.localFileAddress.ip, serverPort == Self.localFileAddress.port,
      !request.isEmpty
    else { return nil }
    return String(decoding: request, as: UTF8.self)
  }

  /// An `https` stream: the TLS flag, or port 443 (LMS 7.9 hands a `CanHTTPS` player its https
  /// streams without the flag; squeezelite goes by the port too).
  public var usesTLS: Bool { flags.contains(.tls) || serverPort == 443 }

  /// LMS's own sync adjustment of a synced player, in milliseconds: `strm a` skips ahead (positive),
  /// `strm p` with an interval holds back (negative). Nil for anything else.
  public var syncAdjustmentMilliseconds: Int? {
    switch command {
    case .skipAhead: Int(value)
    case .pause where value > 0: -Int(value)
    default: nil
    }
  }

  /// An Ogg stream as LMS names it: Vorbis (`o`), Opus (`u`), or FLAC in Ogg (`f` with sample
  /// size `o`).
  public var carriesOgg: Bool {
    format == .oggVorbis || format == .opus || (format == .flac && pcm.sampleSize == UInt8(ascii: "o"))
  }

  public init(
    command: Command, autostart: Autostart = .manual, format: Format = .mp3,
    pcm: PCMCodes = .unspecified, threshold: UInt8 = 0, spdifEnable: UInt8 = 0x30,
    transitionPeriod: UInt8 = 0, transitionType: TransitionType = .none, flags: StreamFlags = [],
    outputThreshold: UInt8 = 0, slaves: UInt8 = 0, value: UInt32 = 0, serverPort: UInt16 = 0,
    serverIP: UInt32 = 0, request: [UInt8] = []
  ) {
    self.command = command
    self.autostart = autostart
    self.format = format
    self.pcm = pcm
    self.threshold = threshold
    self.spdifEnable = spdifEnable
    self.transitionPeriod = transitionPeriod
    self.transitionType = transitionType
    self.flags = flags
    self.outputThreshold = outputThreshold
    self.slaves = slaves
    self.value = value
    self.serverPort = serverPort
    self.serverIP = serverIP
    self.request = request
  }

  public init(parsing payload: [UInt8]) throws(WireError) {
    var reader = ByteReader(payload, message: "strm")
    let commandCode = try reader.u8()
    guard let command = Command(rawValue: commandCode) else {
      throw .invalidField(message: "strm", field: "command", value: UInt32(commandCode))
    }
    let autostartCode = try reader.u8()
    let formatCode = try reader.u8()
    let pcm = PCMCodes(
      sampleSize: try reader.u8(), sampleRate: try reader.u8(), channels: try reader.u8(),
      endianness: try reader.u8())
    let threshold = try reader.u8()
    let spdif = try reader.u8()
    let period = try reader.u8()
    let transitionCode = try reader.u8()
    let flags = StreamFlags(rawValue: try reader.u8())
    let outputThreshold = try reader.u8()
    let slaves = try reader.u8()
    let value = try reader.u32()
    let port = try reader.u16()
    let ip = try reader.u32()
    let request = reader.rest()

    // Only `s` gives meaning to the stream fields; LMS fills them loosely for the others.
    let autostart: Autostart
    let format: Format
    let transition: TransitionType
    if command == .start {
      guard let a = Autostart(rawValue: autostartCode) else {
        throw .invalidField(message: "strm", field: "autostart", value: UInt32(autostartCode))
      }
      guard let f = Format(rawValue: formatCode) else {
        throw .invalidField(message: "strm", field: "format", value: UInt32(formatCode))
      }
      guard let t = TransitionType(rawValue: transitionCode) else {
        throw .invalidField(message: "strm", field: "transition type", value: UInt32(transitionCode))
      }
      (autostart, format, transition) = (a, f, t)
    } else {
      autostart = Autostart(rawValue: autostartCode) ?? .manual
      format = Format(rawValue: formatCode) ?? .unknown
      transition = TransitionType(rawValue: transitionCode) ?? .none
    }
    self.init(
      command: command, autostart: autostart, format: format, pcm: pcm, threshold: threshold,
      spdifEnable: spdif, transitionPeriod: period, transitionType: transition, flags: flags,
      outputThreshold: outputThreshold, slaves: slaves, value: value, serverPort: port,
      serverIP: ip, request: request)
  }

  public func encoded() -> [UInt8] {
    var writer = ByteWriter(capacity: Self.headerLength + request.count)
    writer.u8(command.rawValue)
    writer.u8(autostart.rawValue)
    writer.u8(format.rawValue)
    writer.u8(pcm.sampleSize)
    writer.u8(pcm.sampleRate)
    writer.u8(pcm.channels)
    writer.u8(pcm.endianness)
    writer.u8(threshold)
    writer.u8(spdifEnable)
    writer.u8(transitionPeriod)
    writer.u8(transitionType.rawValue)
    writer.u8(flags.rawValue)
    writer.u8(outputThreshold)
    writer.u8(slaves)
    writer.u32(value)
    writer.u16(serverPort)
    writer.u32(serverIP)
    writer.append(request)
    return writer.bytes
  }

  /// The `strm t` timestamp exactly as its four bytes arrived, for the STMt echo.
  public var rawTimestamp: UInt32 { value }
}

/// `strm` flag bits (offset 11).
public struct StreamFlags: OptionSet, Equatable, Sendable {
  public let rawValue: UInt8
  public init(rawValue: UInt8) { self.rawValue = rawValue }

  public static let invertLeft = StreamFlags(rawValue: 0x01)
  public static let invertRight = StreamFlags(rawValue: 0x02)
  public static let leftOnly = StreamFlags(rawValue: 0x04)
  public static let rightOnly = StreamFlags(rawValue: 0x08)
  public static let squeezePlayDirect = StreamFlags(rawValue: 0x10)
  /// TLS for squeezelite-style players that advertise `CanHTTPS=1` (RTMP in LMS 7.9 comments).
  public static let tls = StreamFlags(rawValue: 0x20)
  /// Continue the stream without restarting the decoder (reconnect resume).
  public static let noRestartDecoder = StreamFlags(rawValue: 0x40)
  public static let loopForever = StreamFlags(rawValue: 0x80)
}

/// The four ASCII PCM code bytes of `strm` (offsets 3–6) and `codc`, kept as sent because their
/// meaning depends on the format (`'o'` is Ogg-FLAC for FLAC, `'2'`/`'5'` a container for AAC).
public struct PCMCodes: Equatable, Sendable {
  public var sampleSize: UInt8
  public var sampleRate: UInt8
  public var channels: UInt8
  public var endianness: UInt8

  public init(sampleSize: UInt8, sampleRate: UInt8, channels: UInt8, endianness: UInt8) {
    self.sampleSize = sampleSize
    self.sampleRate = sampleRate
    self.channels = channels
    self.endianness = endianness
  }

  public static let unspecified = PCMCodes(
    sampleSize: .ascii("?"), sampleRate: .ascii("?"), channels: .ascii("?"), endianness: .ascii("?"))

  /// Sample rates by code, `'0'` + index (squeezelite's table, which extends LMS's past `'>'`).
  public static let sampleRates: [Int] = [
    11025, 22050, 32000, 44100, 48000, 8000, 12000, 16000, 24000, 96000, 88200, 176400, 192000,
    352800, 384000, 705600, 768000, 1_411_200, 1_536_000,
  ]

  /// Bits per sample for PCM, or nil when unspecified.
  public var bitsPerSample: Int? {
    switch sampleSize {
    case .ascii("0"): 8
    case .ascii("1"): 16
    case .ascii("2"): 24
    case .ascii("3"): 32
    default: nil
    }
  }

  public var sampleRateHz: Int? {
    guard sampleRate >= .ascii("0") else { return nil }
    let index = Int(sampleRate - .ascii("0"))
    // '?' sits inside the extended table; LMS means "unspecified" by it.
    guard sampleRate != .ascii("?"), index < Self.sampleRates.count else { return nil }
    return Self.sampleRates[index]
  }

  public var channelCount: Int? {
    switch channels {
    case .ascii("1"): 1
    case .ascii("2"): 2
    default: nil
    }
  }

  /// True for little-endian, false for big-endian, nil when unspecified.
  public var isLittleEndian: Bool? {
    switch endianness {
    case .ascii("0"): false
    case .ascii("1"): true
    default: nil
    }
  }

  /// With format FLAC, `'o'` marks an Ogg-FLAC stream.
  public var isOggFLAC: Bool { sampleSize == .ascii("o") }
}
