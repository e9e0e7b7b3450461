/// Interleaved PCM of any width, order and channel count into left-justified stereo Int32 frames.
extension PCMDecoder {
  static func convert(
    _ source: UnsafePointer<UInt8>, frames: Int, layout: Layout, into destination: UnsafeMutablePointer<Int32>
  ) {
    let step = layout.frameBytes
    let right = layout.channels > 1 ? layout.bytesPerSample : 0
    var p = source
    switch (layout.bytesPerSample, layout.littleEndian) {
    case (1, _):
      if layout.unsigned8 {
        for i in 0..<frames {
          destination[2 * i] = (Int32(p[0]) - 128) &<< 24
          destination[2 * i + 1] = (Int32(p[right]) - 128) &<< 24
          p += step
        }
      } else {
        for i in 0..<frames {
          destination[2 * i] = Int32(Int8(bitPattern: p[0])) &<< 24
          destination[2 * i + 1] = Int32(Int8(bitPattern: p[right])) &<< 24
          p += step
        }
      }
    case (2, true):
      for i in 0..<frames {
        destination[2 * i] = Int32(bitPattern: UInt32(p[0]) &<< 16 | UInt32(p[1]) &<< 24)
        destination[2 * i + 1] = Int32(bitPattern: UInt32(p[right]) &<< 16 | UInt32(p[right + 1]) &<< 24)
        p += step
      }
    case (2, false):
      for i in 0..<frames {
        destination[2 * i] = Int32(bitPattern: UInt32(p[0]) &<< 24 | UInt32(p[1]) &<< 16)
        destination[2 * i + 1] = Int32(bitPattern: UInt32(p[right]) &<< 24 | UInt32(p[right + 1]) &<< 16)
        p += step
      }
    case (3, true):
      for i in 0..<frames {
        destination[2 * i] = Int32(bitPattern: UInt32(p[0]) &<< 8 | UInt32(p[1]) &<< 16 | UInt32(p[2]) &<< 24)
        destination[2 * i + 1] = Int32(
          bitPattern: UInt32(p[right]) &<< 8 | UInt32(p[right + 1]) &<< 16 | UInt32(p[right + 2]) &<< 24)
        p += step
      }
    case (3, false):
      for i in 0..<frames {
        destination[2 * i] = Int32(bitPattern: UInt32(p[0]) &<< 24 | UInt32(p[1]) &<< 16 | UInt32(p[2]) &<< 8)
        destination[2 * i + 1] = Int32(
          bitPattern: UInt32(p[right]) &<< 24 | UInt32(p[right + 1]) &<< 16 | UInt32(p[right + 2]) &<< 8)
        p += step
      }
    case (_, true):
      for i in 0..<frames {
        destination[2 * i] = Int32(
          bitPattern: UInt32(p[0]) | UInt32(p[1]) &<< 8 | UInt32(p[2]) &<< 16 | UInt32(p[3]) &<< 24)
        destination[2 * i + 1] = Int32(
          bitPattern: UInt32(p[right]) | UInt32(p[right + 1]) &<< 8 | UInt32(p[right + 2]) &<< 16
            | UInt32(p[right + 3]) &<< 24)
        p += step
      }
    case (_, false):
      for i in 0..<frames {
        destination[2 * i] = Int32(
          bitPattern: UInt32(p[0]) &<< 24 | UInt32(p[1]) &<< 16 | UInt32(p[2]) &<< 8 | UInt32(p[3]))
        destination[2 * i + 1] = Int32(
          bitPattern: UInt32(p[right]) &<< 24 | UInt32(p[right + 1]) &<< 16 | UInt32(p[right + 2]) &<< 8
            | UInt32(p[right + 3]))
        p += step
      }
    }
  }
}
