"""A sync group through an outage, on the real LMS: two slimplay players in one LMS sync group play an
album into `-o -` readers paced like sound cards; 3 s into the second track the server goes away for
20 s (stopped, or cut off by a partition), then returns.

What a listener in either room must get: the whole album, sample for sample, with no silence; one
resync for the group (LMS is jumped once, by one member); LMS showing the heard track and time; and
both members back on the server's stream.
"""

from __future__ import annotations

import contextlib
import time

import pytest
from group_rig import group_macs
from media import Capture
from real_lms import LMSError, UnknownPlayer
from test_real_lms_group_clock import load_group_queue
from test_real_lms_offline import Queue, cached_count, compare_whole_queue

pytestmark = [pytest.mark.real_lms, pytest.mark.slow(seconds=90), pytest.mark.lms_versions("8.3.0", "7.9.1")]

RESYNC_LINE = "resync: asking the server to play track"


class Member:
    def __init__(self, player, capture: Capture, mac: str, tmp_path):  # noqa: ANN001
        self.player, self.capture, self.mac, self.cache = player, capture, mac, tmp_path

    def log(self) -> str:
        return self.player.log()


def launch_group(real_lms, start_player, tmp_path, queue: Queue) -> list[Member]:
    """Two members; the first is LMS's sync master."""
    macs = group_macs(2)
    members = []
    for number, mac in enumerate(macs):
        with contextlib.suppress(LMSError, OSError):
            real_lms.rpc(mac, ["sync", "-"])
        with contextlib.suppress(LMSError, OSError):
            real_lms.rpc(mac, ["playlist", "clear"])
        folder = tmp_path / f"member-{number}"
        player = start_player(
            "-s", real_lms.addr, "-m", mac, "-o", "-", "-a", queue.sample_format, "-n", f"group-{number}",
            "--state-dir", str(folder / "state"), "--cache-dir", str(folder / "cache"),
            "--lms-port", str(real_lms.http_port), "-d", "stream=info", "-d", "lms=info",
            # The resync alone, to the last frame: the group's own clock (its corrections) is
            # test_real_lms_group_clock.py's.
            "--sync-port", "0",
            name=f"member-{number}", capture=True)
        members.append(Member(player, Capture(player.process.stdout, seconds_for=queue.seconds_for), mac, folder))
    for member in members:
        try:
            real_lms.wait_player(member.mac, timeout=20)
        except LMSError as error:
            pytest.fail(f"{error}\n{member.log()}")
        real_lms.set_volume(member.mac, 100)
        # LMS's own sync check would skip or pad the members against each other (it reads their
        # `-o -` readers' jitter as drift): what is checked here is the outage, to the last frame.
        real_lms.rpc(member.mac, ["playerpref", "maintainSync", "0"])
    # `<player> sync <other>` brings the other into the player's group; its first stays master.
    real_lms.rpc(macs[0], ["sync", macs[1]])
    groups = real_lms.rpc(macs[0], ["syncgroups", "?"]).get("syncgroups_loop", [])
    assert groups and set(macs) <= set(groups[0]["sync_members"].split(",")), groups
    return members


def play_until(real_lms, members: list[Member], queue: Queue, seconds: float, cached: int = 3) -> None:
    load_group_queue(real_lms, members, queue.tracks)
    real_lms.play(members[0].mac, 0)
    deadline = time.monotonic() + seconds + 30
    while time.monotonic() < deadline:
        if all(queue.seconds_for(len(m.capture.bytes())) >= seconds and cached_count(m.cache) >= cached
               for m in members):
            return
        time.sleep(0.05)
    pytest.fail(f"the group did not play {seconds} s with {cached} tracks cached\n"
                + "\n".join(m.log() for m in members))


def wait_for_group_resync(real_lms, members: list[Member], queue: Queue, back: float) -> float:
    """Seconds from the reconnect of both members until LMS showed the heard track at the heard time."""
    deadline = back + 30
    while not all(real_lms.connected(m.mac) for m in members):
        if time.monotonic() > deadline:
            pytest.fail("a member did not reconnect within 30 s\n" + "\n".join(m.log() for m in members))
        time.sleep(0.05)
    reconnected = time.monotonic()
    last = None
    while time.monotonic() < reconnected + 10:
        try:
            status = real_lms.status(members[0].mac)
        except (UnknownPlayer, OSError):
            time.sleep(0.05)
            continue
        index, seconds = queue.position(len(members[0].capture.bytes()))
        server_index, server_time = status.get("playlist_cur_index"), float(status.get("time") or 0)
        last = (server_index, server_time, index, seconds, status.get("mode"))
        if server_index is not None and int(server_index) == index and abs(server_time - seconds) <= 0.25:
            return time.monotonic() - reconnected
        time.sleep(0.1)
    pytest.fail(f"LMS never showed the heard position (index, time, heard index, heard s, mode): {last}\n"
                + "\n".join(m.log() for m in members))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("outage", ["stopped", "partition"])
def test_a_group_plays_through_an_outage_and_comes_back_as_one(real_lms, start_player, tmp_path, outage, request):
    if real_lms.version == "8.3.0" and outage == "partition":
        # Open: in about one run of three, the master's jump lands in the last second of a track
        # (LMS 8.3 moved the master to the other member during the partition); the group then plays
        # two more tracks from the server, and LMS, whose current entry stays one behind, never
        # streams the next: both members judge it gone and resync again, a track late.
        request.applymarker(pytest.mark.xfail(strict=False, reason="LMS 8.3 stalls a group after a resync at a track's end"))
    queue = Queue(real_lms.library.tracks("FLAC 16-44")[:6])
    members = launch_group(real_lms, start_player, tmp_path, queue)
    second_track = queue.seconds_for(len(queue.references[0]))
    play_until(real_lms, members, queue, seconds=second_track + 3)
    cut = time.monotonic()
    if outage == "stopped":
        real_lms.stop()
        time.sleep(20)
        real_lms.start()
    else:
        with real_lms.partition():
            time.sleep(20)
    back = time.monotonic()
    matched_after = wait_for_group_resync(real_lms, members, queue, back)
    for number, member in enumerate(members):
        compare_whole_queue(member.player, member.capture, queue, timeout=90)
        # every wait for audio before the album's end (after it, the reader waits for good)
        end = member.capture.started + queue.seconds_for(len(queue.reference)) - 0.5
        gaps = [(round(at - cut, 1), round(seconds, 2)) for at, seconds in member.capture.gaps(0, end, 0.05)]
        print(f"member {number}: gaps (s after the cut, length): {gaps}")
        assert not gaps, f"member {number} went silent\n{member.log()}"
    resyncs = [line for member in members for line in member.log().splitlines() if RESYNC_LINE in line]
    print(f"LMS showed the heard position {matched_after:.2f} s after the reconnect; resyncs: {resyncs}")
    assert len(resyncs) == 1, "\n".join(m.log() for m in members)
    for member in members:
        assert "the server's stream took over" in member.log(), member.log()
    assert real_lms.status(members[0].mac).get("mode") == "stop"  # LMS followed the queue to its end
