"""Offline handoff and resync on the real LMS 7.9.1: real restarts, kills and network partitions.

Every test captures `-o -` at real time and compares the whole capture with the reference decode of
the whole queue (0 missing, 0 repeated samples, nothing inserted), and reads LMS's own status over
JSON-RPC to check that, within 2 s of the player's reconnect, LMS shows the track being heard at a
time within 250 ms of the truth.
"""

from __future__ import annotations

import re
import struct
import time
from dataclasses import dataclass, field

import pytest
from media import Capture
from real_lms import LMSError, UnknownPlayer
from test_real_lms import assert_exact_but_for_fades, first_difference

pytestmark = pytest.mark.real_lms

MAC = "02:11:22:33:44:91"


@dataclass
class Queue:
    """Tracks in queue order, their reference decodes as the player writes them, and the rate."""

    tracks: list
    bytes_per_second: int
    references: list[bytes] = field(default_factory=list)

    def __post_init__(self):
        self.references = [track.reference() for track in self.tracks]

    @property
    def reference(self) -> bytes:
        return b"".join(self.references)

    def position(self, captured: int) -> tuple[int, float]:
        """Queue index and seconds into it of the byte `captured` of the whole queue."""
        for index, reference in enumerate(self.references):
            if captured < len(reference) or index == len(self.references) - 1:
                return index, captured / self.bytes_per_second
            captured -= len(reference)
        raise AssertionError("unreachable")


def launch(real_lms, start_player, tmp_path, queue: Queue, *extra: str, name: str = "player"):
    player = start_player(
        "-s", real_lms.addr, "-m", MAC, "-o", "-", "-a", "16", "-n", "offline-test",
        "--cache-dir", str(tmp_path / "cache"), "-d", "cache=debug", "-d", "lms=info",
        "--lms-port", str(real_lms.http_port), *extra, name=name, capture=True)
    capture = Capture(player.process.stdout, bytes_per_second=queue.bytes_per_second)
    try:
        real_lms.wait_player(MAC, timeout=20)
    except LMSError as error:
        pytest.fail(f"{error}\n{player.log()}")
    real_lms.set_volume(MAC, 100)  # bit-exact samples
    return player, capture


def cached_count(tmp_path) -> int:
    import json

    try:
        return len(json.loads((tmp_path / "cache" / "index.json").read_text())["entries"])
    except (OSError, ValueError, KeyError):
        return 0


def play_until(real_lms, player, capture, queue: Queue, tmp_path, seconds: float, cached: int = 3):
    """Loads and plays the queue; returns once `seconds` of it were heard and `cached` tracks are cached."""
    real_lms.load_tracks(MAC, queue.tracks)
    real_lms.play(MAC, 0)
    deadline = time.monotonic() + seconds + 30
    while time.monotonic() < deadline:
        if len(capture.bytes()) >= seconds * queue.bytes_per_second and cached_count(tmp_path) >= cached:
            return
        time.sleep(0.05)
    pytest.fail(f"did not play {seconds} s with {cached} tracks cached\n{player.log()}")


@dataclass
class Resync:
    reconnected_after: float  # seconds from the server's return to the player's reconnect
    matched_after: float  # seconds from the reconnect until LMS showed the heard track and time
    index: int
    time_error: float


def wait_for_resync(real_lms, player, capture, queue: Queue, back: float, timeout: float = 30) -> Resync:
    """From `back` (the server or network returned): waits for the player's reconnect, then until LMS's
    status shows the heard track at the heard time (±250 ms); returns when each happened."""
    deadline = back + timeout
    while not real_lms.connected(MAC):
        if time.monotonic() > deadline:
            pytest.fail(f"the player did not reconnect within {timeout} s\n{player.log()}")
        time.sleep(0.05)
    reconnected = time.monotonic()
    last = None
    while time.monotonic() < reconnected + 10:
        try:
            status = real_lms.status(MAC)
        except (UnknownPlayer, OSError):
            time.sleep(0.05)
            continue
        index, seconds = queue.position(len(capture.bytes()))
        server_index = status.get("playlist_cur_index")
        server_time = float(status.get("time") or 0)
        last = (server_index, server_time, index, seconds, status.get("mode"))
        if server_index is not None and int(server_index) == index and abs(server_time - seconds) <= 0.25:
            return Resync(reconnected - back, time.monotonic() - reconnected, index, server_time - seconds)
        time.sleep(0.1)
    pytest.fail(f"LMS never showed the heard position (index, time, heard index, heard s, mode): {last}\n"
                f"{player.log()}")


