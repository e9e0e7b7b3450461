"""Damaged audio mid-stream on the real LMS, slimplay beside squeezelite (the reference).

Each album (real_lms.ALBUMS) is an intact track, a damaged one (bytes flipped in two places and 8 KiB of
noise inserted, mid-file), an undecodable one (headers intact, every audio byte noise) and an intact one.
Both players play it whole through LMS, `-o - -a 16` read at real time. squeezelite is Debian's
/usr/bin/squeezelite (libFLAC for FLAC; libmpg123 for MP3 with `-e mad`, the decoder slimplay uses). It
writes silence while it has nothing to play; slimplay writes only audio, so runs of silence are taken out
of both captures before they are compared (the tracks are a tone plus white noise, never silent).
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from dataclasses import dataclass

import pytest
from harness.media import Capture
from harness.real_lms import LMSError

pytestmark = pytest.mark.real_lms

SQUEEZELITE = "/usr/bin/squeezelite"
MACS = {"slimplay": "02:11:22:33:44:92", "squeezelite": "02:11:22:33:44:93"}
FRAME = 4
BYTES_PER_SECOND = 44100 * FRAME
SILENT_RUN = 64  # frames: a longer run of zero frames is a player's silence, not the tone


@dataclass
class Played:
    pcm: bytes
    trace: list[tuple[int | None, str | None]]  # LMS's (index, mode), each change in order
    alive: bool
    log: str


def play_album(real_lms, tracks, player: str, launch) -> Played:  # noqa: ANN001
    mac = MACS[player]
    with contextlib.suppress(LMSError, OSError):
        real_lms.rpc(mac, ["playlist", "clear"])
    process, log = launch(mac)
    capture = Capture(process.stdout, bytes_per_second=BYTES_PER_SECOND)
    real_lms.wait_player(mac, timeout=20)
    real_lms.set_volume(mac, 100)
    real_lms.load_tracks(mac, [track.path for track in tracks])
    real_lms.play(mac, 0)
    trace: list[tuple[int | None, str | None]] = []
    deadline = time.monotonic() + sum(track.seconds for track in tracks) + 40
    while time.monotonic() < deadline and process.poll() is None:
        status = real_lms.status(mac)
        index = status.get("playlist_cur_index")
        seen = (None if index is None else int(index), status.get("mode"))
        if not trace or trace[-1] != seen:
            trace.append(seen)
        if seen[1] == "stop" and len(trace) > 1:
            break
        time.sleep(0.25)
    time.sleep(1.5)  # anything still coming shows now
    alive = process.poll() is None
    with contextlib.suppress(LMSError, OSError):
        real_lms.rpc(mac, ["playlist", "clear"])
    return Played(capture.bytes(), trace, alive, log())


def without_silence(pcm: bytes) -> bytes:
    """The capture with every run of SILENT_RUN or more zero frames taken out."""
    zero = bytes(FRAME)
    kept = bytearray()
    run_start = None
    for offset in range(0, len(pcm) - len(pcm) % FRAME, FRAME):
        if pcm[offset:offset + FRAME] == zero:
            if run_start is None:
                run_start = offset
            continue
        if run_start is not None:
            if (offset - run_start) // FRAME < SILENT_RUN:
                kept += pcm[run_start:offset]
            run_start = None
        kept += pcm[offset:offset + FRAME]
    if run_start is not None and (len(pcm) - run_start) // FRAME < SILENT_RUN:
        kept += pcm[run_start:]
    return bytes(kept)


@pytest.fixture
def players(real_lms, start_player, tmp_path):
    """album -> {player: Played}, each album played once by each player."""
    squeezelites: list[subprocess.Popen] = []

    def launch_slimplay(mac: str):  # noqa: ANN202
        player = start_player(
            "-s", real_lms.addr, "-m", mac, "-o", "-", "-a", "16", "-n", "damaged-slimplay",
            "--cache-dir", str(tmp_path / "cache"), "--lms-port", str(real_lms.http_port), "-d", "stream=info",
            capture=True)
        return player.process, player.log

    def launch_squeezelite(mac: str):  # noqa: ANN202
        log_path = tmp_path / f"squeezelite-{len(squeezelites)}.log"
        log = open(log_path, "ab")  # noqa: SIM115
        process = subprocess.Popen(
            [SQUEEZELITE, "-s", real_lms.addr, "-m", mac, "-n", "damaged-squeezelite", "-o", "-", "-a", "16",
             "-e", "mad", "-d", "decode=info"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log)
        squeezelites.append(process)
        return process, lambda: log_path.read_text(errors="replace")

    played: dict[str, dict[str, Played]] = {}

    def play(album: str) -> dict[str, Played]:
        if album not in played:
            tracks = real_lms.library.tracks(album)
            played[album] = {
                "slimplay": play_album(real_lms, tracks, "slimplay", launch_slimplay),
                "squeezelite": play_album(real_lms, tracks, "squeezelite", launch_squeezelite),
            }
        return played[album]

    yield play
    for process in squeezelites:
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(5)


@pytest.mark.parametrize("album", ["Damaged FLAC", "Damaged MP3"])
def test_damaged_tracks_play_as_squeezelite_plays_them_and_lms_moves_on(real_lms, players, album):
    tracks = real_lms.library.tracks(album)
    runs = players(album)
    for name, run in runs.items():
        print(f"{name}: {len(run.pcm)} bytes ({len(run.pcm) / BYTES_PER_SECOND:.2f} s), "
              f"{len(without_silence(run.pcm))} without silence; LMS: {run.trace}")
    slimplay, squeezelite = runs["slimplay"], runs["squeezelite"]
    assert slimplay.alive, slimplay.log
    # Each damaged track gets a log line: what was skipped, or why decoding stopped.
    damage_lines = [line for line in slimplay.log.splitlines()
                    if "damaged stretches skipped" in line or "cannot decode" in line]
    print("\n".join(damage_lines))
    assert len(damage_lines) >= 2, slimplay.log
    # LMS went through the whole queue with each player and stopped after the last track.
    for name, run in runs.items():
        indexes = [index for index, _ in run.trace if index is not None]
        assert indexes == sorted(indexes) and indexes[-1] == len(tracks) - 1, f"{name}: {run.trace}"
        assert run.trace[-1][1] == "stop", f"{name}: {run.trace}"
    # The intact tracks around the damaged ones come out whole, first and last frame included.
    first, last = tracks[0].reference(), tracks[-1].reference()
    assert slimplay.pcm.startswith(first), "the intact first track differs"
    assert slimplay.pcm.endswith(last), "the intact last track differs"
    # And what the damaged tracks gave is what squeezelite gave for them. Only the damaged tracks are
    # compared: the intact ones are held to the file above, and squeezelite itself does not always give
    # the track after an undecodable one whole (once, under load, its first frame was missing).
    ours, theirs = without_silence(slimplay.pcm), without_silence(squeezelite.pcm)
    damaged = ours[len(without_silence(first)):len(ours) - len(without_silence(last))]
    expected = theirs[:len(without_silence(first)) + len(damaged)]
    compared = without_silence(first) + damaged
    mismatch = next((i for i in range(0, min(len(compared), len(expected)), FRAME)
                     if compared[i:i + FRAME] != expected[i:i + FRAME]), None)
    tail = theirs[len(expected):]
    print(f"damaged tracks: {len(damaged) // FRAME} frames; first difference from squeezelite at frame "
          f"{None if mismatch is None else mismatch // FRAME}; squeezelite's last track "
          f"{'is the file' if tail == without_silence(last) else f'differs ({len(tail) // FRAME} frames)'}")
    assert len(expected) == len(compared) and mismatch is None
