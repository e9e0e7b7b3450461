import FuzzDecoding
import Support

/// A damaged or hostile AAC stream (MP4 or ADTS): see `fuzzDecode`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecodeAAC(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  fuzzDecode(.aac, data, size)
  return 0
}