def discontinuity(got: bytes, reference: bytes, at: int, frame: int = 4) -> str:
    """What happened at the first difference: the captured audio that follows, found in the
    reference, says how many frames were lost (+) or repeated (-) there."""
    probe = got[at:at + 256]
    if len(probe) < 256:
        return "the capture ends there"
    window = 5 * 44100 * frame
    start = max(0, at - window)
    found = reference.find(probe, start, at + window)
    if found < 0:
        return "what follows is not in the reference nearby (inserted or damaged audio)"
    return f"{(found - at) // frame:+d} frames (+ lost, - repeated)"


def compare_whole_queue(player, capture, queue: Queue, timeout: float, fades: list[int] | None = None) -> None:
    """The whole capture against the whole reference, to the last frame; `fades`: capture offsets of
    pauses and resumes asked of LMS, whose volume fades change the samples there (not their number)."""
    reference = queue.reference
    capture.wait_for_length(len(reference), timeout=timeout)
    time.sleep(1.0)  # anything after the last frame would show now
    got = capture.bytes()
    mismatch = first_difference(got, reference)
    print(f"captured {len(got)} bytes, reference {len(reference)} "
          f"({len(reference) / queue.bytes_per_second:.2f} s), first difference at byte {mismatch}")
    if fades:
        assert_exact_but_for_fades(got, reference, fades, queue.bytes_per_second)
        return
    if mismatch is not None:
        from pathlib import Path

        Path("/tmp/slimplay-last-capture.raw").write_bytes(got)
        Path("/tmp/slimplay-last-reference.raw").write_bytes(reference)
        print(f"at {mismatch / queue.bytes_per_second:.3f} s: {discontinuity(got, reference, mismatch)}")
    assert len(got) == len(reference), f"{len(got) - len(reference):+d} bytes\n{player.log()}"
    assert mismatch is None, f"samples differ from the reference from byte {mismatch}\n{player.log()}"


def assert_server_controls_work(real_lms, player, capture, queue: Queue) -> int:
    """Pause and play from LMS stop and restart the output; returns the capture offset of the pause."""
    bps = queue.bytes_per_second
    real_lms.pause(MAC)
    time.sleep(0.7)
    paused_at = len(capture.bytes())
    time.sleep(1.0)
    assert len(capture.bytes()) - paused_at <= bps // 10, f"output runs while paused\n{player.log()}"
    real_lms.unpause(MAC)
    time.sleep(1.0)
    assert len(capture.bytes()) - paused_at >= bps // 2, f"output did not resume\n{player.log()}"
    return paused_at


def log_seconds(player, pattern: str) -> list[float]:
    """Times (s of day) of the log lines that match."""
    times = []
    for line in player.log().splitlines():
        if re.search(pattern, line):
            h, m, s = line[1:13].split(":")
            times.append(int(h) * 3600 + int(m) * 60 + float(s))
    return times


def flac_queue(real_lms, count: int = 8) -> Queue:
    return Queue(real_lms.library.tracks("FLAC 16-44")[:count], 44100 * 4)


def test_lms_stopped_for_20_s_the_cache_plays_on_and_lms_is_resynced(real_lms, start_player, tmp_path):
    queue = flac_queue(real_lms)
    player, capture = launch(real_lms, start_player, tmp_path, queue)
    play_until(real_lms, player, capture, queue, tmp_path, seconds=9.0)
    real_lms.stop()
    time.sleep(20)
    real_lms.start()
    back = time.monotonic()
    resync = wait_for_resync(real_lms, player, capture, queue, back)
    print(f"reconnected {resync.reconnected_after:.2f} s after LMS was back; LMS showed track {resync.index + 1} "
          f"{resync.matched_after:.2f} s later, time off by {resync.time_error * 1000:+.0f} ms")
    assert resync.matched_after <= 2.0
    assert "resync: asking the server to play track" in player.log()
    assert "edited" not in player.log(), "a restored queue is the same queue"
    paused_at = assert_server_controls_work(real_lms, player, capture, queue)
    # The pause above shifts nothing: the whole queue, sample for sample, but for LMS's fades.
    compare_whole_queue(player, capture, queue, timeout=90, fades=[paused_at])
    assert "resync: the server's stream took over" in player.log(), player.log()
    assert real_lms.status(MAC).get("mode") == "stop"  # LMS followed the queue to its end


def test_lms_killed_for_30_s_the_cache_plays_on_and_lms_is_resynced(real_lms, start_player, tmp_path):
    queue = flac_queue(real_lms)
    player, capture = launch(real_lms, start_player, tmp_path, queue)
    play_until(real_lms, player, capture, queue, tmp_path, seconds=8.0)
    real_lms.kill()
    time.sleep(30)
    real_lms.start()
    resync = wait_for_resync(real_lms, player, capture, queue, time.monotonic())
    print(f"LMS showed track {resync.index + 1} {resync.matched_after:.2f} s after the reconnect, "
          f"time off by {resync.time_error * 1000:+.0f} ms")
    assert resync.matched_after <= 2.0
    compare_whole_queue(player, capture, queue, timeout=90)


