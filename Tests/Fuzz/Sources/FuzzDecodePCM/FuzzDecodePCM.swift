import Decoders
import FuzzDecoding
import Support

/// A damaged or hostile PCM stream (see `fuzzDecode`): with its first byte below 128 a WAV or AIFF
/// whose header the decoder reads; otherwise raw samples in the format that byte gives, as LMS's
/// `strm` gives it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecodePCM(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  guard size > 1 else { return 0 }
  let mode = data[0]
  let pcm =
    mode < 128
    ? nil
    : PCMParameters(
      sampleRate: [8000, 44100, 96000, 384000][Int(mode >> 4 & 3)], channels: Int(mode >> 2 & 1) + 1,
      bitsPerSample: [8, 16, 24, 32][Int(mode & 3)], littleEndian: mode & 8 == 0)
  fuzzDecode(.pcm, data + 1, size - 1, pcm: pcm)
  return 0
}
