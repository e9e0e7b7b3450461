"""A sync group keeps one clock while the real LMS is away.

Three slimplay players in one LMS sync group play the "Long FLAC" album, repeated, into paced readers
that run like sound cards with crystals 0, +50 and -50 ppm off (group_rig.py). Some 25 s in, the
server goes away (stopped for 5 minutes, or cut off by a 90 s partition), then returns. Read every
10 s from the readers' own logs and the captures aligned to the frame:

- while the server is away, every member stays within 1 ms of the leader (LMS's master): without
  the group's clock (`--sync-port 0`) the same rig drifts apart at 50 ppm from the leader;
- once it is back, LMS shows the heard track and time within 250 ms, one jump for the group, the
  members within 2 ms of each other 10 s later and 1 ms a minute later;
- nothing is missing or repeated in any capture but the few frames the corrections skipped or
  inserted (each one found, and counted against what the players logged);
- datagrams forged by another host, or recorded and sent again, move nothing.
"""

from __future__ import annotations

import re
import statistics
import time

import numpy as np
import pytest
from harness.group_rig import (align, as_frames, captured, group_datagram, group_macs, kill_and_restart, launch_members,
                       logged_corrections, recording_group, send_to_group, stop_readers, underruns,
                       wait_for_group_resync)
from test_real_lms_offline import Queue, cached_count

# Offsets read to a fraction of a millisecond from readers paced like sound cards, beside the other
# tests: a reader the busy machine runs late keeps its card's schedule (Tests/harness/fakes/paced_reader.c).
pytestmark = [pytest.mark.real_lms, pytest.mark.lms_versions("8.3.0", "7.9.1"),
              pytest.mark.usefixtures("lms_logs_commands")]

PPMS = [0.0, 50.0, -50.0]
RATE = 44100
MS = RATE / 1000
RESYNC_LINE = "resync: asking the server to play track"
TIMED_CORRECTION = re.compile(r"^\[(\d\d:\d\d:\d\d\.\d+)\] info group: (\d+) frames \(\d+ µs\)", re.MULTILINE)


def load_group_queue(real_lms, members, tracks) -> None:  # noqa: ANN001
    """The group's queue, loaded through every member in turn. LMS 7.9.1 saves a synced group's queue
    (for its start after a restart) only under the player the command came through
    (`Slim::Player::Playlist::modifyPlaylistCallback` names `$client`'s file for each member), and a
    member that comes back first after a restart brings its own: loaded through one, the group
    comes back empty whenever another member reconnects first."""
    for member in members:
        real_lms.load_tracks(member.mac, tracks)


def play_until_cached(real_lms, members, queue: Queue, seconds: float) -> None:
    load_group_queue(real_lms, members, queue.tracks)
    real_lms.play(members[0].mac, 0)
    unique = len({track.path for track in queue.tracks})
    deadline = time.monotonic() + seconds + 60
    while time.monotonic() < deadline:
        if all(queue.seconds_for(captured(m)) >= seconds and cached_count(m.folder) >= unique
               for m in members):
            return
        time.sleep(0.1)
    pytest.fail(f"the group did not play {seconds} s with the album cached\n" + "\n".join(m.log() for m in members))


def wait_for_the_end(members, queue: Queue, timeout: float, started: dict | None = None) -> None:  # noqa: ANN001
    """Until every reader has played the queue's length from where its player began (`started`: the
    byte of the queue a restarted member began at), give or take its corrections (a second), and
    nothing more came for 2 s."""
    deadline = time.monotonic() + timeout
    started = started or {}
    near = [len(queue.reference) - started.get(id(m), 0) - queue.rates[0] for m in members]
    sizes, since = None, time.monotonic()
    while time.monotonic() < deadline:
        now = [captured(m) for m in members]
        if now != sizes:
            sizes, since = now, time.monotonic()
        elif all(size >= wanted for size, wanted in zip(now, near)) and time.monotonic() - since >= 2:
            return
        time.sleep(0.2)
    pytest.fail(f"the readers stopped at {sizes} bytes of {len(queue.reference)}\n" + "\n".join(m.log() for m in members))


def forge_and_replay(members, recorded: list[bytes], keyed: bool) -> None:
    """What another host on the LAN can do: claim to be the master with a play point 2 s away, and
    send again what it overheard from the group."""
    master = members[0].mac
    now_ns = time.monotonic_ns()
    forged = [group_datagram(master, master, 7, 10**9 + n, 0, 1, RATE, 2 * RATE + n, now_ns) for n in range(20)]
    # Without a key, from an address LMS does not have for the master; with one, even from its own.
    send_to_group(forged, source="127.0.0.1" if keyed else "127.0.0.77")
    send_to_group(recorded, source="127.0.0.1")


JOINED = re.compile(r"group: no server; joining the group at track (\d+), ([\d.]+) s")


def wait_for_line(member, text: str, timeout: float) -> float | None:
    """Seconds until `text` appeared in the member's log (None: it did not)."""
    started = time.monotonic()
    while time.monotonic() < started + timeout:
        if text in member.log():
            return time.monotonic() - started
        time.sleep(0.05)
    return None


