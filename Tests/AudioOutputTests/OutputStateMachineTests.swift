import AudioBuffers
import Testing

@testable import AudioOutput

/// The output's decisions, frame by frame, with the ring and the device simulated: every frame
/// a track queued is heard once, in its track, and nothing of a stopped track reaches the next.
@Suite struct OutputStateMachineTests {
  static let pcm44 = AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16)

  /// A ring and a device around the machine, doing what the output thread does with each step.
  struct Simulation {
    var machine = OutputStateMachine()
    var readFrame = 0
    var writtenFrames = 0
    var ringFrames = 1 << 18
    var boundaries: [TrackBoundary] = []
    var transitions: [Int: Transition] = [:]
    var device = OutputStateMachine.Device(isOpen: false, isClocked: true, sampleRate: 44100, chunkFrames: 1024)
    /// What the device holds (0 plays out at once when the ring is empty).
    var deviceQueue = 0
    /// Frames of audio heard per track id, in the order heard; silence written.
    var heard: [(track: Int, frames: Int)] = []
    var silence = 0
    var skipped = 0
    var announced: [Int] = []
    var dryReports = 0
    var steps: [OutputStateMachine.Step] = []

    mutating func queue(track: Int, frames: Int, format: AudioFormat = pcm44, transition: Transition = Transition()) {
      boundaries.append(TrackBoundary(trackID: track, frame: writtenFrames, format: format))
      transitions[track] = transition
      writtenFrames += frames
    }

    var facts: OutputStateMachine.Facts {
      let boundary = boundaries.first
      let incoming = boundary.flatMap { machine.needsTransition(into: $0) ? transitions[$0.trackID] : nil }
      return .init(
        readFrame: readFrame, readableFrames: writtenFrames - readFrame, writtenFrames: writtenFrames,
        ringFrames: ringFrames, boundary: boundary, incomingTransition: incoming, device: device)
    }

    /// Frames heard count for the track last announced (a crossfade announces the incoming track
    /// at its first mixed frame).
    private mutating func hear(_ frames: Int) {
      let id = announced.last ?? -1
      if let last = heard.last, last.track == id {
        heard[heard.count - 1].frames += frames
      } else {
        heard.append((id, frames))
      }
    }

    /// One step while playing; false once the ring has run dry.
    @discardableResult
    mutating func step() -> Bool {
      let step = machine.nextStep(facts)
      steps.append(step)
      switch step {
      case .silence(let frames, _):
        device.isOpen = true
        silence += frames
        machine.silenceWritten(frames)
      case .boundary(let boundary):
        device.isOpen = true
        boundaries.removeFirst()
        switch machine.begin(
          boundary, transition: transitions[boundary.trackID] ?? Transition(), dopSwitchMilliseconds: 0)
        {
        case .started: announced.append(boundary.trackID)
        case .crossfadeHeard(let consumed): readFrame += consumed
        case .formatChanged: break
        }
      case .crossfade(let frames, _, _, let announce):
        if let announce { announced.append(announce) }
        readFrame += frames
        machine.played(frames)
        hear(frames)
      case .skip(let frames):
        readFrame += frames
        skipped += frames
        machine.skipped(frames)
      case .open:
        device.isOpen = true
        machine.deviceOpened(clocked: device.isClocked)
      case .leadIn(let frames):
        silence += frames
        machine.leadInWritten()
      case .play(let frames, _, _):
        readFrame += frames
        machine.played(frames)
        hear(frames)
      case .ringEmpty:
        switch machine.ringEmpty(queuedFrames: deviceQueue, chunkFrames: device.chunkFrames, sampleRate: 44100, now: 0)
        {
        case .wait: deviceQueue = 0
        case .playOut:
          machine.playedOut(deviceClocked: device.isClocked)
          machine.ranDry()
          dryReports += 1
          return false
        case .stayDry: return false
        }
      }
      return true
    }

    mutating func playToTheEnd() {
      var limit = 10_000
      while step() {
        limit -= 1
        precondition(limit > 0, "the output never ran dry")
      }
    }
  }

  func heard(_ simulation: Simulation) -> [String] { simulation.heard.map { "\($0.track):\($0.frames)" } }

  // MARK: Stop and the queue's end

  @Test func aStopAndFlushLeaveNothingOfTheStoppedTrackForTheTracksAfterIt() {
    var sim = Simulation()
    sim.queue(track: 1, frames: 100_000)
    sim.machine.start(.now)
    sim.machine.startPlaying()
    for _ in 0..<10 { sim.step() }
    // A correction owed to the stopped track (a server's skip and pause-for) when the stop comes.
    sim.machine.correct(silenceFrames: 500, skipFrames: 300, framesBuffered: true)
    sim.machine.stop()
    sim.machine.flushedAll(deviceClocked: true)
    sim.readFrame = sim.writtenFrames
    sim.boundaries.removeAll()
    let silenceBefore = sim.silence
    sim.queue(track: 2, frames: 4410)
    sim.queue(track: 3, frames: 4411)
    sim.machine.start(.now)
    sim.machine.startPlaying()
    sim.playToTheEnd()
    let track1 = sim.heard.first { $0.track == 1 }?.frames ?? 0
    #expect(heard(sim) == ["1:\(track1)", "2:4410", "3:4411"])
    #expect(sim.announced == [1, 2, 3])
    #expect(sim.skipped == 0)
    // The lead-in after the flush, one period, and nothing owed by the stopped track.
    #expect(sim.silence - silenceBefore == 1024)
    #expect(sim.machine.track == .init(id: 3, startFrame: 104_410, framesPlayed: 4411))
    #expect(sim.dryReports == 1)
  }

  @Test func theQueuesLastFramesAreAllPlayedThenTheRingIsReportedDryOnce() {
    var sim = Simulation()
    sim.device.isOpen = true
    sim.queue(track: 7, frames: 10_000)
    sim.machine.startPlaying()
    sim.deviceQueue = 8820
    sim.playToTheEnd()
    let audio = sim.steps.compactMap { step -> Int? in
      if case .play(let frames, nil, nil) = step { return frames }
      return nil
    }
    #expect(audio == Array(repeating: 1024, count: 9) + [784])
    // Waited once while the device held 200 ms, then padded and reported.
    #expect(sim.steps.suffix(2) == [.ringEmpty, .ringEmpty])
    #expect(sim.dryReports == 1)
    #expect(sim.machine.supply.isDry)
    // Dry: it stays so without another report until frames come.
    #expect(sim.step() == false)
    #expect(sim.dryReports == 1)
  }

  @Test func silenceOwedAtTheQueuesEndWaitsForAudioAndIsDroppedWhenTheRingRunsDry() {
    var sim = Simulation()
    sim.device.isOpen = true
    sim.queue(track: 1, frames: 2048)
    sim.machine.startPlaying()
    for _ in 0..<3 { sim.step() }  // the boundary and two periods: all of it is in the device
    sim.machine.correct(silenceFrames: 4410, skipFrames: 0, framesBuffered: false)
    // Nothing buffered to delay: no silence is written, the ring is empty.
    #expect(sim.machine.nextStep(sim.facts) == .ringEmpty)
    sim.playToTheEnd()
    #expect(sim.machine.corrections == .init(silence: 0, skip: 0, leadIn: true))
    // Run dry with nothing buffered, a correction has nothing to move.
    sim.machine.correct(silenceFrames: 441, skipFrames: 0, framesBuffered: false)
    #expect(sim.machine.corrections.silence == 0)
    sim.machine.correct(silenceFrames: 441, skipFrames: 0, framesBuffered: true)
    #expect(sim.machine.corrections.silence == 441)
  }

  // MARK: Boundaries

  @Test func eachBoundaryIsReachedExactlyAndEveryFrameCountsForItsOwnTrack() {
    var sim = Simulation()
    sim.device.isOpen = true
    sim.queue(track: 1, frames: 5000)
    sim.queue(track: 2, frames: 3000)
    sim.machine.startPlaying()
    sim.playToTheEnd()
    let firstTrack = sim.steps.prefix(7)
    #expect(
      Array(firstTrack) == [
        .boundary(TrackBoundary(trackID: 1, frame: 0, format: Self.pcm44)),
        .play(frames: 1024, fadeOut: nil, fadeIn: nil),
        .play(frames: 1024, fadeOut: nil, fadeIn: nil), .play(frames: 1024, fadeOut: nil, fadeIn: nil),
        .play(frames: 1024, fadeOut: nil, fadeIn: nil), .play(frames: 904, fadeOut: nil, fadeIn: nil),
        .boundary(TrackBoundary(trackID: 2, frame: 5000, format: Self.pcm44)),
      ])
    #expect(heard(sim) == ["1:5000", "2:3000"])
  }

  @Test func aSkipStopsAtTheBoundaryAndGoesOnInTheNextTrack() {
    var sim = Simulation()
    sim.device.isOpen = true
    sim.queue(track: 1, frames: 2000)
    sim.queue(track: 2, frames: 5000)
    sim.machine.startPlaying()
    sim.step()  // track 1 begins
    sim.machine.correct(silenceFrames: 0, skipFrames: 3000, framesBuffered: true)
    sim.playToTheEnd()
    #expect(
      Array(sim.steps[1...3]) == [
        .skip(frames: 1024), .skip(frames: 976), .boundary(TrackBoundary(trackID: 2, frame: 2000, format: Self.pcm44)),
      ])
    #expect(sim.steps[4] == .skip(frames: 1000))
    #expect(sim.skipped == 3000)
    #expect(heard(sim) == ["2:4000"])
    #expect(sim.machine.track.framesPlayed == 5000)
  }

  @Test func aClosedSoundCardOpensThenALeadInGoesBeforeTheAudio() {
    var sim = Simulation()
    sim.queue(track: 1, frames: 4096)
    sim.machine.startPlaying()
    sim.step()  // the boundary opens the device for its format
    sim.machine.deviceOpened(clocked: true)
    #expect(sim.machine.nextStep(sim.facts) == .leadIn(frames: 1024))
    sim.machine.leadInWritten()
    #expect(sim.machine.nextStep(sim.facts) == .play(frames: 1024, fadeOut: nil, fadeIn: nil))
    // A pipe has no lead-in.
    var pipe = Simulation()
    pipe.device = .init(isOpen: false, isClocked: false, sampleRate: 44100, chunkFrames: 1024)
    pipe.queue(track: 1, frames: 4096)
    pipe.machine.startPlaying()
    pipe.playToTheEnd()
    #expect(pipe.silence == 0)
    #expect(heard(pipe) == ["1:4096"])
  }

  @Test func aModeSwitchToDSDOwesTheConfiguredSilenceAndNoFadeTouchesDSD() {
    var machine = OutputStateMachine()
    let dop = AudioFormat(sampleRate: 176_400, channels: 2, bitsPerSample: 24, encoding: .dop)
    let beginning = machine.begin(
      TrackBoundary(trackID: 4, frame: 0, format: dop), transition: Transition(kind: .fadeIn, seconds: 2),
      dopSwitchMilliseconds: 100)
    #expect(beginning == .started)
    #expect(machine.corrections.silence == 17_640)
    #expect(machine.track.fadeIn == nil)
    #expect(machine.encoding == .dop)
    // Back to PCM: the same silence at PCM's rate; a fade-in applies again.
    let back = machine.begin(
      TrackBoundary(trackID: 5, frame: 10, format: Self.pcm44), transition: Transition(kind: .fadeIn, seconds: 2),
      dopSwitchMilliseconds: 100)
    #expect(back == .started)
    #expect(machine.corrections.silence == 17_640 + 4410)
    #expect(machine.track.fadeIn?.frames == 88_200)
  }

  // MARK: Fades and crossfades

  @Test func aFadeOutWindowIsArrivedAtExactlyAndRampsToTheBoundary() {
    var sim = Simulation()
    sim.device.isOpen = true
    sim.queue(track: 1, frames: 50_000)
    sim.queue(track: 2, frames: 1000, transition: Transition(kind: .fadeOut, seconds: 1))
    sim.machine.startPlaying()
    sim.playToTheEnd()
    let windowStart = 50_000 - 44_100
    var position = 0
    var fadedFrames = 0
    for case .play(let frames, let fadeOut?, nil) in sim.steps {
      if fadedFrames == 0 { #expect(sim.framesBefore(stepMatching: fadeOut) == windowStart) }
      #expect(fadeOut == .init(position: position, length: 44_100))
      position += frames
      fadedFrames += frames
    }
    #expect(fadedFrames == 44_100)
    #expect(heard(sim) == ["1:50000", "2:1000"])
  }

  @Test func aCrossfadeBeginsOnlyWithTheIncomingPartDecodedAndAnnouncesItOnce() {
    let crossfade = Transition(kind: .crossfade, seconds: 1)
    var sim = Simulation()
    sim.device.isOpen = true
    sim.queue(track: 1, frames: 100_000)
    sim.queue(track: 2, frames: 60_000, transition: crossfade)
    sim.machine.startPlaying()
    sim.playToTheEnd()
    let mixed = sim.steps.reduce(0) { total, step in
      if case .crossfade(let frames, _, let ahead, _) = step {
        #expect(ahead == 44_100)
        return total + frames
      }
      return total
    }
    #expect(mixed == 44_100)
    #expect(sim.announced == [1, 2])
    // Track 1's own frames, then the window mixed (counted as track 2's, whose time starts there),
    // then the rest of track 2 after the frames mixed in.
    #expect(heard(sim) == ["1:55900", "2:60000"])
    #expect(sim.machine.track == .init(id: 2, startFrame: 100_000, framesPlayed: 60_000))

    // Track 2 not decoded far enough when the window opens: no crossfade, no early announcement,
    // and track 1 plays to its end untouched.
    var late = Simulation()
    late.device.isOpen = true
    late.queue(track: 1, frames: 100_000)
    late.queue(track: 2, frames: 20_000, transition: crossfade)
    late.machine.startPlaying()
    late.playToTheEnd()
    #expect(!late.steps.contains { if case .crossfade = $0 { true } else { false } })
    #expect(late.announced == [1, 2])
    #expect(heard(late) == ["1:100000", "2:20000"])
  }

  // MARK: Pause and start

  @Test func aPauseOnASoundCardPlaysWhatItHeldThenTheSilenceSaysItWasHeard() {
    var machine = OutputStateMachine()
    machine.startPlaying()
    let device = OutputStateMachine.Device(isOpen: true, isClocked: true, sampleRate: 44100, chunkFrames: 1024)
    #expect(machine.pause(device: device, queuedFrames: { 3000 }) == .playOut)
    #expect(machine.run == .paused(silenceDue: 3000 + 2048))
    // 5048 frames: the fifth period of silence is the one that completes it, reported once.
    let heard = (1...7).map { _ in machine.pauseSilenceWritten(1024) }
    #expect(heard == [false, false, false, false, true, false, false])
    #expect(machine.run == .paused(silenceDue: 0))
    // A resume drops what silence was due.
    machine.start(.now)
    #expect(machine.run == .waiting(.now))
  }

  @Test func aPauseOnAPipeOrWhileALineUpIsQueuedOrWhenStopped() {
    let pipe = OutputStateMachine.Device(isOpen: true, isClocked: false, sampleRate: 44100, chunkFrames: 1024)
    var playing = OutputStateMachine()
    playing.startPlaying()
    #expect(playing.pause(device: pipe, queuedFrames: { 9999 }) == .pauseQueued)
    #expect(playing.run == .paused(silenceDue: nil))

    let card = OutputStateMachine.Device(isOpen: true, isClocked: true, sampleRate: 44100, chunkFrames: 1024)
    var lining = OutputStateMachine()
    lining.start(.at(nanoseconds: 5_000_000_000))
    #expect(
      lining.lineUp(nanosecondsToDeadline: 50_000_000, delayFrames: 0, rate: 44100, chunkFrames: 1024)
        == .silence(frames: 1024))
    #expect(lining.pause(device: card, queuedFrames: { 2000 }) == .discardLineUp)
    #expect(lining.corrections.leadIn)

    var stopped = OutputStateMachine()
    #expect(stopped.pause(device: card, queuedFrames: { 2000 }) == .none)
    #expect(stopped.run == .stopped)
  }

  @Test func aTrackBufferedWholeStartsNowUnlessItsStartIsTimed() {
    var threshold = OutputStateMachine()
    threshold.start(.buffered(tenths: 20))
    threshold.allBuffered()
    #expect(threshold.run == .waiting(.now))
    // A sync group's start: the track decoded before its time still starts at its time.
    var timed = OutputStateMachine()
    timed.start(.at(nanoseconds: 7_000_000_000))
    timed.allBuffered()
    #expect(timed.run == .waiting(.at(nanoseconds: 7_000_000_000)))
  }

  @Test func aStartWhilePlayingLeavesThePrefetchedTrackToItsBoundary() {
    var machine = OutputStateMachine()
    machine.start(.buffered(tenths: 5))
    machine.startPlaying(skipping: 120)
    #expect(machine.corrections.skip == 120)
    machine.start(.now)
    #expect(machine.run == .playing)
  }

  // MARK: A timed start

  @Test func aTimedStartQueuesSilenceUntilItsFirstFrameIsHeardAtTheDeadline() {
    var machine = OutputStateMachine()
    machine.start(.at(nanoseconds: 1_000_000_000))
    machine.deviceOpened(clocked: true)
    // 100 ms away, nothing queued: 4410 frames of silence go first, a period at a time.
    var queued = 0
    var steps: [OutputStateMachine.LineUp] = []
    for elapsed in stride(from: 0, to: 100, by: 10) {
      let toDeadline = Int64(100 - elapsed) * 1_000_000
      let step = machine.lineUp(nanosecondsToDeadline: toDeadline, delayFrames: queued, rate: 44100, chunkFrames: 1024)
      steps.append(step)
      if case .silence(let frames) = step { queued += frames }
      if case .started = step { break }
      queued = max(0, queued - 441)  // 10 ms played meanwhile
    }
    // Just enough silence that the first frame is heard at the deadline: nothing to skip.
    #expect(
      steps == [
        .silence(frames: 1024), .silence(frames: 1024), .silence(frames: 1024), .silence(frames: 1024),
        .silence(frames: 314), .started(scheduled: true),
      ])
    #expect(machine.corrections.skip == 0)
    #expect(!machine.corrections.leadIn)
    // Two periods queued and more than a period to go: the rest waits until the time is near.
    var settling = OutputStateMachine()
    #expect(
      settling.lineUp(nanosecondsToDeadline: 100_000_000, delayFrames: 2048, rate: 44100, chunkFrames: 1024) == .settle)
    // Exactly on time: playing, nothing to skip.
    var onTime = OutputStateMachine()
    #expect(
      onTime.lineUp(nanosecondsToDeadline: 20_000_000, delayFrames: 882, rate: 44100, chunkFrames: 1024)
        == .started(scheduled: true))
    #expect(onTime.run == .playing)
    #expect(onTime.corrections.skip == 0)
  }

  @Test func aLateTimedStartSkipsWhatWouldHavePlayedAndAFarOneIsTakenAsNow() {
    var late = OutputStateMachine()
    // The deadline passed 10 ms ago and the device holds 20 ms: 30 ms of the track are skipped.
    #expect(
      late.lineUp(nanosecondsToDeadline: -10_000_000, delayFrames: 882, rate: 44100, chunkFrames: 1024)
        == .started(scheduled: true))
    #expect(late.corrections.skip == 1323)
    var far = OutputStateMachine()
    #expect(
      far.lineUp(nanosecondsToDeadline: 11_000_000_000, delayFrames: 0, rate: 44100, chunkFrames: 1024)
        == .started(scheduled: false))
    #expect(far.corrections.skip == 0)
    var stale = OutputStateMachine()
    #expect(
      stale.lineUp(nanosecondsToDeadline: -11_000_000_000, delayFrames: 0, rate: 44100, chunkFrames: 1024)
        == .started(scheduled: true))
    #expect(stale.corrections.skip == 0)
  }
}

extension OutputStateMachineTests.Simulation {
  /// The frames read before the first play step whose fade-out is `span`.
  func framesBefore(stepMatching span: OutputStateMachine.RampSpan) -> Int {
    var frames = 0
    for step in steps {
      switch step {
      case .play(let count, let fadeOut, _):
        if fadeOut == span { return frames }
        frames += count
      case .skip(let count): frames += count
      default: break
      }
    }
    return frames
  }
}
