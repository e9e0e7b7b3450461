import AudioBuffers
import AudioOutput
import Support
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `-o -` on a pipe this process made (as a shell makes one for `slimplay -o - | reader`).
@Suite struct StandardOutputTests {
  /// F_GETPIPE_SZ, which Glibc's module does not export.
  static let getPipeSize: Int32 = 1032

  final class Pipe {
    let readEnd: Int32
    let writeEnd: Int32
    init() {
      var ends: [Int32] = [0, 0]
      precondition(pipe(&ends) == 0)
      (readEnd, writeEnd) = (ends[0], ends[1])
    }
    deinit {
      close(readEnd)
      close(writeEnd)
    }
    func read(_ count: Int) -> [UInt8] {
      var bytes = [UInt8](repeating: 0, count: count)
      let got = bytes.withUnsafeMutableBytes { Glibc.read(readEnd, $0.baseAddress, count) }
      return Array(bytes[0..<max(0, got)])
    }
    var size: Int32 { fcntl(writeEnd, StandardOutputTests.getPipeSize) }
  }

  func frames(_ count: Int, from first: Int32 = 1) -> [Int32] {
    (0..<Int32(count * 2)).map { (first + $0) << 16 }
  }

  func write(_ output: StandardOutput, _ samples: [Int32]) throws {
    var offset = 0
    while offset < samples.count {
      offset += try samples[offset...].withUnsafeBufferPointer { try output.write($0, dither: false) } * 2
    }
  }

  @Test func itsOwnPipeHoldsAThirdOfASecondOrMore() throws {
    let pipe = Pipe()
    let output = StandardOutput(format: .s16, fileDescriptor: pipe.writeEnd)
    try output.open(sampleRate: 44100)
    #expect(pipe.size == 65536)  // 371 ms
    #expect(output.chunkFrames == 4096)  // a quarter of it
    try output.open(sampleRate: 96000)
    #expect(pipe.size == 131072)  // 341 ms
    let wide = Pipe()
    let wideOutput = StandardOutput(format: .s32, fileDescriptor: wide.writeEnd)
    try wideOutput.open(sampleRate: 192000)
    #expect(wide.size == 524288)  // 341 ms of 32-bit 192 kHz
  }

  /// Opened for native DSD the pipe gets the format's bytes, and its frames count in them; opened
  /// for PCM again, the `-a` format's.
  @Test func nativeDSDGoesOutInItsFormatAndPCMAfterIt() throws {
    let pipe = Pipe()
    let output = StandardOutput(format: .s32, fileDescriptor: pipe.writeEnd)
    try output.open(sampleRate: 88200, nativeDSD: .u32be)
    #expect(output.nativeDSD == .u32be)
    try write(output, [Int32(bitPattern: 0x0102_0304), Int32(bitPattern: 0xA1A2_A3A4)])
    #expect(output.delayFrames() == 1)
    #expect(pipe.read(64) == [0x01, 0x02, 0x03, 0x04, 0xA1, 0xA2, 0xA3, 0xA4])
    try output.open(sampleRate: 176_400, nativeDSD: .u16le)
    try write(output, [Int32(bitPattern: 0x0102_0304), Int32(bitPattern: 0xA1A2_A3A4)])
    #expect(pipe.read(64) == [0x02, 0x01, 0xA2, 0xA1])
    try output.open(sampleRate: 44100)
    #expect(output.nativeDSD == nil)
    try write(output, [Int32(bitPattern: 0x0102_0304), Int32(bitPattern: 0xA1A2_A3A4)])
    #expect(pipe.read(64) == [0x04, 0x03, 0x02, 0x01, 0xA4, 0xA3, 0xA2, 0xA1])
  }