class Hearing:
    """The album frame a member played at any instant: from its reader's log and its capture aligned
    with the reference (`base`: the reference frame the capture began at)."""

    def __init__(self, member, reference, base: int = 0, whole: bool = True):  # noqa: ANN001
        self.member = member
        capture = as_frames(member.capture.bytes())
        if not whole:
            # A capture cut short (its player killed) may end inside a correction of silence whose log
            # line the kill lost: the player logs after it nudges, through its log thread.
            nonzero = np.flatnonzero(capture)
            tail = len(capture) - (int(nonzero[-1]) + 1 if nonzero.size else 0)
            if 0 < tail <= 4410:
                print(f"{member.name}: its last {tail} frames, silence cut off by its end, left out")
                capture = capture[:len(capture) - tail]
        self.logged = logged_corrections(member.log(), RATE)
        self.alignment = align(capture, reference[base:], expected=self.logged)
        self.base = base
        self.timeline = member.timeline()
        a = self.alignment
        print(f"{member.name} ({member.ppm:+} ppm, from frame {base}): {len(a.edits)} corrections, "
              f"{a.inserted} frames inserted, {a.skipped} skipped; {len(self.logged)} logged")
        if whole:
            assert a.reference_end == len(reference) - base, (
                f"{member.name} stopped at reference frame {base + a.reference_end} of {len(reference)}\n{member.log()}")
            assert a.capture_end == len(capture), f"{member.name}: {len(capture) - a.capture_end} frames after the end"
        # Every departure from the album is a correction the player logged (one logged just before a
        # stop or a flush, LMS's own at a resync, is dropped with what it would have moved).
        assert len(a.edits) <= len(self.logged), member.log()
        assert a.inserted + a.skipped <= sum(abs(c) for c in self.logged), member.log()

    def __call__(self, instant: int) -> float:
        return self.base + self.alignment.album_frame(self.member.frames_played(instant, self.timeline))


def reading(hearings, instant: int) -> list[float]:  # noqa: ANN001
    """Each member's offset from the first at `instant`, in frames: the median of eleven readings 20 ms
    apart around it, as a recording's offset is read over a window: a single instant can fall inside a
    correction a player is making."""
    rows = [[hearing(t) - hearings[0](t) for hearing in hearings]
            for t in range(instant - 100_000_000, instant + 100_000_001, 20_000_000)]
    return [statistics.median(column) for column in zip(*rows)]


def reference_frame(queue: Queue, track: int, seconds: float) -> int:
    """The queue's frame at `seconds` into track `track` (1-based)."""
    return sum(len(r) for r in queue.references[:track - 1]) // 4 + round(seconds * RATE)


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "outage, away, copies",
    [pytest.param("stopped", 300, 3, marks=pytest.mark.slow(seconds=480)),
     pytest.param("partition", 90, 2, marks=pytest.mark.slow(seconds=330))])
