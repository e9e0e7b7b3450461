import FuzzDecoding
import Support

/// A damaged or hostile MP3 stream: see `fuzzDecode`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecodeMP3(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  fuzzDecode(.mp3, data, size)
  return 0
}