  @Test func roomIsWaitedForInWholePagesOfTheReader() throws {
    let pipe = Pipe()
    let output = StandardOutput(format: .s16, fileDescriptor: pipe.writeEnd)
    try output.open(sampleRate: 44100)
    let page = 1024  // frames of 16-bit stereo in a 4 KiB page
    func wait(pages: Int) -> UInt64 { UInt64((pages * page + page / 4) * 1_000_000_000 / 44100) }
    #expect(output.nanosecondsUntilRoom(forFrames: output.chunkFrames) == 0, "an empty pipe has room")
    try write(output, frames(12288))  // three quarters of the 64 KiB pipe
    #expect(output.nanosecondsUntilRoom(forFrames: 4096) == 0, "the last quarter is free")
    try write(output, frames(4096))  // full
    #expect(output.nanosecondsUntilRoom(forFrames: 2048) == wait(pages: 2))
    #expect(output.nanosecondsUntilRoom(forFrames: 1) == wait(pages: 1), "room comes a page at a time")
    #expect(pipe.read(4096).count == 4096)
    #expect(output.nanosecondsUntilRoom(forFrames: 1024) == 0)
    #expect(
      output.nanosecondsUntilRoom(forFrames: 1 << 20) == output.nanosecondsUntilRoom(forFrames: output.chunkFrames),
      "a longer write is taken a chunk at a time")
  }

  @Test func aPipeHoldingPartOfAPageNeedsNoExtraPageOfRoom() throws {
    let pipe = Pipe()
    let output = StandardOutput(format: .s16, fileDescriptor: pipe.writeEnd)
    try output.open(sampleRate: 44100)
    // 58,976 bytes queued (as after a short write at a track boundary): 6,560 bytes free.
    try write(output, frames(14744))
    // A chunk of 16 KiB lacks 9,824 bytes: three pages read make room for it (the reader's fourth
    // would be a wait of a page too many, a fourth page's worth of bytes a wait too few).
    #expect(output.nanosecondsUntilRoom(forFrames: 4096) == UInt64((3 * 1024 + 256) * 1_000_000_000 / 44100))
    for _ in 0..<3 { #expect(pipe.read(4096).count == 4096) }
    #expect(output.nanosecondsUntilRoom(forFrames: 4096) == 0)
  }

  @Test func aFlushTakesBackWhatThePipeHolds() throws {
    let pipe = Pipe()
    let output = StandardOutput(format: .s16, fileDescriptor: pipe.writeEnd)
    try output.open(sampleRate: 44100)
    try write(output, frames(8192))
    #expect(output.delayFrames() == 8192)
    output.pauseQueued()
    #expect(output.delayFrames() == 8192, "a pause lets the reader have what is queued")
    output.discardQueued()
    #expect(output.delayFrames() == 0)
    // What is written next is what the reader gets next.
    try write(output, frames(4, from: 1000))
    let next = pipe.read(16)
    #expect(next == [0xE8, 0x03, 0xE9, 0x03, 0xEA, 0x03, 0xEB, 0x03, 0xEC, 0x03, 0xED, 0x03, 0xEE, 0x03, 0xEF, 0x03])
  }

  /// At a halt (the process ends) what the pipe holds is its reader's: no flush takes it back.
  @Test func whatIsHandedOverAtAHaltStaysForTheReader() throws {
    let pipe = Pipe()
    let output = StandardOutput(format: .s16, fileDescriptor: pipe.writeEnd)
    try output.open(sampleRate: 44100)
    try write(output, frames(8192))
    #expect(output.handOverQueued())
    output.discardQueued()
    #expect(output.delayFrames() == 8192)
    #expect(pipe.read(8192 * 4).count == 8192 * 4)
  }

  @Test func aReaderLeftInsideAFrameGetsItsRestAsZerosAfterAFlush() throws {
    let pipe = Pipe()
    let output = StandardOutput(format: .s24_3, fileDescriptor: pipe.writeEnd)  // 6-byte frames
    try output.open(sampleRate: 44100)
    try write(output, frames(2000))
    #expect(pipe.read(4096).count == 4096)  // 682 frames and 4 bytes of the next
    output.discardQueued()
    #expect(pipe.read(100) == [0, 0])
    try write(output, frames(1, from: 7))
    #expect(pipe.read(6) == [0, 7, 0, 0, 8, 0])
  }

  @Test func aReaderGetsEveryByteInOrderThroughADeepPipe() throws {
    let pipe = Pipe()
    let output = StandardOutput(format: .s16, fileDescriptor: pipe.writeEnd)
    try output.open(sampleRate: 44100)
    let samples = (0..<Int32(2 * 44100)).map { ($0 & 0x7fff) << 16 }
    let expected = samples.flatMap { [UInt8(($0 >> 16) & 0xff), UInt8(($0 >> 24) & 0xff)] }
    let readEnd = pipe.readEnd
    let received = Received()
    let reader = RealtimeThread(name: "pipe reader") {
      var bytes: [UInt8] = []
      while bytes.count < expected.count {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let got = buffer.withUnsafeMutableBytes { Glibc.read(readEnd, $0.baseAddress, 4096) }
        if got <= 0 { break }
        bytes += buffer[0..<got]
      }
      received.finish(bytes)
    }
    var offset = 0
    while offset < samples.count {
      let frames = min(output.chunkFrames, (samples.count - offset) / 2)
      offset +=
        try samples[offset..<offset + frames * 2].withUnsafeBufferPointer { try output.write($0, dither: false) } * 2
    }
    #expect(received.wait() == expected)
    #expect(reader.join(timeoutMilliseconds: 10_000))
  }

  /// A reader still reading while the output takes back what the pipe holds gets what came before
  /// the drain and then what came after it, never a piece from the middle of what was dropped.
  @Test func aReaderReadingDuringAFlushNeverGetsALaterPieceAfterAnEarlierOne() throws {
    let marker: Int32 = 30000
    for trial in 0..<100 {
      let pipe = Pipe()
      let output = StandardOutput(format: .s16, fileDescriptor: pipe.writeEnd)
      try output.open(sampleRate: 44100)
      let readEnd = pipe.readEnd
      let received = Received()
      let reader = RealtimeThread(name: "pipe reader") {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
          let got = buffer.withUnsafeMutableBytes { Glibc.read(readEnd, $0.baseAddress, 64) }
          if got <= 0 { break }
          bytes += buffer[0..<got]
          if bytes.count >= 4,
            Int32(Int16(bitPattern: UInt16(bytes[bytes.count - 3]) << 8 | UInt16(bytes[bytes.count - 4]))) >= marker
          {
            break
          }
        }
        received.finish(bytes)
      }
      try write(output, frames(12000))
      output.discardQueued()
      try write(output, frames(16, from: marker))
      let bytes = try #require(received.wait(), "trial \(trial): the reader never got the frames after the drain")
      #expect(reader.join(timeoutMilliseconds: 10_000))
      let samples = stride(from: 0, to: bytes.count - 1, by: 2).map {
        Int32(Int16(bitPattern: UInt16(bytes[$0 + 1]) << 8 | UInt16(bytes[$0])))
      }
      let before = samples.prefix { $0 < marker }
      let jump = before.indices.first { before[$0] != Int32($0 + 1) }
      #expect(jump == nil, "trial \(trial): sample \(before[jump ?? 0]) came in place of \((jump ?? 0) + 1)")
      #expect(samples.dropFirst(before.count).first == marker, "trial \(trial)")
    }
  }

  final class Received: Sendable {
    private let done = Semaphore()
    private let bytes = Mutex<[UInt8]?>(nil)
    func finish(_ value: [UInt8]) {
      bytes.withLock { $0 = value }
      done.signal()
    }
    /// At most 10 s.
    func wait() -> [UInt8]? {
      _ = done.wait(milliseconds: 10_000) { bytes.withLock { $0 != nil } }
      return bytes.withLock { $0 }
    }
  }

  @Test func aPauseLeavesWhatIsQueuedToTheReaderAndTheResumeFollowsIt() throws {
    // The same frames through a pipe without a pause: the stream the reader must get.
    let plain = Pipe()
    let reference = StandardOutput(format: .s24_3, fileDescriptor: plain.writeEnd)
    try reference.open(sampleRate: 44100)
    try write(reference, frames(2000))
    try write(reference, frames(3, from: 9000))
    let expected = plain.read(2003 * 6)

    let pipe = Pipe()
    let output = StandardOutput(format: .s24_3, fileDescriptor: pipe.writeEnd)
    try output.open(sampleRate: 44100)
    try write(output, frames(2000))
    var got = pipe.read(4096)  // 682 frames and 4 bytes of the next
    output.pauseQueued()
    #expect(output.delayFrames() == (12000 - 4096) / 6, "what the pipe holds is still to be heard")
    got += pipe.read(12000 - 4096)
    #expect(output.delayFrames() == 0, "heard once the reader has it")
    try write(output, frames(3, from: 9000))
    got += pipe.read(18)
    #expect(got == expected)
  }

  @Test func playingOutWaitsForTheReader() throws {
    let pipe = Pipe()
    let output = StandardOutput(format: .s16, fileDescriptor: pipe.writeEnd)
    try output.open(sampleRate: 44100)
    try write(output, frames(4410))
    let readEnd = pipe.readEnd
    let reader = RealtimeThread(name: "pipe reader") {
      var buffer = [UInt8](repeating: 0, count: 4096)
      var left = 4410 * 4
      while left > 0 {
        usleep(5000)
        left -= buffer.withUnsafeMutableBytes { Glibc.read(readEnd, $0.baseAddress, min(4096, left)) }
      }
    }
    output.playOutQueued()
    #expect(output.delayFrames() == 0)
    #expect(reader.join(timeoutMilliseconds: 10_000))
  }

  @Test func playingOutGivesUpOnAReaderThatStopped() throws {
    let pipe = Pipe()
    let output = StandardOutput(format: .s16, fileDescriptor: pipe.writeEnd)
    try output.open(sampleRate: 44100)
    try write(output, frames(441))
    output.playOutQueued()  // 10 ms queued: returns a second after they were due
    #expect(output.delayFrames() == 441)
  }
}
