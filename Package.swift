// swift-tools-version:6.0
import PackageDescription

let strict: [SwiftSetting] = [
  .enableUpcomingFeature("ExistentialAny")
]

let package = Package(
  name: "slimplay",
  platforms: [.macOS(.v15)],
  products: [
    .executable(name: "slimplay", targets: ["slimplay"]),
    // The modules that read outside input, for the libFuzzer targets in Tests/Fuzz.
    .library(
      name: "SlimplayInputs",
      targets: [
        "AudioBuffers", "Decoders", "LMSControl", "LocalControl", "SlimProto", "SlimplayCLI", "StreamFetch", "Support",
      ]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
    .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
  ],
  targets: [
    // C libraries, one system-library target each (opus, opusfile and ogg travel together).
    .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
    .systemLibrary(name: "CFLAC", pkgConfig: "flac", providers: [.apt(["libflac-dev"])]),
    .systemLibrary(
      name: "COpus", pkgConfig: "opusfile",
      providers: [.apt(["libopus-dev", "libopusfile-dev", "libogg-dev"])]),
    .systemLibrary(name: "CMPG123", pkgConfig: "libmpg123", providers: [.apt(["libmpg123-dev"])]),
    .systemLibrary(name: "CVorbis", pkgConfig: "vorbisfile", providers: [.apt(["libvorbis-dev"])]),
    .systemLibrary(name: "CFAAD", pkgConfig: "faad2", providers: [.apt(["libfaad-dev"])]),

    // What every module shares: the monotonic clock, errno text, EINTR-safe descriptor I/O, small
    // files written atomically, bounded semaphores, hex text and the one codec vocabulary.
    .target(name: "Support", dependencies: ["CSupport"], swiftSettings: strict),

    // Connecting to a numeric address without the resolver's thread.
    .target(
      name: "NetworkSupport",
      dependencies: [
        .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
      ],
      swiftSettings: strict),

    // Wire protocol: pure values that parse and encode SlimProto frames. No I/O.
    .target(name: "SlimProto", dependencies: ["Support"], swiftSettings: strict),

    // Connection and player-session state machines on a SwiftNIO event loop.
    .target(
      name: "SlimConnection",
      dependencies: [
        "NetworkSupport", "SlimProto", "Support",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),

    // Linux calls Swift's Glibc module does not export (eventfd, thread names).
    .target(name: "CSupport", linkerSettings: [.linkedLibrary("asound"), .linkedLibrary("dl")]),

    // glibc 2.38 symbols that a static Swift runtime for aarch64 needs on bookworm's glibc 2.36
    // (the arm64 package); empty elsewhere.
    .target(name: "CGlibcCompat"),

    // Lock-free rings and the shared audio types of the realtime path.
    .target(name: "AudioBuffers", dependencies: ["CSupport", "Support"], swiftSettings: strict),

    // Codec wrappers: FLAC, MP3, Opus, Vorbis, AAC, ALAC (own), PCM (WAV/AIFF/raw) into 32-bit stereo frames.
    .target(
      name: "Decoders", dependencies: ["AudioBuffers", "CFLAC", "CMPG123", "COpus", "CVorbis", "CFAAD", "Support"],
      swiftSettings: strict),

    // libsoxr, loaded with dlopen only with -R (its header only at build time).
    .target(name: "CSoxr", linkerSettings: [.linkedLibrary("dl")]),

    // `-R`/`-u`: squeezelite's recipes, the output rate choice and the resampling decoder stage.
    .target(
      name: "Resampling", dependencies: ["AudioBuffers", "CSoxr", "Decoders"], swiftSettings: strict),

    // Output devices (ALSA, stdout, paced null) and the output thread.
    .target(
      name: "AudioOutput", dependencies: ["AudioBuffers", "CALSA", "CSupport", "Support"], swiftSettings: strict),

    // Debian's OpenSSL, loaded with dlopen by the first https stream (its header only at build time).
    .target(name: "CTLS", linkerSettings: [.linkedLibrary("dl")]),

    // HTTP stream fetch for `strm s`: request sent verbatim, ICY metadata, backpressure, TLS.
    .target(
      name: "StreamFetch",
      dependencies: [
        "AudioBuffers", "CTLS", "NetworkSupport", "SlimProto", "Support",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),

    // The playback engine: stream → decoder thread → output thread, and the STAT events.
    .target(
      name: "Playback",
      dependencies: [
        "AudioBuffers", "AudioOutput", "CSupport", "Decoders", "Resampling", "SlimConnection", "SlimProto",
        "StreamFetch", "Support",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),

    // LMS's JSON-RPC over NIOHTTP1: a lenient JSON value, the client and the status poller.
    .target(
      name: "LMSControl",
      dependencies: [
        "NetworkSupport", "Support",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),

    // A sync group kept in time while LMS is away: the LAN messages, the clock rules (pure) and
    // the multicast link.
    .target(
      name: "GroupSync",
      dependencies: [
        "CSupport", "SlimProto", "Support",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),

    // The offline cache (store, downloads) and the coordinator that hands playback to it and
    // resynchronises LMS on reconnect.
    .target(
      name: "Offline",
      dependencies: [
        "AudioBuffers", "Decoders", "GroupSync", "LMSControl", "Playback", "SlimConnection", "SlimProto", "Support",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),

    // The local control API (HTTP on NIOHTTP1): status and commands, online through LMS,
    // offline through the coordinator.
    .target(
      name: "LocalControl",
      dependencies: [
        "LMSControl", "Offline", "Playback", "SlimConnection", "SlimProto", "Support",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),

    // One player assembled from its settings, with a lifecycle (start, stop): the modules wired
    // together. Several can run in one process.
    .target(
      name: "SlimplayPlayer",
      dependencies: [
        "AudioBuffers",
        "AudioOutput",
        "CSupport",
        "Decoders",
        "GroupSync",
        "LMSControl",
        "LocalControl",
        "Offline",
        "Playback",
        "Resampling",
        "SlimConnection",
        "SlimProto",
        "StreamFetch",
        "Support",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
      ],
      swiftSettings: strict),

    // The command line: options, configuration file, logging, the process around a player.
    .target(
      name: "SlimplayCLI",
      dependencies: [
        "AudioBuffers",
        "AudioOutput",
        "Decoders",
        "LMSControl",
        "LocalControl",
        "Offline",
        "Playback",
        "Resampling",
        "SlimConnection",
        "SlimProto",
        "SlimplayPlayer",
        "Support",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
      ],
      swiftSettings: strict),

    .executableTarget(
      name: "slimplay", dependencies: ["CGlibcCompat", "CSupport", "SlimplayCLI"],
      exclude: ["link-order.txt", "layout.ld"],
      swiftSettings: strict,
      linkerSettings: [
        // Resident memory is mostly code. The static runtime's link arguments export every
        // symbol, and a position-independent binary carries a relocation per pointer: the loader
        // writes every page of metadata those relocations touch (0.6 MB of private memory), at
        // every start. A fixed-address executable needs none of them, and no exported symbols keep
        // the symbol table small. The kernel maps code in 64 KB blocks around each page
        // used, so the functions that run while playing are placed together (link-order.txt, from
        // `scripts/bench --link-order`; stale names are ignored), and layout.ld gathers the functions
        // that have no name to order by and keeps constants out of the writable segment. (The
        // release build compiles every function into a section of its own: scripts/lib.sh.)
        .unsafeFlags([
          "-use-ld=lld", "-Xclang-linker", "-no-pie", "-Xlinker", "--no-export-dynamic",
          "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/Sources/slimplay/link-order.txt",
          "-Xlinker", "--no-warn-symbol-ordering",
          "-Xlinker", "-T\(Context.packageDirectory)/Sources/slimplay/layout.ld",
        ])
      ]),

    .testTarget(
      name: "AudioOutputTests", dependencies: ["AudioOutput", "AudioBuffers", "Support", "TestSupport"],
      swiftSettings: strict),
    .testTarget(name: "AudioBuffersTests", dependencies: ["AudioBuffers"], swiftSettings: strict),
    .testTarget(
      name: "DecodersTests", dependencies: ["Decoders", "AudioBuffers", "Resampling", "Support", "TestSupport"],
      swiftSettings: strict),
    .testTarget(
      name: "ResamplingTests", dependencies: ["Resampling", "AudioBuffers", "Decoders", "TestSupport"],
      swiftSettings: strict),
    .testTarget(name: "SlimProtoTests", dependencies: ["SlimProto"], swiftSettings: strict),
    .testTarget(name: "SupportTests", dependencies: ["Support", "TestSupport"], swiftSettings: strict),
    // Helpers the tests share: a loopback HTTP server, polling with a limit, running shell tools.
    .target(
      name: "TestSupport",
      dependencies: [
        "Support", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
      ],
      path: "Tests/TestSupport", swiftSettings: strict),
    .testTarget(
      name: "PlaybackTests",
      dependencies: [
        "Playback", "AudioBuffers", "AudioOutput", "Decoders", "SlimConnection", "SlimProto", "Support", "TestSupport",
        .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),
    .testTarget(
      name: "StreamFetchTests",
      dependencies: [
        "StreamFetch", "AudioBuffers", "SlimProto", "Support", "TestSupport",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),
    .testTarget(
      name: "LMSControlTests",
      dependencies: [
        "LMSControl", "TestSupport", .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
      ],
      swiftSettings: strict),
    .testTarget(
      name: "LocalControlTests",
      dependencies: [
        "LocalControl", "LMSControl", "Offline", .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),
    .testTarget(
      name: "GroupSyncTests",
      dependencies: [
        "GroupSync", "SlimProto", "Support",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),
    .testTarget(
      name: "OfflineTests",
      dependencies: [
        "Offline", "LMSControl", "Playback", "SlimConnection", "SlimProto", "Support", "TestSupport",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
      ],
      swiftSettings: strict),
    .testTarget(
      name: "SlimConnectionTests",
      dependencies: [
        "SlimConnection", "SlimProto", "Support", "TestSupport", .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),
    .testTarget(
      name: "SlimplayPlayerTests",
      dependencies: [
        "SlimplayPlayer", "SlimConnection", "SlimProto", "Support", "TestSupport",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
      ],
      swiftSettings: strict),
    .testTarget(
      name: "SlimplayCLITests",
      dependencies: [
        "SlimplayCLI", "SlimplayPlayer", "Resampling", "SlimConnection", "SlimProto", "Support", "TestSupport",
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),
  ],
  swiftLanguageModes: [.v6]
)
