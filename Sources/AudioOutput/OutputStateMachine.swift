import AudioBuffers

/// The output's decisions, apart from the device, the ring and the clock: whether it waits, plays,
/// is paused or stopped; which frames go next (a correction's silence, a skip, the lead-in before
/// audio on a sound card, a fade or a crossfade, exactly up to a track boundary); what a stop, a
/// flush, a pause or a start leave behind; and what the ring running empty means.
///
/// Pure: the output thread (`OutputPlayer`) gathers the facts, asks for the next step, carries it
/// out on the device and reports what was written. Nothing here touches a device, a clock or a
/// lock, so every transition is tested frame by frame without a thread (`OutputStateMachineTests`).
/// A value type without references: the realtime path copies and mutates it without allocating.
struct OutputStateMachine: Equatable {
  enum RunState: Equatable {
    case stopped
    /// Until the start condition holds; a timed start on a sound card is lined up first.
    case waiting(OutputPlayer.StartCondition)
    case playing
    /// On a sound card, the silence still to write before what the card held when the pause came
    /// has been heard (the position is then final); nil once written, or when nothing is due.
    case paused(silenceDue: Int?)
  }

  private(set) var run = RunState.stopped
  private(set) var track = Track()
  private(set) var approach = Approach.unplanned
  private(set) var corrections = Corrections()
  private(set) var supply = OutputSupply()
  /// What the current track's frames carry. A stop or flush does not forget it: LMS stops before
  /// every new play, and the DAC is still in that mode. The player starts in PCM's.
  private(set) var encoding = SampleEncoding.pcm

  /// The silence before audio while stopped, paused or run dry counts no more than a pipe's.
  var isIdle: Bool { run != .playing || supply.isDry }

  // MARK: Commands (applied between steps)

  /// Stops writing; what is buffered stays.
  mutating func stop() { run = .stopped }

  /// Everything buffered was dropped: nothing owed to it remains, and the next boundary is a
  /// fresh start.
  mutating func flushedAll(deviceClocked: Bool) {
    corrections = Corrections(leadIn: deviceClocked)
    track = Track(id: -1, startFrame: track.startFrame)
    approach = .unplanned
    supply.framesArrived()
  }

  /// Frames from a boundary on were dropped (the prefetched track): a window planned into it is
  /// gone with it.
  mutating func flushedPrefetched() {
    switch approach {
    case .planned, .crossfading: approach = .unplanned
    case .unplanned: break
    }
  }

  mutating func pause(device: Device, queuedFrames: () -> Int) -> PauseEffect {
    let effect: PauseEffect
    var silenceDue: Int?
    switch run {
    case .stopped:
      return .none
    case .paused(let due):
      silenceDue = due
      effect = device.isClocked ? .none : .pauseQueued
    case .waiting:
      effect = device.isClocked ? .discardLineUp : .pauseQueued
      if device.isClocked { corrections.leadIn = true }
    case .playing:
      if !device.isClocked {
        effect = .pauseQueued
      } else if device.isOpen {
        // What the device holds is heard: the pause lands after it, nothing lost or repeated.
        silenceDue = queuedFrames() + 2 * device.chunkFrames
        effect = .playOut
      } else {
        effect = .none
      }
    }
    run = .paused(silenceDue: silenceDue)
    return effect
  }

  /// A start or a resume. Already playing (a prefetched track), it starts when the output gets there.
  mutating func start(_ condition: OutputPlayer.StartCondition) {
    guard run != .playing else { return }
    run = .waiting(condition)
    supply.framesArrived()
  }

  /// The track to start is buffered whole, below the start threshold: a start waiting for the
  /// buffer goes now; a timed start (a sync group's) keeps its time.
  mutating func allBuffered() {
    if case .waiting(.buffered) = run { run = .waiting(.now) }
  }

  /// Silence to insert (positive) or frames to skip, in frames. Run dry with nothing buffered there
  /// is nothing to move: kept, a correction would move the next track instead.
  mutating func correct(silenceFrames: Int, skipFrames: Int, framesBuffered: Bool) {
    guard !supply.isDry || framesBuffered else { return }
    corrections.silence += silenceFrames
    corrections.skip += skipFrames
  }

  /// The start condition holds (or a timed start was lined up, `skipping` the frames that would
  /// have played while the device's delay ran).
  mutating func startPlaying(skipping frames: Int = 0) {
    run = .playing
    corrections.skip += frames
  }