def test_network_partition_of_20_s_is_noticed_before_the_buffer_runs_out(real_lms, start_player, tmp_path):
    queue = flac_queue(real_lms)
    player, capture = launch(real_lms, start_player, tmp_path, queue)
    play_until(real_lms, player, capture, queue, tmp_path, seconds=9.0)
    with real_lms.partition():
        cut = time.monotonic()
        cut_at = len(capture.bytes())
        time.sleep(20)
    back = time.monotonic()
    handoffs = log_seconds(player, r"server gone|judged gone|no message from the server")
    assert handoffs, f"the partition was never noticed\n{player.log()}"
    resync = wait_for_resync(real_lms, player, capture, queue, back)
    print(f"reconnected {resync.reconnected_after:.2f} s after the network was back; LMS showed track "
          f"{resync.index + 1} {resync.matched_after:.2f} s later, time off by {resync.time_error * 1000:+.0f} ms")
    assert resync.matched_after <= 2.0
    compare_whole_queue(player, capture, queue, timeout=90)
    del cut, cut_at


def test_paused_before_a_restart_stays_paused_and_plays_on_when_asked(real_lms, start_player, tmp_path):
    queue = flac_queue(real_lms, 3)
    player, capture = launch(real_lms, start_player, tmp_path, queue)
    play_until(real_lms, player, capture, queue, tmp_path, seconds=4.0)
    real_lms.pause(MAC)
    time.sleep(1.0)
    paused_at = len(capture.bytes())
    real_lms.stop()
    time.sleep(20)
    real_lms.start()
    assert real_lms.wait_for(lambda: real_lms.connected(MAC), timeout=20), player.log()
    time.sleep(3.0)
    status = real_lms.status(MAC)
    index, seconds = queue.position(len(capture.bytes()))
    print(f"after the reconnect: LMS {status.get('mode')} at track {status.get('playlist_cur_index')} "
          f"{status.get('time')} s; heard track {index} {seconds:.3f} s")
    assert len(capture.bytes()) - paused_at <= queue.bytes_per_second // 10, "output ran while paused"
    assert status.get("mode") == "pause", player.log()
    assert int(status.get("playlist_cur_index")) == index
    assert abs(float(status.get("time")) - seconds) <= 0.25
    real_lms.unpause(MAC)
    compare_whole_queue(player, capture, queue, timeout=60, fades=[paused_at])


def test_queue_edited_during_a_partition_the_server_order_wins(real_lms, start_player, tmp_path):
    queue = flac_queue(real_lms, 5)
    player, capture = launch(real_lms, start_player, tmp_path, queue)
    play_until(real_lms, player, capture, queue, tmp_path, seconds=3.0, cached=5)
    with real_lms.partition():
        assert real_lms.wait_for(lambda: "server gone" in player.log() or "judged gone" in player.log(), 20)
        # The listener's phone removes the last track while the player's network is down.
        index, _ = queue.position(len(capture.bytes()))
        assert index < 3, "the outage must end before the last tracks play"
        real_lms.rpc(MAC, ["playlist", "delete", 4])
    assert real_lms.wait_for(lambda: "queue was edited on the server" in player.log(), timeout=30), player.log()
    # What was heard plays on, and the server's queue from then on: the fifth track is gone.
    edited = Queue(queue.tracks[:4], queue.bytes_per_second)
    compare_whole_queue(player, capture, edited, timeout=60)
    assert real_lms.wait_for(lambda: real_lms.status(MAC).get("mode") == "stop", timeout=5)


def test_volume_set_in_lms_after_a_resync_reaches_the_samples(real_lms, start_player, tmp_path):
    queue = flac_queue(real_lms, 3)
    player, capture = launch(real_lms, start_player, tmp_path, queue)
    play_until(real_lms, player, capture, queue, tmp_path, seconds=3.0)
    real_lms.restart()
    resync = wait_for_resync(real_lms, player, capture, queue, time.monotonic())
    assert resync.matched_after <= 2.0
    real_lms.set_volume(MAC, 30)
    time.sleep(1.5)
    tail = capture.bytes()[-queue.bytes_per_second // 4 // 4 * 4:]
    peak = max(abs(v) for v in struct.unpack(f"<{len(tail) // 2}h", tail))
    print(f"peak after volume 30: {peak}")
    assert 0 < peak < 8000, player.log()
    # Skip: LMS's next track starts, and its audio comes out.
    current = real_lms.current_index(MAC)
    real_lms.rpc(MAC, ["playlist", "index", "+1"])
    assert real_lms.wait_for(lambda: real_lms.current_index(MAC) == current + 1, timeout=5), player.log()
    before = len(capture.bytes())
    time.sleep(1.0)
    assert len(capture.bytes()) - before >= queue.bytes_per_second // 2, player.log()
