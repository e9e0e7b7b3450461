"""Offline handoff and resync: the real binary against the LMS-like layer, audio from `-o -`."""

import json
import time

import pytest

from harness.media import Capture
from harness.player import cache_entries, state_folder

MAC = "02:11:22:33:44:70"
BYTES_PER_SECOND = 44100 * 4  # `-a 16`: 16-bit stereo


def queue_media(media, prefix, seconds=(6, 4, 4)):
    tones = ["440", "660", "880", "550"]
    files = []
    for number, length in enumerate(seconds):
        wav = media.tone(f"{prefix}-{number}.wav", seconds=length, freq=tones[number % len(tones)])
        files.append(media.flac(wav))
    return files


def start(lms, start_player, tmp_path, *extra):
    player = start_player(
        "-s", f"127.0.0.1:{lms.port}", "--lms-port", str(lms.http_port), "-m", MAC, "-o", "-", "-a", "16",
        "--cache-dir", str(tmp_path / "cache"), "-d", "cache=debug", "-d", "lms=info", *extra, capture=True)
    capture = Capture(player.process.stdout, bytes_per_second=BYTES_PER_SECOND)
    assert lms.wait_for(lambda: lms.client(MAC), timeout=5), player.log()
    return player, capture


def cached_count(tmp_path):
    try:
        return len(json.loads((tmp_path / "cache" / "index.json").read_text())["entries"])
    except (OSError, ValueError, KeyError):
        return 0


