import FuzzDecoding
import Support

/// A damaged or hostile Ogg Vorbis stream: see `fuzzDecode`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecodeVorbis(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  fuzzDecode(.vorbis, data, size)
  return 0
}