  /// One pass of lining up a timed start on a sound card (sync groups), from the device's delay
  /// and the time left until the deadline: silence is queued until a frame written next would be
  /// heard at the deadline, so the first frame plays then whatever the device holds or however long
  /// it took to open; a start late by the device's own delay skips the frames that would have
  /// played meanwhile, keeping the group's schedule.
  mutating func lineUp(nanosecondsToDeadline: Int64, delayFrames: Int, rate: Int, chunkFrames: Int) -> LineUp {
    corrections.leadIn = false  // the silence lining up the start comes first anyway
    // squeezelite's sanity limit: a start more than 10 s away is taken as now.
    guard nanosecondsToDeadline < 10_000_000_000 else {
      startPlaying()
      return .started(scheduled: false)
    }
    let lead = Int(nanosecondsToDeadline * Int64(rate) / 1_000_000_000) - delayFrames
    if lead > 0 {
      // Two periods queued keep the device running; the rest is written once the time is near,
      // when a sound server's delay has settled (at first it counts what was written).
      if lead > chunkFrames && delayFrames >= 2 * chunkFrames { return .settle }
      return .silence(frames: min(lead, chunkFrames))
    }
    // A start 10 s or more late is no longer this one's to keep.
    startPlaying(skipping: -lead < 10 * rate ? -lead : 0)
    return .started(scheduled: true)
  }

  // MARK: The device

  mutating func deviceOpened(clocked: Bool) { corrections.leadIn = clocked }

  // MARK: Playing

  /// Whether the next step needs the transition of `boundary`'s track (`Facts.incomingTransition`).
  func needsTransition(into boundary: TrackBoundary) -> Bool {
    plan(for: boundary.trackID) == nil
  }

  mutating func nextStep(_ facts: Facts) -> Step {
    let chunk = facts.device.chunkFrames
    // Silence delays what follows it: with nothing buffered to follow (a queue's end, all of it
    // already in the device) it would only lengthen the stream, so it waits for audio.
    if corrections.silence > 0, facts.bufferedFrames > 0 || facts.boundary != nil {
      // A closed device reopens for the current track's DSD at its rate; PCM's silence at any rate.
      let rate = facts.device.isOpen || encoding.isBitstream ? facts.device.sampleRate : 44100
      return .silence(frames: min(corrections.silence, chunk), rate: rate)
    }
    var limit = Int.max
    var fadeOut: RampSpan?
    if let boundary = facts.boundary {
      // The boundary stays queued until the device is open for it: a device that is absent now
      // must not cost the track its start.
      if boundary.frame <= facts.readFrame { return .boundary(boundary) }
      limit = boundary.frame - facts.readFrame
      if let plan = planTransition(into: boundary, facts), plan.frames > 0 {
        let windowStart = boundary.frame - plan.frames
        let position = facts.readFrame - windowStart
        if position < 0 {
          limit = -position  // arrive exactly at the window
        } else if plan.kind == .crossfade {
          if let step = crossfadeStep(into: boundary, plan: plan, position: position, facts) { return step }
        } else if plan.kind == .fadeOut || plan.kind == .fadeOutIn {
          fadeOut = RampSpan(position: position, length: plan.frames)
        }
      }
    }
    let frames = min(facts.readableFrames, limit, chunk)
    // With nothing buffered there is nothing to skip yet: a skip left pending on an empty ring
    // would spin here until frames came.
    if corrections.skip > 0, frames > 0 { return .skip(frames: min(frames, corrections.skip)) }
    guard frames > 0 else { return .ringEmpty }
    supply.framesArrived()
    guard facts.device.isOpen else { return .open(rate: facts.device.sampleRate) }
    if corrections.leadIn { return .leadIn(frames: chunk) }
    var fadeIn: RampSpan?
    if let fade = track.fadeIn {
      if facts.readFrame >= fade.start + fade.frames {
        track.fadeIn = nil
      } else {
        fadeIn = RampSpan(position: facts.readFrame - fade.start, length: fade.frames)
      }
    }
    return .play(frames: frames, fadeOut: fadeOut, fadeIn: fadeIn)
  }

  /// `frames` of audio (or of a crossfade) were written.
  mutating func played(_ frames: Int) { track.framesPlayed += frames }

  mutating func skipped(_ frames: Int) {
    corrections.skip -= frames
    track.framesPlayed += frames
  }

  mutating func silenceWritten(_ frames: Int) { corrections.silence = max(0, corrections.silence - frames) }

  mutating func leadInWritten() { corrections.leadIn = false }

  /// The boundary at the read position was taken off its queue.
  mutating func begin(_ boundary: TrackBoundary, transition: Transition, dopSwitchMilliseconds: Int) -> Beginning {
    guard boundary.isNewTrack else { return .formatChanged }
    let wasPlaying = track.id >= 0
    let switchesMode = encoding.isBitstream != boundary.format.encoding.isBitstream
    encoding = boundary.format.encoding
    let rate = boundary.format.sampleRate
    if switchesMode {
      // In the new mode's silence (DoP's markers tell the DAC to switch while it is muted).
      corrections.silence += dopSwitchMilliseconds * rate / 1000
    }
    let heardInCrossfade: Int?
    if case .crossfading(let plan) = approach, plan.trackID == boundary.trackID {
      heardInCrossfade = plan.frames
    } else {
      heardInCrossfade = nil
    }
    approach = .unplanned
    if let frames = heardInCrossfade {
      // Its elapsed time began with the crossfade.
      track = Track(id: boundary.trackID, startFrame: boundary.frame, framesPlayed: track.framesPlayed)
      return .crossfadeHeard(consumedFrames: frames)
    }
    var fadeFrames = 0
    switch transition.kind {
    case .fadeIn: fadeFrames = transition.seconds * rate
    case .fadeOutIn: fadeFrames = transition.seconds * rate / 2
    // A crossfade with nothing before it fades in instead; one that could not happen does not.
    case .crossfade: fadeFrames = wasPlaying ? 0 : transition.seconds * rate
    case .none, .fadeOut: break
    }
    let fadeIn = fadeFrames > 0 && !encoding.isBitstream ? (boundary.frame, fadeFrames) : nil
    track = Track(id: boundary.trackID, startFrame: boundary.frame, framesPlayed: 0, fadeIn: fadeIn)
    return .started
  }

