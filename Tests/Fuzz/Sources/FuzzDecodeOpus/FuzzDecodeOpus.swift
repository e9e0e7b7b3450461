import FuzzDecoding
import Support

/// A damaged or hostile Opus stream: see `fuzzDecode`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecodeOpus(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  fuzzDecode(.opus, data, size)
  return 0
}
