// swift-tools-version:6.0
// libFuzzer targets, one per input slimplay takes from outside: SlimProto frames and server
// messages, the HTTP response head, the ICY metadata filter, an Ogg stream's comments, JSON and LMS's status, the config
// file, the control API's request handling, and each decoder fed damaged streams. A package of
// its own so that the player's build never sees them: `scripts/fuzz` builds it with
// `-sanitize=fuzzer,address` (and `-parse-as-library`: libFuzzer brings `main`).
import PackageDescription

let decoders = [
  "FuzzDecodeFLAC", "FuzzDecodeMP3", "FuzzDecodeOpus", "FuzzDecodeVorbis", "FuzzDecodeAAC", "FuzzDecodeALAC",
  "FuzzDecodePCM", "FuzzDecodeDSD",
]
let parsers = [
  "FuzzServerFrames", "FuzzHTTPHead", "FuzzICYMetadata", "FuzzOggComments", "FuzzJSON", "FuzzLMSStatus",
  "FuzzConfigFile", "FuzzControlAPI",
]
let player: Target.Dependency = .product(name: "SlimplayInputs", package: "slimplay")

let package = Package(
  name: "slimplay-fuzz",
  platforms: [.macOS(.v15)],
  dependencies: [
    .package(name: "slimplay", path: "../.."),
    .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
  ],
  targets: [
    .target(name: "FuzzDecoding", dependencies: [player])
  ]
    + parsers.map { name in
      .executableTarget(
        name: name, dependencies: [player, .product(name: "NIOEmbedded", package: "swift-nio")])
    }
    + decoders.map { name in .executableTarget(name: name, dependencies: [player, "FuzzDecoding"]) }
)
