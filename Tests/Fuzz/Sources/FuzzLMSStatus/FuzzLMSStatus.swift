import LMSControl

/// A JSON-RPC reply as the status poller gets it: whatever it holds, the lenient status decoding
/// gives a status (missing or ill-typed fields read as absent), never a crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLMSStatus(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = UnsafeBufferPointer(start: data, count: size)
  guard let reply = try? JSONValue(parsing: bytes) else { return 0 }
  let status = LMSStatus(result: reply.object?["result"] ?? reply)
  precondition(status == LMSStatus(result: reply.object?["result"] ?? reply), "decoding is not a function")
  return 0
}
