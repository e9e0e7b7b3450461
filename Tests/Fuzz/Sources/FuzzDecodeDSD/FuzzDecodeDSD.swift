import AudioBuffers
import Decoders
import FuzzDecoding
import Support

/// A damaged or hostile DSF or DSDIFF stream: see `fuzzDecode`. The first byte's low three bits
/// pick the delivery: conversion to PCM, DoP, or one of the native formats; its fourth bit an
/// output of at most 192 kHz (DSD converted at half the usual rate, DoP above DSD64 converted).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecodeDSD(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let choice = size > 0 ? Int(data[0] & 7) : 0
  let limit = size > 0 && data[0] & 8 != 0 ? 192_000 : 384_000
  let delivery: DSDOutput.Delivery =
    switch choice {
    case 0, 6, 7: .pcm
    case 1: .dop
    default: .native(NativeDSDFormat.allCases[choice - 2])
    }
  fuzzDecode(.dsd, data, size, dsd: DSDOutput(delivery: delivery, maximumRate: limit, maximumPCMRate: limit))
  return 0
}
