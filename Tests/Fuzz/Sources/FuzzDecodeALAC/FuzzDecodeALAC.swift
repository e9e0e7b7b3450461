import FuzzDecoding
import Support

/// A damaged or hostile Apple Lossless stream in MP4: see `fuzzDecode`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecodeALAC(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  fuzzDecode(.alac, data, size)
  return 0
}
