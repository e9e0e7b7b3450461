import AudioBuffers

/// The values `OutputStateMachine` holds, is given and answers with.
extension OutputStateMachine {
  /// The track being heard.
  struct Track: Equatable {
    /// The engine's id; -1 before the first boundary after a flush.
    var id = -1
    /// The output ring frame at which it began.
    var startFrame = 0
    /// Its frames written so far: its elapsed time.
    var framesPlayed = 0
    /// A fade-in running from its start: ring frame where it begins, and its length.
    var fadeIn: (start: Int, frames: Int)?

    static func == (lhs: Track, rhs: Track) -> Bool {
      lhs.id == rhs.id && lhs.startFrame == rhs.startFrame && lhs.framesPlayed == rhs.framesPlayed
        && lhs.fadeIn?.start == rhs.fadeIn?.start && lhs.fadeIn?.frames == rhs.fadeIn?.frames
    }
  }

  /// The window before the next boundary (crossfade or fade out), planned once per boundary.
  struct TransitionPlan: Equatable {
    var trackID: Int
    var kind: Transition.Kind
    /// The window's length in frames; 0 when nothing happens there.
    var frames: Int
  }

  enum Approach: Equatable {
    case unplanned
    case planned(TransitionPlan)
    /// The crossfade has begun: the incoming track was announced and its first frames are mixed in.
    case crossfading(TransitionPlan)
  }

  /// What is owed before, or instead of, the next frames of audio.
  struct Corrections: Equatable {
    /// Frames of silence to insert (a server's pause-for, a sync correction, a DSD mode switch).
    var silence = 0
    /// Frames of audio to skip.
    var skip = 0
    /// A sound card just opened, flushed or run out: a period of silence goes first, since a
    /// sound server starting a stream loses its first milliseconds.
    var leadIn = false
  }

  /// What the device is, as far as a decision goes.
  struct Device: Equatable {
    var isOpen: Bool
    /// A sound card (paced by its clock), not a pipe.
    var isClocked: Bool
    var sampleRate: Int
    var chunkFrames: Int
  }

  /// What the output thread sees before a step while playing.
  struct Facts: Equatable {
    /// The ring's read position, the frames readable from it in one piece, and the frames
    /// written into the ring in all.
    var readFrame: Int
    var readableFrames: Int
    var writtenFrames: Int
    var ringFrames: Int
    /// The next boundary queued (a track's first frame, or a format change).
    var boundary: TrackBoundary?
    /// The transition of the boundary's track, looked up while `needsTransition` says so.
    var incomingTransition: Transition?
    var device: Device

    var bufferedFrames: Int { writtenFrames - readFrame }
  }

  /// A part of a fade: `position` frames into a ramp of `length`.
  struct RampSpan: Equatable {
    var position: Int
    var length: Int
  }

  /// The next thing the output thread does while playing.
  enum Step: Equatable {
    /// Write up to `frames` of correction silence, opening a closed device at `rate` first.
    case silence(frames: Int, rate: Int)
    /// The boundary at the read position: open the device for its format, take the boundary
    /// off its queue and `begin` it.
    case boundary(TrackBoundary)
    /// Mix up to `frames` old frames with the incoming track's, which lie `aheadFrames` past the
    /// read position; `announce`: the incoming track is heard from this chunk on (STMs).
    case crossfade(frames: Int, ramp: RampSpan, aheadFrames: Int, announce: Int?)
    /// Drop up to `frames` from the ring, counted as played.
    case skip(frames: Int)
    /// Open the closed device at `rate` before audio is written.
    case open(rate: Int)
    /// Write a period of silence before the audio (`Corrections.leadIn`).
    case leadIn(frames: Int)
    /// Write up to `frames` of audio, with the fades given.
    case play(frames: Int, fadeOut: RampSpan?, fadeIn: RampSpan?)
    /// Nothing to play: read what the device holds and ask `ringEmpty`.
    case ringEmpty
  }

  /// What the start of a boundary's track asks of the output thread.
  enum Beginning: Equatable {
    /// The same track changed format (no new start).
    case formatChanged
    /// The track starts here: announce it (STMs).
    case started
    /// Its first frames were already heard, mixed into the last track's end: consume them
    /// from the ring without counting them again.
    case crossfadeHeard(consumedFrames: Int)
  }

  /// What a pause asks of the device.
  enum PauseEffect: Equatable {
    case none
    /// A pipe: what it holds is its reader's, the pause lands after it.
    case pauseQueued
    /// Only the silence lining up a timed start was queued: dropped, the start is timed anew.
    case discardLineUp
    /// A sound card plays what it holds, then silence (`RunState.paused(silenceDue:)`).
    case playOut
  }

  /// What one pass of lining up a timed start asks of the output thread.
  enum LineUp: Equatable {
    /// Enough is queued for now: wait a moment and read the delay again.
    case settle
    /// Queue this much silence, and make sure the device runs.
    case silence(frames: Int)
    /// Playing from here; `scheduled`: the start is checked against its `StartSchedule` later
    /// (not for one taken as now).
    case started(scheduled: Bool)
  }
}
