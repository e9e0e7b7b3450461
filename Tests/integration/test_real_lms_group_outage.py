"""A sync group through an outage, on the real LMS: two slimplay players in one LMS sync group play an
album into `-o -` readers paced like sound cards (group_rig.py); 3 s into the second track the server
goes away for 20 s (stopped, or cut off by a partition), then returns.

What a listener in either room must get: the whole album, sample for sample, with no silence; one
resync for the group (LMS is jumped once, by one member); LMS showing the heard track and time; and
both members back on the server's stream. The resync alone, to the last frame: the members' own
clock (`--sync-port 0` here) and LMS's sync check are off; test_real_lms_group_clock.py has them on.
"""

from __future__ import annotations

import re
import time

import pytest
from harness.group_rig import captured, group_macs, launch_members, stop_readers, underruns, wait_for_group_resync
from test_real_lms_group_clock import load_group_queue
from test_real_lms_offline import Queue, cached_count, compare_whole_queue

pytestmark = [pytest.mark.real_lms, pytest.mark.slow(seconds=90), pytest.mark.lms_versions("8.3.0", "7.9.1"),
              pytest.mark.usefixtures("lms_logs_commands")]

RESYNC_LINE = "resync: asking the server to play track"


def play_until(real_lms, members, queue: Queue, seconds: float, cached: int = 3) -> None:  # noqa: ANN001
    load_group_queue(real_lms, members, queue.tracks)
    real_lms.play(members[0].mac, 0)
    deadline = time.monotonic() + seconds + 30
    while time.monotonic() < deadline:
        if all(queue.seconds_for(captured(m)) >= seconds and cached_count(m.folder) >= cached for m in members):
            return
        time.sleep(0.05)
    pytest.fail(f"the group did not play {seconds} s with {cached} tracks cached\n"
                + "\n".join(m.log() for m in members))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("outage", ["stopped", "partition"])
def test_a_group_plays_through_an_outage_and_comes_back_as_one(real_lms, start_player, tmp_path, outage):
    queue = Queue(real_lms.library.tracks("FLAC 16-44")[:6])
    members = launch_members(real_lms, start_player, tmp_path, queue, [0.0, 0.0], group_macs(2),
                             ("--sync-port", "0"), lms_sync=False)
    second_track = queue.seconds_for(len(queue.references[0]))
    play_until(real_lms, members, queue, seconds=second_track + 3)
    cut = time.monotonic()
    cut_wall = time.time()
    if outage == "stopped":
        real_lms.stop()
        time.sleep(20)
        real_lms.start()
    else:
        with real_lms.partition():
            time.sleep(20)
    _, matched_after = wait_for_group_resync(real_lms, members, queue)
    for number, member in enumerate(members):
        try:
            compare_whole_queue(member.player, member.capture, queue, timeout=90)
        except AssertionError as failure:
            others = "\n".join(m.log() for m in members if m is not member)
            raise AssertionError(f"member {number}: {failure}\nthe other member:\n{others}") from None
    stop_readers(members)
    for number, member in enumerate(members):
        # every wait of the reader for audio (after the album's end it is over)
        gaps = [(round((at / 1e9) - cut, 1), round(seconds, 2)) for at, seconds in underruns(member, queue.rates[0])]
        print(f"member {number}: gaps (s after the cut, length): {gaps}")
        assert not gaps, f"member {number} went silent\n{member.log()}"
    resyncs = [line for member in members for line in member.log().splitlines() if RESYNC_LINE in line]
    print(f"LMS showed the heard position {matched_after:.2f} s after the reconnect; resyncs: {resyncs}")
    assert len(resyncs) == 1, "\n".join(m.log() for m in members)
    jumps = real_lms.jumps_since(cut_wall)
    print(f"LMS's log after the cut: {jumps}")
    assert len(jumps) == 1, "\n".join(m.log() for m in members)
    # The server's stream takes over at the next track, when there is one (a server slow to come back
    # may be resynced on the album's last track).
    heard = int(re.search(r"resync: asking the server to play track (\d+)", "\n".join(resyncs)).group(1))
    for member in members:
        assert heard == len(queue.tracks) or "the server's stream took over" in member.log(), member.log()
    assert real_lms.status(members[0].mac).get("mode") == "stop"  # LMS followed the queue to its end
