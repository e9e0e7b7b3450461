"""`-R`/`-u` on the real LMS 7.9.1: tracks at rates the output lacks are resampled with libsoxr,
the others pass untouched; the whole queue is compared with the reference to the last frame
(libsoxr called directly for the resampled tracks, `flac -d` for the others)."""

import time

import pytest
from harness.media import Capture
from harness.soxr_reference import resample
from test_real_lms import assert_whole
from test_real_lms_offline import MAC, widened

pytestmark = pytest.mark.real_lms


def test_rates_the_output_lacks_are_resampled_and_the_rest_pass_bit_exact(real_lms, start_player, tmp_path):
    """`-r 96000,48000 -u E` over the "Mixed rates" album (44.1, 96, 48, 44.1 kHz FLAC): the 44.1 kHz
    tracks are played at 96 kHz (no sync rate: the highest), 1 dB down, each flushed at its end;
    96 and 48 kHz play as they are."""
    tracks = real_lms.library.tracks("Mixed rates")
    plan = [96000 if track.rate == 44100 else track.rate for track in tracks]
    references = []
    for track, rate in zip(tracks, plan):
        frames = widened(track.reference(), track.bits)
        references.append(frames if rate == track.rate else resample(frames, track.rate, rate))
    reference = b"".join(references)
    seconds = sum(len(r) / (rate * 8) for r, rate in zip(references, plan))

    player = start_player(
        "-s", real_lms.addr, "-m", MAC, "-o", "-", "-a", "32", "-n", "resampling", "-r", "96000,48000", "-u", "E",
        "--cache-dir", str(tmp_path / "cache"), "--lms-port", str(real_lms.http_port), "-d", "decode=info", "-d", "stream=info",
        capture=True)
    capture = Capture(player.process.stdout, seconds_for=lambda total: total / (96000 * 8))
    real_lms.wait_player(MAC, timeout=20)
    real_lms.set_volume(MAC, 100)
    real_lms.load_tracks(MAC, tracks)
    real_lms.play(MAC, 0)
    # LMS's elapsed time for the first track, read while it plays, follows the resampled output.
    assert real_lms.wait_for(lambda: len(capture.bytes()) > 6 * 96000 * 8, timeout=30), player.log()
    heard = len(capture.bytes()) / (96000 * 8)
    lms_time = float(real_lms.status(MAC).get("time") or 0)
    capture.wait_for_length(len(reference), timeout=seconds + 30)
    time.sleep(1.0)
    print(f"LMS time {lms_time:.2f} s with {heard:.2f} s written")
    assert_whole(capture.bytes(), reference, player, "Mixed rates, resampled where the output lacks the rate")
    log = player.log()
    assert "resampled from 44100 Hz" in log, log
    # LMS adds the time since the last report; a count at the track's own rate would be 2.2 times off.
    assert abs(heard - lms_time) < 1.0, f"LMS at {lms_time} s, {heard} s written"


@pytest.mark.slow
@pytest.mark.lms_versions("8.3.0", "7.9.1")
def test_a_partition_in_a_resampled_track_hands_off_to_the_cache_without_a_gap(real_lms, start_player, tmp_path):
    """The network to LMS cut for 15 s 6 s into the first (resampled) track, its stream still in flight: the cached copy is decoded and
    resampled again from its start and takes over at the exact next output frame; LMS is then moved
    to where the player really is, and the whole queue still equals the reference."""
    from test_real_lms_offline import Queue, compare_whole_queue, launch, play_until, wait_for_resync

    queue = Queue(real_lms.library.tracks("Mixed rates"), wide=True)
    plan = [96000 if track.rate == 44100 else track.rate for track in queue.tracks]
    queue.references = [reference if rate == track.rate else resample(reference, track.rate, rate)
                        for track, reference, rate in zip(queue.tracks, queue.references, plan)]
    queue.rates = [rate * 8 for rate in plan]
    # Small buffers (64 KB of stream, 2.7 s of output at 96 kHz) keep the first track's stream in
    # flight when the network goes (a stopped server would still deliver what it had sent).
    player, capture = launch(
        real_lms, start_player, tmp_path, queue, "-r", "96000,48000", "-u", "E", "-b", "64:2048")
    play_until(real_lms, player, capture, queue, tmp_path, seconds=6.0, cached=3)
    with real_lms.partition():
        time.sleep(15)
    resync = wait_for_resync(real_lms, player, capture, queue, time.monotonic())
    print(f"partition 15 s: LMS showed track {resync.index + 1} {resync.matched_after:.2f} s after the reconnect, "
          f"time off by {resync.time_error * 1000:+.0f} ms")
    compare_whole_queue(player, capture, queue, timeout=90)
    # The handoff happened inside the resampled first track.
    assert "track 1 continues from the cache" in player.log() or "track 1 was cut short" in player.log(), player.log()


@pytest.mark.parametrize("kind", ["slimplay", "squeezelite"])
def test_a_debian_configuration_with_resampling_on_standard_output_leaves_a_cd_album_alone(
        real_lms, start_player, tmp_path, kind):
    """A Debian /etc/default/squeezelite with `SB_EXTRA_ARGS="-W -Z 96000 -D -R -f log"`, piped
    (`-o - -a 16`): standard output claims 44.1 kHz alone, so `-R` has nothing to do for a CD album
    and the whole capture is the album, bit for bit, on squeezelite and on slimplay alike."""
    import contextlib
    import os
    import subprocess

    from harness.real_lms import LMSError
    from test_differential import SQUEEZELITE, SqueezeliteProcess

    tracks = real_lms.library.tracks("FLAC 16-44")[:3]
    reference = b"".join(track.reference() for track in tracks)
    mac = {"slimplay": "02:11:22:33:44:d1", "squeezelite": "02:11:22:33:44:d2"}[kind]
    options = ["-s", real_lms.addr, "-m", mac, "-n", f"debian-{kind}", "-o", "-", "-a", "16",
               "-W", "-Z", "96000", "-D", "-R", "-f", str(tmp_path / f"{kind}-file.log")]
    with contextlib.suppress(LMSError, OSError):
        real_lms.rpc(mac, ["playlist", "clear"])
    if kind == "squeezelite":
        if not os.path.exists(SQUEEZELITE):
            pytest.skip("squeezelite not installed")
        player = SqueezeliteProcess(options, tmp_path / "squeezelite.log", stdout=subprocess.PIPE)
    else:
        player = start_player(*options, "--lms-port", str(real_lms.http_port), capture=True)
    try:
        capture = Capture(player.process.stdout, bytes_per_second=44100 * 4)
        real_lms.wait_player(mac, timeout=20)
        real_lms.set_volume(mac, 100)
        real_lms.load_tracks(mac, tracks)
        real_lms.play(mac, 0)
        capture.wait_for_length(len(reference), timeout=len(reference) / (44100 * 4) + 30)
        time.sleep(1.0)
        got = capture.bytes()
        # squeezelite's standard output writes silence while it waits; the album follows whole.
        start = got.find(reference[:4096])
        assert start >= 0 and not got[:start].strip(b"\0"), f"{kind}: the album is not in the output"
        assert got[start:start + len(reference)] == reference, f"{kind}: the album differs"
        assert not got[start + len(reference):].strip(b"\0"), f"{kind}: more than the album"
    finally:
        if kind == "squeezelite":
            player.stop()
