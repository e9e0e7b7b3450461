import AudioBuffers
import AudioOutput
import Logging
import NIOPosix
import Support
import Synchronization
import TestSupport
import Testing

@testable import Playback

#if canImport(Glibc)
  import Glibc
#endif

extension PlaybackTests {
  /// Nested in the serialized playback suite: no other pipeline lives while these count.
  @Suite("Pipeline life cycle")
  struct Lifecycle {
    /// The pipeline threads of this process (they carry their names), from /proc.
    private var pipelineThreads: Int {
      FileIO.entries(of: "/proc/self/task").filter { task in
        let name = FileIO.readText("/proc/self/task/\(task)/comm") ?? ""
        return name.hasPrefix("slimplay-")
      }.count
    }

    /// The eventfds of this process (each pipeline thread sleeps on one).
    private var eventDescriptors: Int {
      FileIO.entries(of: "/proc/self/fd").filter { fd in
        var target = [UInt8](repeating: 0, count: 64)
        let n = target.withUnsafeMutableBufferPointer { buffer in
          buffer.withMemoryRebound(to: CChar.self) { readlink("/proc/self/fd/\(fd)", $0.baseAddress!, 64) }
        }
        return n > 0 && String(decoding: target.prefix(n), as: UTF8.self).contains("eventfd")
      }.count
    }

    @Test func aThousandPipelinesStartAndStopLeavingNoThreadOrDescriptor() throws {
      try takingThreadCensusTurn {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let threadsBefore = pipelineThreads
        let descriptorsBefore = eventDescriptors
        // On the control loop, as in the player (sources are closed there).
        let stoppedInTime = try loop.submit { () -> Int in
          var stoppedInTime = 0
          for _ in 0..<1000 {
            let pipeline = AudioPipeline(
              configuration: .init(streamBufferBytes: 4096, outputBufferBytes: 32 << 10), device: MemorySink(),
              eventLoop: loop, logger: Logger(label: "test"), decoderEvent: { _ in }, outputEvent: { _ in })
            pipeline.start()
            #expect(pipeline.lifecycle == .running)
            if pipeline.stop() { stoppedInTime += 1 }
            #expect(pipeline.lifecycle == .stopped)
          }
          return stoppedInTime
        }.wait()
        #expect(stoppedInTime == 1000)
        #expect(threadsBefore == 0)
        #expect(pipelineThreads == 0)
        // A descriptor kept per pipeline would show as 1,000 or more; the event loops of suites
        // running alongside come and go by a few.
        #expect(eventDescriptors - descriptorsBefore < 100)

      }
    }

    @Test func aResetWhileTheOutputIsStuckInAWriteReturnsInBoundedTime() throws {
      let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
      defer { try? group.syncShutdownGracefully() }
      let sink = BlockingSink()
      let loop = group.next()
      try loop.submit {
        var configuration = AudioPipeline.Configuration(streamBufferBytes: 4096, outputBufferBytes: 32 << 10)
        configuration.waitMilliseconds = 200
        let pipeline = AudioPipeline(
          configuration: configuration, device: sink, eventLoop: loop, logger: Logger(label: "test"),
          decoderEvent: { _ in }, outputEvent: { _ in })
        pipeline.start()
        // Frames for the output to write: it then blocks in the device.
        let samples = [Int32](repeating: 1 << 16, count: 2048)
        let format = AudioBuffers.AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16)
        #expect(pipeline.worker.hold.hold(timeoutMilliseconds: 1000))
        pipeline.output.beginTrack(id: 1)
        let region = pipeline.output.writableSamples()
        for index in 0..<samples.count { region[index] = samples[index] }
        #expect(pipeline.output.commit(frames: 1024, format: format))
        pipeline.worker.hold.release()
        pipeline.player.start(.now)
        #expect(eventually { sink.isBlocked })
        let start = MonotonicClock.nanoseconds()
        #expect(!pipeline.reset(output: .everything))
        #expect(MonotonicClock.nanoseconds() - start < 1_000_000_000)
        // The device gives way: the flush is applied then, and the decoder goes on.
        sink.unblock()
        #expect(eventually { !pipeline.worker.hold.isRequested && pipeline.output.ring.fill == 0 })
        #expect(pipeline.stop())
      }.wait()
    }
  }
}

/// A device whose first write blocks until `unblock()`, like a stalled reader on `-o -`.
final class BlockingSink: OutputDevice, Sendable {
  let name = "blocking"
  let chunkFrames = 1024
  let sampleRate = 44100
  private let opened = Atomic<Bool>(false)
  private let blocked = Atomic<Bool>(false)
  private let released = Semaphore()

  var isOpen: Bool { opened.load(ordering: .acquiring) }
  var isBlocked: Bool { blocked.load(ordering: .acquiring) }
  func open(sampleRate: Int) throws(OutputError) { opened.store(true, ordering: .releasing) }
  func close() { opened.store(false, ordering: .releasing) }

  func write(_ samples: UnsafeBufferPointer<Int32>, dither: Bool) throws(OutputError) -> Int {
    if !blocked.exchange(true, ordering: .acquiringAndReleasing) { _ = released.wait(milliseconds: 10_000) }
    return samples.count / 2
  }

  func unblock() { released.signal() }
  func delayFrames() -> Int { 0 }
  func discardQueued() {}
  func playOutQueued() {}
}
