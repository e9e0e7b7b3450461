import Dispatch
import Support
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("Support")
struct SupportTests {
  @Test func writeAllAndReadCrossAPipeWhole() throws {
    var fds: [Int32] = [0, 0]
    #expect(pipe(&fds) == 0)
    defer {
      close(fds[0])
      close(fds[1])
    }
    let bytes = (0..<3000).map { UInt8(truncatingIfNeeded: $0 * 7) }
    let written = bytes.withUnsafeBytes { POSIXIO.writeAll(fds[1], $0) }
    #expect((try? written.get()) != nil)
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 1000)
    while received.count < bytes.count {
      let n = try buffer.withUnsafeMutableBytes {
        try POSIXIO.read(fds[0], into: $0.baseAddress, count: $0.count).get()
      }
      #expect(n > 0)
      received += buffer[0..<n]
    }
    #expect(received == bytes)
  }

  @Test func failuresCarryTheirErrno() {
    var byte: UInt8 = 0
    let result = POSIXIO.read(-1, into: &byte, count: 1)
    guard case .failure(let failure) = result else {
      Issue.record("a read of descriptor -1 succeeded")
      return
    }
    #expect(failure.code == EBADF)
    #expect(failure.description == "Bad file descriptor")
    let full = [UInt8](repeating: 1, count: 4).withUnsafeBytes { POSIXIO.writeAll(-1, $0) }
    #expect((try? full.get()) == nil)
  }

  @Test func hexIsFixedWidthLowerCase() {
    #expect(Hex.string(UInt8(0x0a), width: 2) == "0a")
    #expect(Hex.string(UInt64(0xdead_beef), width: 16) == "00000000deadbeef")
    #expect(Hex.string(UInt32(0x1f), width: 4) == "001f")
    #expect(Hex.string(UInt32(0x12345), width: 4) == "12345")
  }

  @Test func semaphoreWaitsAreBounded() {
    let semaphore = Semaphore()
    let start = MonotonicClock.nanoseconds()
    #expect(!semaphore.wait(milliseconds: 50))
    let waited = MonotonicClock.nanoseconds() - start
    #expect(waited >= 50_000_000)
    semaphore.signal()
    #expect(semaphore.wait(milliseconds: 1000))
    #expect(!semaphore.tryWait())
  }

  @Test func aConditionalWaitEndsWhenTheConditionHoldsOrAtItsLimit() {
    let semaphore = Semaphore()
    // A stale signal alone does not end the wait: the condition is looked at again.
    semaphore.signal()
    let start = MonotonicClock.nanoseconds()
    #expect(!semaphore.wait(milliseconds: 60) { false })
    #expect(MonotonicClock.nanoseconds() - start >= 60_000_000)
    // Another thread makes it hold, then signals: the wait ends then, well before its limit.
    let done = Flag()
    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(30)) {
      done.set()
      semaphore.signal()
    }
    let waitStart = MonotonicClock.nanoseconds()
    #expect(semaphore.wait(milliseconds: 5000) { done.isSet })
    #expect(MonotonicClock.nanoseconds() - waitStart < 2_000_000_000)
    #expect(semaphore.wait(milliseconds: 0) { true })
  }

  @Test func everyCodecNameLeadsBackToItsCodec() {
    for codec in Codec.allCases {
      #expect(Codec(streamFormatByte: codec.streamFormatByte) == codec)
      #expect(Codec(name: codec.rawValue) == codec)
      for token in codec.capabilityTokens {
        #expect(Codec(name: token) == codec)
        #expect(Codec(fileType: token) == codec)
      }
    }
    // The strm format letters LMS sends (Slim/Player/Squeezebox2.pm's formatCodes).
    #expect(Codec(streamFormatByte: UInt8(ascii: "f")) == .flac)
    #expect(Codec(streamFormatByte: UInt8(ascii: "m")) == .mp3)
    #expect(Codec(streamFormatByte: UInt8(ascii: "u")) == .opus)
    #expect(Codec(streamFormatByte: UInt8(ascii: "p")) == .pcm)
    #expect(Codec(streamFormatByte: UInt8(ascii: "a")) == .aac)
    #expect(Codec(streamFormatByte: UInt8(ascii: "l")) == .alac)
    #expect(Codec(streamFormatByte: UInt8(ascii: "d")) == .dsd)
    #expect(Codec(fileType: "OGG") == .vorbis)  // LMS 7.9 types Ogg Vorbis `ogg`
    #expect(Codec(fileType: "ops") == .opus)
    #expect(Codec(streamFormatByte: UInt8(ascii: "o")) == .vorbis)
    // LMS's scanner types an MP4 file `alc` when it holds Apple Lossless, else `mp4`.
    #expect(Codec(fileType: "alc") == .alac)
    #expect(Codec(fileType: "mp4") == .aac)
    #expect(Codec(fileType: "dsf") == .dsd)
    #expect(Codec(fileType: "dff") == .dsd)
    #expect(Codec(streamFormatByte: UInt8(ascii: "w")) == nil)  // WMA
  }
}

private final class Flag: Sendable {
  private let value = Atomic<Bool>(false)
  var isSet: Bool { value.load(ordering: .acquiring) }
  func set() { value.store(true, ordering: .releasing) }
}
