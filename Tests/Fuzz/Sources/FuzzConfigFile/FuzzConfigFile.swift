import SlimplayCLI

/// `/etc/default/squeezelite` or slimplay's own file, as anyone may have edited it: the variables
/// and the flags they stand for, or an error naming the line; nothing is run.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfigFile(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
  guard let assignments = try? ConfigFile.parse(text, hostName: "pi") else { return 0 }
  _ = try? ConfigFile.arguments(from: assignments)
  return 0
}
