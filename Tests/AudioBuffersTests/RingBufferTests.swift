import AudioBuffers
import Testing

@Suite struct RingBufferTests {
  @Test func writesAndReadsAcrossTheWrap() {
    let ring = RingBuffer(capacity: 10)
    var out = [UInt8](repeating: 0, count: 10)
    for round in 0..<25 {
      let input = (0..<7).map { UInt8(truncatingIfNeeded: round * 7 + $0) }
      let taken = input.withUnsafeBytes { ring.write($0) }
      #expect(taken == 7)
      #expect(ring.fill == 7)
      let read = out.withUnsafeMutableBytes { ring.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<7])) }
      #expect(read == 7)
      #expect(Array(out[0..<7]) == input)
    }
    #expect(ring.totalWritten == 175)
    #expect(ring.totalConsumed == 175)
  }

  /// A look at bytes not yet read, across the wrap, leaves them to be read.
  @Test func peekCopiesAcrossTheWrapWithoutConsuming() {
    let ring = RingBuffer(capacity: 10)
    var scratch = [UInt8](repeating: 0, count: 8)
    _ = scratch.withUnsafeBytes { ring.write($0) }
    _ = scratch.withUnsafeMutableBytes { ring.read(into: $0) }
    let bytes: [UInt8] = [1, 2, 3, 4, 5, 6]  // two before the wrap, four after
    _ = bytes.withUnsafeBytes { ring.write($0) }
    var seen = [UInt8](repeating: 0, count: 8)
    #expect(seen.withUnsafeMutableBytes { ring.peek(into: $0) } == 6)
    #expect(Array(seen[0..<6]) == bytes)
    var later = [UInt8](repeating: 0, count: 3)
    #expect(later.withUnsafeMutableBytes { ring.peek(into: $0, skipping: 1) } == 3)
    #expect(later == [2, 3, 4])
    #expect(ring.fill == 6)
    var read = [UInt8](repeating: 0, count: 6)
    #expect(read.withUnsafeMutableBytes { ring.read(into: $0) } == 6)
    #expect(read == bytes)
  }

  @Test func writeStopsWhenFull() {
    let ring = RingBuffer(capacity: 8)
    let data = [UInt8](repeating: 1, count: 12)
    #expect(data.withUnsafeBytes { ring.write($0) } == 8)
    #expect(ring.space == 0)
    #expect(ring.writableRegion().count == 0)
    #expect(ring.discardAll() == 8)
    #expect(ring.fill == 0)
  }

  @Test func regionsAreContiguousUpToTheWrap() {
    let ring = RingBuffer(capacity: 16)
    ring.commitWrite(12)
    ring.commitRead(12)
    #expect(ring.writableRegion().count == 4)  // up to the end of storage
    ring.commitWrite(4)
    #expect(ring.writableRegion().count == 12)  // then from the start
    #expect(ring.readableRegion().count == 4)
  }

  @Test func truncateDropsTheTail() {
    let ring = RingBuffer(capacity: 16)
    ring.commitWrite(10)
    ring.commitRead(2)
    ring.truncate(toPosition: 6)
    #expect(ring.fill == 4)
    #expect(ring.totalWritten == 6)
  }
}

@Suite struct BoundaryQueueTests {
  let format = AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16)

  @Test func keepsEveryBoundaryInOrder() {
    let queue = BoundaryQueue()
    for id in 0..<3 { #expect(queue.push(TrackBoundary(trackID: id, frame: id * 100, format: format))) }
    for id in 0..<3 {
      #expect(queue.peek()?.trackID == id)
      queue.pop()
    }
    #expect(queue.peek() == nil)
  }

  @Test func refusesWhenFullAndDropsFromAFrame() {
    let queue = BoundaryQueue()
    for id in 0..<BoundaryQueue.capacity { #expect(queue.push(TrackBoundary(trackID: id, frame: id, format: format))) }
    #expect(!queue.push(TrackBoundary(trackID: 99, frame: 99, format: format)))
    queue.removeAll(atOrAfter: 5)
    #expect(queue.count == 5)
    queue.removeAll()
    #expect(queue.count == 0)
  }

  @Test func firstCommitPublishesTheBoundary() {
    let output = FrameOutput(capacityFrames: 64)
    output.beginTrack(id: 7)
    let samples = output.writableSamples()
    #expect(samples.count == 128)
    #expect(output.commit(frames: 10, format: format))
    #expect(output.boundaries.peek() == TrackBoundary(trackID: 7, frame: 0, format: format))
    #expect(output.commit(frames: 5, format: format))
    #expect(output.boundaries.count == 1)
    output.beginTrack(id: 8)
    #expect(output.commit(frames: 1, format: format))
    output.boundaries.pop()
    #expect(output.boundaries.peek()?.frame == 15)
  }
}
