import Decoders
import FuzzDecoding
import Support

/// A damaged or hostile DSF or DSDIFF stream: see `fuzzDecode`. The first byte's low bit picks the
/// delivery: set, DoP; clear, conversion to PCM.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecodeDSD(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let dop = size > 0 && data[0] & 1 == 1
  fuzzDecode(.dsd, data, size, dsd: dop ? DSDOutput(delivery: .dop) : .pcm)
  return 0
}