def wait_for_log(player, text, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in player.log():
            return True
        time.sleep(0.05)
    return False


def play_until_cached(lms, start_player, tmp_path, files):
    """Plays the queue with the stream arriving a little faster than real time (so it is still
    arriving); returns a second after every track is cached and the first has started."""
    lms.load(MAC, files)
    player, capture = start(lms, start_player, tmp_path)
    lms.stream_rate = 120_000
    lms.play(MAC, 0)
    assert lms.wait_for(lambda: cached_count(tmp_path) == len(files), timeout=20), player.log()
    assert lms.wait_for(lambda: "STMs" in lms.stat_events(), timeout=10), player.log()
    time.sleep(1.0)
    return player, capture


def play_then_kill_the_server(lms, start_player, tmp_path, files):
    """`play_until_cached`, then stops the server; returns once the player has handed off to the
    cache."""
    player, capture = play_until_cached(lms, start_player, tmp_path, files)
    lms.stop()
    assert wait_for_log(player, "continues from the cache", timeout=10), player.log()
    return player, capture


def assert_pauses_and_resumes(capture, pause, resume, settle=0.5):
    """`pause()` stops the output (within `settle`), `resume()` starts it again."""
    pause()
    time.sleep(settle)
    paused_at = len(capture.bytes())
    time.sleep(1.0)
    assert len(capture.bytes()) - paused_at <= BYTES_PER_SECOND // 10, "output keeps running while paused"
    resume()
    time.sleep(1.0)
    assert len(capture.bytes()) - paused_at >= BYTES_PER_SECOND // 2, "output did not resume"


def compare_with_reference(media, files, capture, player, timeout):
    reference = b"".join(media.flac_reference(f) for f in files)
    got = capture.wait_for_length(len(reference), timeout=timeout)
    mismatch = next((i for i in range(0, min(len(got), len(reference)), 4) if got[i:i + 4] != reference[i:i + 4]), None)
    print(f"captured {len(got)} bytes, reference {len(reference)}, first difference at byte {mismatch}")
    assert len(got) == len(reference), player.log()
    assert got == reference, "samples differ from the reference decode of the queue"


def test_server_killed_mid_track_continues_from_the_cache_without_a_missing_sample(
    lms_factory, start_player, media, tmp_path
):
    lms = lms_factory(volume=100)
    files = queue_media(media, "handoff")
    player, capture = play_then_kill_the_server(lms, start_player, tmp_path, files)
    compare_with_reference(media, files, capture, player, timeout=30)


def test_a_track_cut_short_as_the_server_sends_the_next_one_continues_from_the_cache(
    lms_factory, start_player, media, tmp_path
):
    """The server's HTTP side goes first (a shutdown): the current track's stream ends early but
    cleanly, the player reports it decoded, the server sends the next track, and its SlimProto
    side closes before one frame of that track is decoded. The cut track continues from its
    cached copy at the exact frame; the next track's stream is dropped and the cache plays it."""
    lms = lms_factory(volume=100)
    files = queue_media(media, "cutnext")
    player, capture = play_until_cached(lms, start_player, tmp_path, files)
    lms.stream_rate = 1  # the next track's stream connects and brings next to nothing
    lms.end_streams()
    assert lms.wait_for(lambda: any(r.index == 1 for r in lms.stream_requests), timeout=10), player.log()
    lms.stop()
    assert wait_for_log(player, "was cut short; it continues from the cache", timeout=10), player.log()
    compare_with_reference(media, files, capture, player, timeout=30)


def test_dsd_as_dop_continues_from_the_cache_bit_for_bit(lms_factory, start_player, tmp_path):
    """DSD offline (on the emulation: LMS 7.9.1 here cannot scan DSD files, see test_real_lms.py, so it
    never lists one in a queue): a DSF, a DSDIFF and a DSF track, sent as they are (`strm d`), are
    cached as they are; the server is killed in the first one and the cache plays on, as DoP (`-D`):
    the whole capture (`-a 32`) equals the DoP frames of the three files' bits, markers alternating
    on across the handoff and the tracks."""
    from harness import dsd_files
    import numpy as np

    bits = [dsd_files.modulate(seconds, dsd_files.DSD64, (f, 1.5 * f))
            for seconds, f in ((3.0, 345.0), (2.5, 445.0), (2.0, 545.0))]
    files = []
    for number, (channels, suffix) in enumerate(zip(bits, ("dsf", "dff", "dsf"))):
        path = tmp_path / f"dsd-{number}.{suffix}"
        (dsd_files.write_dsf if suffix == "dsf" else dsd_files.write_dff)(path, channels, dsd_files.DSD64)
        files.append(path)
    reference = dsd_files.dop_frames(np.concatenate(bits, axis=1))
    lms = lms_factory(volume=50)
    lms.load(MAC, files)
    player = start_player(
        "-s", f"127.0.0.1:{lms.port}", "--lms-port", str(lms.http_port), "-m", MAC, "-o", "-", "-r", "768000", "-a", "32", "-D",
        "--cache-dir", str(tmp_path / "cache"), "-d", "cache=debug", "-d", "lms=info", "-d", "stream=info",
        capture=True)
    capture = Capture(player.process.stdout, bytes_per_second=176400 * 8)
    assert lms.wait_for(lambda: lms.client(MAC), timeout=5), player.log()
    lms.stream_rate = 800_000  # a little faster than DSD64's 705,600 bytes a second
    lms.play(MAC, 0)
    assert lms.wait_for(lambda: cached_count(tmp_path) == len(files), timeout=20), player.log()
    assert lms.wait_for(lambda: "STMs" in lms.stat_events(), timeout=10), player.log()
    time.sleep(1.0)
    lms.stop()
    assert wait_for_log(player, "continues from the cache", timeout=10), player.log()
    got = capture.wait_for_length(len(reference), timeout=30)
    time.sleep(0.5)
    got = capture.bytes()
    mismatch = next((i for i in range(0, min(len(got), len(reference)), 8) if got[i:i + 8] != reference[i:i + 8]), None)
    print(f"captured {len(got)} bytes, reference {len(reference)}, first difference at byte {mismatch}")
    assert len(got) == len(reference), player.log()
    assert got == reference, player.log()
    assert "(DSDIFF DSD64, DoP) 24-bit 176400 Hz" in player.log(), player.log()


def test_server_killed_with_the_current_track_not_cached_plays_the_buffer_then_the_next_cached_track(
    lms_factory, start_player, media, tmp_path
):
    lms = lms_factory(volume=100)
    files = queue_media(media, "uncached", seconds=(3, 3))
    lms.load(MAC, files)
    # The current track cannot be downloaded; the next one can.
    lms.refused_download_ids = {lms.state(MAC).queue[0].id}
    player, capture = start(lms, start_player, tmp_path)
    lms.stream_rate = 120_000
    lms.play(MAC, 0)
    assert lms.wait_for(lambda: cached_count(tmp_path) == 1, timeout=20), player.log()
    assert lms.wait_for(lambda: "STMs" in lms.stat_events(), timeout=10), player.log()
    assert lms.wait_for(lambda: len(capture.bytes()) > BYTES_PER_SECOND // 2, timeout=10)
    lms.stop()
    # What had arrived of the first track plays, then the second starts at its first sample.
    second = media.flac_reference(files[1])
    first = media.flac_reference(files[0])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not capture.bytes().endswith(second):
        time.sleep(0.1)
    got = capture.bytes()
    log = player.log()
    assert "is not cached" in log, log
    assert got.endswith(second), log
    played_of_first = got[: len(got) - len(second)]
    assert 0 < len(played_of_first) < len(first), log
    assert first.startswith(played_of_first), "the first track's buffered part plays unchanged"


@pytest.mark.slow
def test_resync_after_a_20_s_outage_brings_lms_to_the_true_position(lms_factory, start_player, media, tmp_path):
    lms = lms_factory(volume=100)
    # A second track of 20 s: the outage counts from when the player noticed it, which takes a few
    # seconds more under load, and the reconnect must still land inside that track.
    files = queue_media(media, "resync", seconds=(12, 20, 12))
    player, capture = play_then_kill_the_server(lms, start_player, tmp_path, files)
    time.sleep(20.0)  # the second track starts from the cache meanwhile
    lms.start()
    time.sleep(2.0)
    status = lms.status_of(MAC)
    heard = len(capture.bytes()) / BYTES_PER_SECOND
    print(f"2 s after the server came back: index {status['playlist_cur_index']}, server time "
          f"{float(status['time']):.3f} s, heard {heard - 12:.3f} s into the second track")
    assert int(status["playlist_cur_index"]) == 1
    assert abs(float(status["time"]) - (heard - 12)) <= 0.25, player.log()
    # The cached copy plays the second track to its end, then the server's stream of the third
    # takes over: the whole queue is sample-exact.
    compare_with_reference(media, files, capture, player, timeout=40)
    assert "resync: the server's stream took over at track 3" in player.log(), player.log()


def index_entries(tmp_path):
    return cache_entries(tmp_path / "cache")


def test_resync_after_the_server_forgot_the_player_and_server_control_works_after(
    lms_factory, start_player, media, tmp_path
):
    lms = lms_factory(volume=100, forget_seconds=1)
    files = queue_media(media, "forget", seconds=(12, 12))
    player, capture = play_then_kill_the_server(lms, start_player, tmp_path, files)
    time.sleep(2.0)  # longer than forget_seconds: LMS comes back with a new, stopped client
    lms.call(lms._as_coroutine(lambda: [lms._forget(s) for s in lms.players.values()]))
    lms.start()
    back = time.monotonic()
    assert wait_for_log(player, "resync: the server plays track 1 again", timeout=10), player.log()
    took = time.monotonic() - back
    status = lms.status_of(MAC)
    heard = len(capture.bytes()) / BYTES_PER_SECOND
    print(f"resynced {took:.2f} s after the server came back; server time {float(status['time']):.3f}, heard {heard:.3f}")
    assert status["mode"] == "play" and int(status["playlist_cur_index"]) == 0
    assert abs(float(status["time"]) - heard) <= 0.25
    # The server's controls work right away: pause stops the output, play resumes it.
    assert_pauses_and_resumes(
        capture, lambda: lms.jsonrpc(MAC, ["pause", "1"]), lambda: lms.jsonrpc(MAC, ["pause", "0"]))
    # Skip to the next track.
    starts = lms.stat_events(("STMs",)).count("STMs")
    lms.jsonrpc(MAC, ["playlist", "index", "+1"])
    assert lms.wait_for(lambda: lms.stat_events(("STMs",)).count("STMs") > starts, timeout=5), player.log()
    assert lms.wait_for(lambda: int(lms.status_of(MAC)["playlist_cur_index"]) == 1, timeout=3)
    # Volume: the samples get quieter.
    lms.jsonrpc(MAC, ["mixer", "volume", "30"])
    time.sleep(1.0)
    import struct

    tail = capture.bytes()[-BYTES_PER_SECOND // 4 // 4 * 4:]
    peak = max(abs(v) for v in struct.unpack(f"<{len(tail) // 2}h", tail))
    print(f"peak after volume 30: {peak}")
    assert 0 < peak < 8000


@pytest.mark.slow
def test_queue_edited_during_the_outage_the_server_order_wins_and_the_heard_track_plays_on(
    lms_factory, start_player, media, tmp_path
):
    lms = lms_factory(volume=100)
    files = queue_media(media, "edited", seconds=(12, 12, 4))
    player, capture = play_then_kill_the_server(lms, start_player, tmp_path, files[:2])
    # A track inserted after the one being heard while the server is away.
    lms.edit(MAC, "insert", 1, [files[2]])
    lms.start()
    assert wait_for_log(player, "the queue was edited on the server while offline", timeout=10), player.log()
    status = lms.status_of(MAC)
    assert [t["title"] for t in status["playlist_loop"]][:3] == ["edited-0", "edited-2", "edited-1"]
    # The heard track plays on without a gap, then the server's new order: the inserted track,
    # then the old second one.
    compare_with_reference(media, [files[0], files[2], files[1]], capture, player, timeout=40)


def test_cache_keeps_the_next_track_within_its_cap_and_replaces_a_corrupt_file(
    lms_factory, start_player, media, tmp_path
):
    lms = lms_factory(volume=100)
    files = queue_media(media, "plan", seconds=(3, 3, 3, 3, 3, 3, 3, 3))
    size = max(f.stat().st_size for f in files)
    lms.load(MAC, files)
    cap_mb = 1
    player, capture = start(lms, start_player, tmp_path, "--cache-size", str(cap_mb), "--prefetch", "3")
    lms.play(MAC, 0)
    misses = []
    corrupted = None
    for number in range(len(files) - 1):
        assert lms.wait_for(lambda: lms.stat_events(("STMs",)).count("STMs") > number, timeout=10), player.log()
        entries = index_entries(tmp_path)
        total = sum(e["size"] for e in entries)
        assert total <= cap_mb << 20, f"cache holds {total} bytes, cap {cap_mb} MB"
        urls = {e["url"] for e in entries}
        next_url = files[number + 1].resolve().as_uri()
        # From the second track start on: the first track plays as soon as the queue arrives, while
        # the next is still downloading (under load it was not yet cached once, 120 ms in).
        if number > 0 and next_url not in urls:
            misses.append(number + 1)
        if number == 1 and corrupted is None:
            # Damage the cached copy of the track after next, keeping its size.
            assert lms.wait_for(lambda: files[3].resolve().as_uri() in {e["url"] for e in index_entries(tmp_path)},
                                timeout=5), player.log()
            entry = next(e for e in index_entries(tmp_path) if e["url"] == files[3].resolve().as_uri())
            path = tmp_path / "cache" / f"{entry['key']}.audio"
            # In place: rewriting the whole file would let the player see it truncated for a moment
            # (a size change, which it rightly drops without reading the content).
            with path.open("r+b") as file:
                middle = path.stat().st_size // 2
                file.seek(middle)
                byte = file.read(1)[0]
                file.seek(middle)
                file.write(bytes([byte ^ 0xFF]))
            corrupted = files[3]
    print(f"next track not cached at track starts {misses} (of 2 to {len(files) - 1}); file size {size}")
    assert not misses, player.log()
    log = player.log()
    assert "is corrupt" in log, log
    track_id = lms.add_track(corrupted).id
    assert sum(1 for d in lms.downloads if d.track_id == str(track_id)) >= 2, "the corrupt file was fetched again"


def test_an_edit_on_the_server_reaches_the_cache_plan_within_2_s(lms_factory, start_player, media, tmp_path):
    lms = lms_factory(volume=100)
    files = queue_media(media, "plan-edit", seconds=(8, 3, 3))
    lms.load(MAC, files[:2])
    player, capture = start(lms, start_player, tmp_path)
    lms.play(MAC, 0)
    assert lms.wait_for(lambda: cached_count(tmp_path) == 2, timeout=10), player.log()
    lms.edit(MAC, "insert", 1, [files[2]])
    edited = time.monotonic()
    new_id = lms.add_track(files[2]).id
    assert lms.wait_for(lambda: any(d.track_id == str(new_id) for d in lms.downloads), timeout=5), player.log()
    took = time.monotonic() - edited
    print(f"download of the inserted track requested {took:.2f} s after the edit")
    assert took <= 2.0


def test_playback_goes_on_with_an_unusable_or_full_cache(lms_factory, start_player, media, tmp_path):
    import subprocess

    import pytest

    lms = lms_factory(volume=100)
    files = queue_media(media, "fullcache", seconds=(3, 3))
    lms.load(MAC, files)
    folder = tmp_path / "tiny"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(folder)],
                             capture_output=True).returncode == 0
    if not mounted:
        pytest.skip("a small tmpfs is needed to fill the disk (mount as root)")
    try:
        player = start_player(
            "-s", f"127.0.0.1:{lms.port}", "--lms-port", str(lms.http_port), "-m", MAC, "-o", "-", "-a", "16",
            "--cache-dir", str(folder), "-d", "cache=info", capture=True)
        capture = Capture(player.process.stdout)
        assert lms.wait_for(lambda: lms.client(MAC), timeout=5), player.log()
        lms.play(MAC, 0)
        reference = b"".join(media.flac_reference(f) for f in files)
        got = capture.wait_for_length(len(reference), timeout=20)
        log = player.log()
        assert "disk is full" in log, log
        assert got == reference, log
        assert not list(folder.glob("*.part")), "a partial download was left behind"
    finally:
        subprocess.run(["umount", "-l", str(folder)])
    # A cache folder that cannot exist: caching is off, playback is not.
    lms.stop_player(MAC)
    player2 = start_player(
        "-s", f"127.0.0.1:{lms.port}", "--lms-port", str(lms.http_port), "-m", "02:11:22:33:44:71", "-o", "-",
        "-a", "16", "--cache-dir", "/proc/slimplay-cache", capture=True)
    capture2 = Capture(player2.process.stdout)
    lms.load("02:11:22:33:44:71", files)
    assert lms.wait_for(lambda: lms.client("02:11:22:33:44:71"), timeout=5), player2.log()
    lms.play("02:11:22:33:44:71", 0)
    reference = b"".join(media.flac_reference(f) for f in files)
    assert capture2.wait_for_length(len(reference), timeout=20) == reference, player2.log()
    assert "caching is off" in player2.log()


def test_basic_auth_protects_json_rpc_and_downloads(lms_factory, start_player, media, tmp_path):
    lms = lms_factory(volume=100, user="admin", password="s3cret pass")
    files = queue_media(media, "auth", seconds=(3,))
    lms.load(MAC, files)
    secret = tmp_path / "password"
    secret.write_text("s3cret pass\n")
    player, capture = start(lms, start_player, tmp_path, "--lms-user", "admin", "--lms-password-file", str(secret))
    assert lms.wait_for(lambda: cached_count(tmp_path) == 1, timeout=10), player.log()
    assert any(name == "status" for _, (name, *_) in lms.commands), "the poller reached JSON-RPC"
    assert "s3cret" not in " ".join(player.process.args), "the password never travels on the command line"


def test_wrong_credentials_leave_playback_alone(lms_factory, start_player, media, tmp_path):
    lms = lms_factory(volume=100, user="admin", password="right")
    files = queue_media(media, "badauth", seconds=(2,))
    lms.load(MAC, files)
    secret = tmp_path / "password"
    secret.write_text("wrong")
    player, capture = start(lms, start_player, tmp_path, "--lms-user", "admin", "--lms-password-file", str(secret))
    lms.play(MAC, 0)
    reference = media.flac_reference(files[0])
    assert capture.wait_for_length(len(reference), timeout=10) == reference, player.log()
    assert "HTTP status 401" in player.log()
    assert cached_count(tmp_path) == 0


def test_no_offline_turns_the_feature_off(lms_factory, start_player, media, tmp_path):
    lms = lms_factory(volume=100)
    files = queue_media(media, "nooffline", seconds=(2,))
    lms.load(MAC, files)
    player, capture = start(lms, start_player, tmp_path, "--no-offline")
    lms.play(MAC, 0)
    reference = media.flac_reference(files[0])
    assert capture.wait_for_length(len(reference), timeout=10) == reference, player.log()
    assert lms.commands == [] and lms.downloads == [], "no JSON-RPC and no downloads"
    assert not (tmp_path / "cache").exists()


@pytest.mark.slow
def test_a_restarted_player_without_a_server_resumes_from_the_cache(lms_factory, start_player, media, tmp_path):
    lms = lms_factory(volume=100)
    files = queue_media(media, "resume", seconds=(12, 4))
    lms.load(MAC, files)
    player, capture = start(lms, start_player, tmp_path)
    lms.play(MAC, 0)
    assert lms.wait_for(lambda: cached_count(tmp_path) == 2, timeout=10), player.log()
    time.sleep(4.0)
    lms.stop()
    player.stop()
    saved = json.loads((state_folder(tmp_path / "state", MAC) / "playback.json").read_text())
    print("saved", {k: saved[k] for k in ("index", "position", "sample_rate")})
    assert saved["index"] == 0 and 2.5 <= saved["position"] <= 5.0
    # A new process, the server still away: after a few seconds it plays on from the saved spot.
    again, capture2 = start_later(lms, start_player, tmp_path)
    reference = b"".join(media.flac_reference(f) for f in files)
    start_byte = round(saved["position"] * 44100) * 4
    expected = reference[start_byte:]
    got = capture2.wait_for_length(len(expected), timeout=30)
    assert "resuming track 1" in again.log(), again.log()
    assert got == expected, again.log()


def start_later(lms, start_player, tmp_path):
    player = start_player(
        "-s", f"127.0.0.1:{lms.port}", "--lms-port", str(lms.http_port), "-m", MAC, "-o", "-", "-a", "16",
        "--cache-dir", str(tmp_path / "cache"), "-d", "cache=info", name="restarted", capture=True)
    return player, Capture(player.process.stdout, bytes_per_second=BYTES_PER_SECOND)


def test_an_interrupted_download_resumes_with_a_range_request(lms_factory, start_player, media, tmp_path):
    lms = lms_factory(volume=100)
    files = queue_media(media, "resumable", seconds=(20,))
    lms.load(MAC, files)
    lms.download_rate = 300_000
    player, capture = start(lms, start_player, tmp_path)

    def partial_size():
        parts = list((tmp_path / "cache").glob("*.part"))
        return parts[0].stat().st_size if parts else 0

    assert lms.wait_for(lambda: partial_size() > 200_000, timeout=10), player.log()
    lms.restart()  # cuts the download in the middle
    lms.download_rate = None
    assert lms.wait_for(lambda: cached_count(tmp_path) == 1, timeout=30), player.log()
    ranged = [d for d in lms.downloads if d.range]
    print("requests", [(d.track_id, d.range) for d in lms.downloads])
    assert ranged, "the second request resumes"
    assert int(ranged[0].range.split("=")[1].split("-")[0]) > 200_000
    entry = index_entries(tmp_path)[0]
    assert (tmp_path / "cache" / f"{entry['key']}.audio").read_bytes() == files[0].read_bytes()
