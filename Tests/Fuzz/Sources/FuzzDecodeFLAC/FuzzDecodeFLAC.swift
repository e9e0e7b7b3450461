import FuzzDecoding
import Support

/// A damaged or hostile FLAC stream: see `fuzzDecode`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecodeFLAC(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  fuzzDecode(.flac, data, size)
  return 0
}