  // MARK: The ring empty

  /// The ring is empty while playing; `queuedFrames` is what the device holds (0 when closed).
  mutating func ringEmpty(queuedFrames: Int, chunkFrames: Int, sampleRate: Int, now: UInt64) -> OutputSupply.Action {
    supply.ringEmpty(queuedFrames: queuedFrames, chunkFrames: chunkFrames, sampleRate: sampleRate, now: now)
  }

  /// The device was padded to play what it held; on a sound card the next audio gets a lead-in.
  mutating func playedOut(deviceClocked: Bool) {
    corrections.leadIn = deviceClocked
  }

  /// Frames came while the device was padded.
  mutating func framesArrived() { supply.framesArrived() }

  /// The ring ran dry (reported once): nothing was left to delay or to skip, and a correction left
  /// over would move the next track.
  mutating func ranDry() {
    supply.ranDry()
    corrections.silence = 0
    corrections.skip = 0
  }

  // MARK: Paused

  /// `frames` of pause silence were written; true when what the device held is now heard.
  mutating func pauseSilenceWritten(_ frames: Int) -> Bool {
    guard case .paused(let due?) = run else { return false }
    run = .paused(silenceDue: max(0, due - frames))
    return due > 0 && due <= frames
  }

  /// The device could not take the pause silence (closed, failed): none is due any more.
  mutating func pauseSilenceAbandoned() {
    if case .paused = run { run = .paused(silenceDue: nil) }
  }

  // MARK: Private

  private func plan(for trackID: Int) -> TransitionPlan? {
    switch approach {
    case .planned(let plan), .crossfading(let plan): plan.trackID == trackID ? plan : nil
    case .unplanned: nil
    }
  }

  /// The window before `boundary` in which the current track crossfades or fades out.
  private mutating func planTransition(into boundary: TrackBoundary, _ facts: Facts) -> TransitionPlan? {
    if let plan = plan(for: boundary.trackID) { return plan }
    var frames = 0
    let kind = facts.incomingTransition?.kind ?? .none
    // DSD frames are bits for the DAC: no fade may touch them, nor mix them.
    if boundary.isNewTrack, track.id >= 0, !encoding.isBitstream, !boundary.format.encoding.isBitstream {
      let seconds = facts.incomingTransition?.seconds ?? 0
      let rate = facts.device.isOpen ? facts.device.sampleRate : boundary.format.sampleRate
      // The old track's frames: those played plus those still before the boundary.
      let oldTrackFrames = track.framesPlayed + (boundary.frame - facts.readFrame)
      switch kind {
      case .crossfade where boundary.format.sampleRate == rate:
        // Both ends must fit in the ring together.
        frames = min(seconds * rate, oldTrackFrames, facts.ringFrames * 9 / 20)
      case .fadeOut:
        frames = min(seconds * rate, oldTrackFrames)
      case .fadeOutIn:
        frames = min(seconds * rate / 2, oldTrackFrames)
      default:
        frames = 0
      }
    }
    let plan = TransitionPlan(trackID: boundary.trackID, kind: kind, frames: frames)
    approach = .planned(plan)
    return plan
  }

  /// One chunk of the crossfade window, or nil when it cannot happen: it begins only at the
  /// window's first frame with the whole of the incoming track's part decoded (it cannot be
  /// waited for later); the old track then plays to its end unmixed.
  private mutating func crossfadeStep(
    into boundary: TrackBoundary, plan: TransitionPlan, position: Int, _ facts: Facts
  ) -> Step? {
    var announce: Int?
    if case .crossfading = approach {
    } else {
      guard position == 0, facts.writtenFrames >= boundary.frame + plan.frames else {
        approach = .planned(TransitionPlan(trackID: plan.trackID, kind: .none, frames: 0))
        return nil
      }
      approach = .crossfading(plan)
      track.framesPlayed = 0  // the incoming track is heard from here: its elapsed time starts now
      announce = boundary.trackID
    }
    return .crossfade(
      frames: min(boundary.frame - facts.readFrame, facts.device.chunkFrames),
      ramp: RampSpan(position: position, length: plan.frames), aheadFrames: plan.frames, announce: announce)
  }
}
