"""Offline handoff and resync: the real binary against the LMS-like layer, audio from `-o -`."""

import json
import time

from media import Capture

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
        "--cache-dir", str(tmp_path / "cache"), "-d", "cache=info", "-d", "lms=info", *extra, capture=True)
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


def test_server_killed_mid_track_continues_from_the_cache_without_a_missing_sample(
    lms_factory, start_player, media, tmp_path
):
    lms = lms_factory(volume=100)
    files = queue_media(media, "handoff")
    lms.load(MAC, files)
    player, capture = start(lms, start_player, tmp_path)
    # The stream arrives a little faster than real time, so it is still arriving at the kill.
    lms.stream_rate = 120_000
    lms.play(MAC, 0)
    assert lms.wait_for(lambda: cached_count(tmp_path) == 3, timeout=20), player.log()
    assert lms.wait_for(lambda: "STMs" in lms.stat_events(), timeout=10), player.log()
    assert lms.stream_requests and lms.wait_for(lambda: len(capture.bytes()) > BYTES_PER_SECOND, timeout=10)
    lms.stop()
    reference = b"".join(media.flac_reference(f) for f in files)
    got = capture.wait_for_length(len(reference), timeout=30)
    log = player.log()
    assert "continues from the cache" in log, log
    assert len(got) == len(reference), f"{len(got)} bytes, expected {len(reference)}\n{log}"
    assert got == reference, "samples differ from the reference decode of the queue"


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


def test_resync_after_an_outage_brings_lms_to_the_true_position(lms_factory, start_player, media, tmp_path):
    lms = lms_factory(volume=100)
    files = queue_media(media, "resync", seconds=(12, 12))
    lms.load(MAC, files)
    player, capture = start(lms, start_player, tmp_path)
    lms.stream_rate = 120_000
    lms.play(MAC, 0)
    assert lms.wait_for(lambda: cached_count(tmp_path) == 2, timeout=20), player.log()
    time.sleep(1.0)
    lms.stop()
    assert wait_for_log(player, "continues from the cache", timeout=10), player.log()
    time.sleep(3.0)
    lms.start()
    assert wait_for_log(player, "resync: the server's stream took over", timeout=10), player.log()
    time.sleep(1.0)
    status = lms.status_of(MAC)
    heard = len(capture.bytes()) / BYTES_PER_SECOND
    print(f"server time {float(status['time']):.3f} s, heard {heard:.3f} s")
    assert int(status["playlist_cur_index"]) == 0
    assert abs(float(status["time"]) - heard) <= 0.25, player.log()
    reference = b"".join(media.flac_reference(f) for f in files)
    got = capture.wait_for_length(len(reference), timeout=40)
    mismatch = next((i for i in range(0, min(len(got), len(reference)), 4) if got[i:i + 4] != reference[i:i + 4]), None)
    print(f"captured {len(got)} bytes, reference {len(reference)}, first difference at byte {mismatch}")
    print(lms.stat_events())
    assert len(got) == len(reference), player.log()
    # The stream that took over is the same audio: the whole queue is still sample-exact.
    assert got == reference, player.log()
