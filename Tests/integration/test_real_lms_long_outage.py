"""A day away from the server, in a few minutes, on the real LMS (8.3.0 and 7.9.1): the player restarted twice while the
server is stopped, the folder of its pins full to the last byte. The library stays playable, the listener's
queue survives the restarts as the listener's and goes on the server at its return, and the pins, their
files and their list are as they were. Side by side with the others: no browser, and every check waits
for the server rather than timing it."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest
from harness.lms import free_port
from harness.media import Capture
from harness.player import state_folder
from test_real_lms_library import api_post, assert_the_whole_sequence
from test_real_lms_offline import Queue
from test_real_lms_pins import MAC, cached_files, ctl, pins, start, wait_until


@pytest.mark.slow(seconds=120)
@pytest.mark.lms_versions("8.3.0", "7.9.1")
@pytest.mark.timeout(360)
def test_a_long_outage_with_two_restarts_and_a_full_pin_folder_keeps_the_library_the_pins_and_the_queue(
        real_lms, start_player, tmp_path):
    """A day away from the server in a few minutes: the album and a track are pinned, the cache's folder
    (a tmpfs of its own) is filled to the last byte, the server stops. The player is restarted and the
    listener plays three tracks of the album and queues the track from the library; an unpin is refused
    (the list cannot be saved) and changes nothing. The player is restarted again mid-track: it resumes
    the listener's queue where it was heard, as the listener's, and when the server returns that queue
    goes on it. What the player wrote before the restart is the sequence's reference decode from its
    start, what it wrote after it the reference from the saved position to the last frame (the restart
    repeats at most 0.25 s and loses nothing); the pins, the files and the list of pins are as they were."""
    if os.geteuid() != 0:
        pytest.skip("mounting the cache's own filesystem needs root")
    library = real_lms.library
    album = library.tracks("FLAC 16-44")
    queued = library.tracks("MP3 CBR")[1]
    cache = tmp_path / "cache"
    cache.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(cache)], check=True)
    try:
        port = free_port()
        player = start(real_lms, start_player, tmp_path, port)
        real_lms.set_volume(MAC, 100)  # bit-exact samples once the server is back and sets the volume
        album_id = real_lms.rpc("", ["titles", 0, 1, f"track_id:{real_lms.track_id(album[0].path)}", "tags:e"])
        album_id = int(album_id["titles_loop"][0]["album_id"])
        queued_id = real_lms.track_id(queued.path)
        assert ctl(port, "pin", "album", str(album_id)).returncode == 0
        assert ctl(port, "pin", "track", str(queued_id)).returncode == 0
        wait_until(lambda: all(pin["complete"] for pin in pins(port)), 60, "the pins downloaded")
        player.stop()
        pinned_list = (cache / "pins.json").read_bytes()
        pinned_files = cached_files(cache)
        assert len(pinned_files) == len(album) + 1
        # The folder is full: not one more block.
        subprocess.run(["dd", "if=/dev/zero", f"of={cache / 'filler'}", "bs=64k"], capture_output=True)
        assert shutil.disk_usage(cache).free < 4096
        real_lms.stop()

        # First restart, the server away.
        sequence = Queue([*album[:3], queued])
        player = start_player("-s", real_lms.addr, "-m", MAC, "-o", "-", "-a", "16", "-n", "outage-test", "--control",
                              f"127.0.0.1:{port}", "--cache-dir", str(cache), "-d", "cache=info",
                              name="away", capture=True)
        first = Capture(player.process.stdout, seconds_for=sequence.seconds_for)

        def album_keys() -> list[str] | None:
            with contextlib.suppress(OSError, ValueError, KeyError):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/library?album=a{album_id}",
                                            timeout=5) as reply:
                    return [track["key"] for track in json.loads(reply.read())["tracks"]]
            return None

        keys = wait_until(album_keys, 10, "the library lists the album")
        assert len(keys) == len(album)
        assert api_post(port, "/api/queue/play", {"tracks": keys[:3]}) == 200
        found = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/library?q=MP3%20CBR",
                                                  timeout=5).read())
        queued_key = next(track["key"] for track in found["tracks"] if track["id"] == queued_id)
        assert api_post(port, "/api/queue/add", {"tracks": [queued_key]}) == 200
        # Unpinning must save the list first: on the full disk it cannot, and nothing changes.
        assert api_post(port, "/api/unpin", {"kind": "track", "id": queued_id}) != 200
        assert player.wait_for_log("No space left on device: the pins are left as they were", 5), player.log()
        assert [(pin["kind"], pin["complete"]) for pin in pins(port)] == [("album", True), ("track", True)]

        # Second restart, 3 s into the second track.
        into_second = len(sequence.references[0]) + 3 * sequence.bytes_per_second
        first.wait_for_length(into_second, timeout=sequence.seconds_for(into_second) + 15)
        player.stop()
        first.thread.join(5)
        before = first.bytes()
        assert before == sequence.reference[:len(before)], "the first run's audio differs from the reference"
        saved = json.loads((state_folder(tmp_path / "state", MAC) / "playback.json").read_text())
        assert "listeners_queue" in saved, saved
        resumed_at = sum(len(ref) for ref in sequence.references[:saved["index"]]) + \
            round(saved["position"] * sequence.rates[saved["index"]] / 4) * 4
        repeated = len(before) - resumed_at
        print(f"heard {len(before)} bytes, resumed at {resumed_at}: {repeated / sequence.bytes_per_second:.3f} s again")
        assert 0 <= repeated <= 0.25 * sequence.bytes_per_second, (len(before), saved)

        player = start_player("-s", real_lms.addr, "-m", MAC, "-o", "-", "-a", "16", "-n", "outage-test", "--control",
                              f"127.0.0.1:{port}", "--cache-dir", str(cache), "-d", "cache=info",
                              name="away-again", capture=True)
        # What is left to hear from the saved position (paced at the album's rate: only timeouts use it).
        rest = SimpleNamespace(reference=sequence.reference[resumed_at:],
                               seconds_for=lambda captured: captured / sequence.bytes_per_second)
        second = Capture(player.process.stdout, seconds_for=rest.seconds_for)
        assert player.wait_for_log("of the listener's queue", 15), player.log()
        second.wait_for_length(4 * sequence.bytes_per_second, timeout=20)

        # The server returns: the listener's queue goes on it, and LMS shows the heard track.
        real_lms.start()
        real_lms.wait_player(MAC, timeout=30)
        assert player.wait_for_log("putting the listener's queue (4 tracks) on the server", 30), player.log()
        deadline = time.monotonic() + 15
        while True:
            status = real_lms.status(MAC)
            index, seconds = sequence.position(resumed_at + len(second.bytes()))
            shown = (int(status.get("playlist_cur_index") or -1), float(status.get("time") or 0))
            if status.get("mode") == "play" and shown[0] == index and abs(shown[1] - seconds) <= 0.25:
                break
            assert time.monotonic() < deadline, f"LMS shows {shown}, heard {index} {seconds:.3f} s\n{player.log()}"
            time.sleep(0.1)
        assert int(status.get("playlist_tracks")) == len(sequence.tracks)
        assert_the_whole_sequence(player, second, rest)

        assert (cache / "pins.json").read_bytes() == pinned_list
        assert cached_files(cache) == pinned_files
        assert all(path and data == Path(path).read_bytes() for path, data in pinned_files.items())
    finally:
        subprocess.run(["umount", "-l", str(cache)], check=False)