def test_the_group_keeps_one_clock_while_the_server_is_away(real_lms, start_player, tmp_path, outage, away, copies):
    queue = Queue(real_lms.library.tracks("Long FLAC") * copies)
    keyed = outage == "partition"
    extra = ("--sync-key", "kitchen and hall") if keyed else ()
    members = launch_members(real_lms, start_player, tmp_path, queue, PPMS, group_macs(len(PPMS)), extra)
    with recording_group() as overheard:
        play_until_cached(real_lms, members, queue, seconds=20)
        recorded = overheard()[-40:]
    assert recorded, "nothing of the group's traffic was heard on the LAN"
    cut = time.monotonic_ns()
    cut_wall = time.time()
    killed, restarted = None, None
    if outage == "stopped":
        real_lms.stop()
        time.sleep(away / 3)
        forge_and_replay(members, recorded, keyed)
        time.sleep(2)  # the forgeries reach every member (and are refused) before one is killed
        # One member is killed and started again while the server is away: it must find the group.
        killed = members[1]
        killed_at = time.monotonic_ns()
        members[1] = restarted = kill_and_restart(killed, start_player, tmp_path, queue, downtime=3)
        joined_after = wait_for_line(restarted, "group: no server; joining the group", timeout=10)
        in_step_after = wait_for_line(restarted, "group: in step with", timeout=20)
        print(f"restarted member: joined {joined_after} s, in step {in_step_after} s after its start")
        assert joined_after is not None and joined_after <= 5, restarted.log()
        assert in_step_after is not None, restarted.log()
        in_step = time.monotonic_ns() + 1
        time.sleep(max(0.0, away - (time.monotonic_ns() - cut) / 1e9))
        real_lms.start()
    else:
        with real_lms.partition():
            time.sleep(away / 2)
            forge_and_replay(members, recorded, keyed)
            time.sleep(away / 2)
    back_at, lms_right_after = wait_for_group_resync(real_lms, members, queue)
    back = int(back_at * 1e9)
    started = {}
    if restarted is not None:
        track, seconds = JOINED.search(restarted.log()).groups()
        started[id(restarted)] = reference_frame(queue, int(track), float(seconds)) * 4
    wait_for_the_end(members, queue, timeout=queue.seconds_for(len(queue.reference)) + 60, started=started)
    stop_readers(members)

    reference = as_frames(queue.reference)
    hearings = [Hearing(member, reference) if member is not restarted else None for member in members]
    if restarted is not None:
        first_life = Hearing(killed, reference, whole=False)
        second_life = Hearing(restarted, reference, base=started[id(restarted)] // 4)
        hearings[1] = lambda instant: first_life(instant) if instant < killed_at else second_life(instant)
    skipped_window = (killed_at, in_step) if restarted is not None else (0, 0)

    for number, member in enumerate(members):
        gaps = [(round((at - cut) / 1e9, 1), round(s, 3)) for at, s in underruns(member, queue.rates[0])
                if at < back + 60 * 10**9 and not skipped_window[0] <= at <= skipped_window[1]]
        assert not gaps, f"member {number} went silent (s after the cut, length): {gaps}\n{member.log()}"

    away_instants = [t for t in range(cut + 10 * 10**9, back, 10 * 10**9)
                     if not skipped_window[0] <= t <= skipped_window[1]]
    during = [reading(hearings, t) for t in away_instants]
    for instant, row in zip(away_instants, during):
        print(f"{(instant - cut) / 1e9:6.1f} s after the cut: " + ", ".join(f"{o / MS:+.3f} ms" for o in row[1:]))
    worst_away = max(abs(o) for row in during for o in row[1:]) / MS
    after = [reading(hearings, t) for t in (back + 10 * 10**9, back + 60 * 10**9)]
    print(f"LMS right {lms_right_after:.2f} s after the reconnect; worst while away {worst_away:.3f} ms; "
          f"10 s after: {[round(o / MS, 3) for o in after[0][1:]]} ms, 60 s after: {[round(o / MS, 3) for o in after[1][1:]]} ms")
    assert worst_away <= 1.0, "\n".join(m.log() for m in members)
    assert max(abs(o) for o in after[0][1:]) <= 2 * MS
    assert max(abs(o) for o in after[1][1:]) <= 1 * MS

    logs = [member.log() for member in members] + ([killed.log()] if killed else [])
    resyncs = [line for log in logs for line in log.splitlines() if RESYNC_LINE in line]
    assert len(resyncs) == 1, "\n".join(logs)
    jumps = real_lms.jumps_since(cut_wall)
    print(f"LMS's log after the cut: {jumps}")
    assert len(jumps) == 1, "\n".join(logs)
    # Every follower that was there when the forgeries came refused them (the master ignores
    # datagrams in its own name).
    for log in [m.log() for m in members[1:] if m is not restarted] + ([killed.log()] if killed else []):
        assert "group: refused a datagram" in log, log
    # The forged play point, 2 s (88,200 frames) away, moved nobody: no correction came near it (but
    # the restarted member's one skip to where the group had got to meanwhile).
    for log in logs:
        big = [int(count) for _, count in TIMED_CORRECTION.findall(log) if int(count) >= RATE // 2]
        assert len(big) <= (1 if "joining the group" in log else 0), log


@pytest.mark.timeout(300)
@pytest.mark.slow(seconds=150)
@pytest.mark.lms_versions("8.3.0")
def test_without_the_group_clock_the_members_drift_apart(real_lms, start_player, tmp_path):
    """The same rig with `--sync-port 0`: the members drift apart at their readers' 50 ppm while the server
    is away (3 ms a minute from the leader), so the test above can tell."""
    queue = Queue(real_lms.library.tracks("Long FLAC"))
    members = launch_members(real_lms, start_player, tmp_path, queue, PPMS, group_macs(len(PPMS)),
                             ("--sync-port", "0"))
    play_until_cached(real_lms, members, queue, seconds=20)
    cut = time.monotonic_ns()
    real_lms.stop()
    time.sleep(62)
    stop_readers(members)
    reference = as_frames(queue.reference)
    hearings = [Hearing(member, reference, whole=False) for member in members]
    # The drift is the slope through readings every 5 s (the median of the slopes between every two),
    # so that one reading taken while a reader was held up on the busy machine does not decide it.
    instants = [cut + seconds * 10**9 for seconds in range(1, 62, 5)]
    rows = [reading(hearings, instant) for instant in instants]
    drift = []
    for member in (1, 2):
        slopes = [(rows[j][member] - rows[i][member]) / ((instants[j] - instants[i]) / 1e9)
                  for i in range(len(rows)) for j in range(i + 1, len(rows))]
        drift.append(statistics.median(slopes) * 60 / MS)
    print(f"drift from the leader over 60 s: {[round(d, 3) for d in drift]} ms; readings (ms): "
          f"{[[round(v / MS, 3) for v in row[1:]] for row in rows]}")
    for member in members:
        print(f"{member.name}: reader waits (s, length): {underruns(member, RATE * 4, longer_than=0.005)}")
    # +50 ppm gains 3 ms a minute on the leader, -50 ppm loses as much.
    assert 2.0 <= drift[0] <= 4.0 and -4.0 <= drift[1] <= -2.0
