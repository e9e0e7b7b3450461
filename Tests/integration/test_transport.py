"""Pause, unpause, sync start, silence insertion and skipping, measured on the output itself."""

import struct
import time

from harness.media import Capture
from harness.slimproto import events, lms_style_strm, mute_resp
from test_playback import MAC

RATE = 44100
FRAME = 4  # 16-bit stereo


def elapsed_ms(stat) -> int:
    return struct.unpack("!I", stat.raw[43:47])[0]


def start_playing(server, start_player, media, media_server, seconds=6, extra=(), autostart=b"1"):
    flac = media.flac(media.tone(f"transport-{seconds}.wav", seconds=seconds, freq="440"))
    player = start_player(
        "-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "-", "-a", "16", "-d", "all=info", *extra, capture=True
    )
    capture = Capture(player.process.stdout, bytes_per_second=RATE * FRAME)
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    assert client, player.log()
    mute_resp(server, client)
    server.call(lambda: client.volume_set(100))
    server.call(lambda: lms_style_strm(client, media_server.port, "/" + flac.name, autostart=autostart))
    return player, capture, client, flac


def status_now(server, client) -> int:
    """Asks for a STAT (strm t) and returns its elapsed milliseconds."""
    before = len(server.recorder.stats)
    server.call(lambda: client._send_strm(b"t", flags=0, replay_gain=99))
    stat = server.wait_for(
        lambda: next((s for s in server.recorder.stats[before:] if s.event == "STMt" and s.server_timestamp == 99), None),
        timeout=2,
    )
    assert stat
    return elapsed_ms(stat)


def test_pause_holds_the_position_and_unpause_resumes(server, start_player, media, media_server):
    player, capture, client, _ = start_playing(server, start_player, media, media_server)
    assert server.wait_for(lambda: "STMs" in events(server), timeout=5), player.log()
    time.sleep(1.5)
    server.call(lambda: client._send_strm(b"p", flags=0))
    assert server.wait_for(lambda: any(s.event == "STMp" for s in server.recorder.stats), timeout=2)
    first = status_now(server, client)
    time.sleep(1.0)
    second = status_now(server, client)
    assert abs(second - first) <= 50, (first, second)
    captured = len(capture.bytes())
    time.sleep(0.5)
    assert len(capture.bytes()) - captured <= 0.05 * RATE * FRAME  # no audio while paused
    server.call(lambda: client._send_strm(b"u", flags=0))
    assert server.wait_for(lambda: any(s.event == "STMr" for s in server.recorder.stats), timeout=2)
    time.sleep(1.0)
    third = status_now(server, client)
    assert 800 <= third - second <= 1200, (second, third)
    assert player.alive


def test_silence_insertion_and_skip_are_frame_exact(server, start_player, media, media_server):
    player, capture, client, flac = start_playing(server, start_player, media, media_server)
    assert server.wait_for(lambda: "STMs" in events(server), timeout=5), player.log()
    time.sleep(1.0)
    server.call(lambda: client._send_strm(b"p", flags=0, replay_gain=500))  # 500 ms of silence
    time.sleep(1.0)
    server.call(lambda: client._send_strm(b"a", flags=0, replay_gain=250))  # skip 250 ms
    assert server.wait_for(lambda: "STMu" in events(server), timeout=15), player.log()
    reference = media.flac_reference(flac)
    got = capture.wait_for_length(len(reference) + (500 - 250) * RATE // 1000 * FRAME, timeout=5)
    silence = 500 * RATE // 1000 * FRAME
    # The run of zeros can begin inside the frame before the silence, when that frame's last bytes
    # happen to be zero: the silence itself starts at the next frame boundary.
    start = got.find(b"\x00" * silence)
    assert start > 0
    start += -start % FRAME
    assert got[:start] == reference[:start]
    after = got[start + silence :]
    # The rest is the reference from `start` on, with 250 ms missing somewhere after the silence.
    skipped = 250 * RATE // 1000 * FRAME
    assert len(after) == len(reference) - start - skipped
    i = next(i for i in range(0, len(after), FRAME) if after[i : i + FRAME] != reference[start + i : start + i + FRAME])
    assert after[i:] == reference[start + i + skipped :]


def test_manual_start_sends_stml_and_starts_at_the_jiffies_given(server, start_player, media, media_server):
    player, capture, client, _ = start_playing(server, start_player, media, media_server, autostart=b"0")
    loaded = server.wait_for(lambda: next((s for s in server.recorder.stats if s.event == "STMl"), None), timeout=5)
    assert loaded, player.log()
    assert "STMs" not in events(server)
    jiffies = struct.unpack("!I", loaded.raw[25:29])[0]
    # Start 700 ms after the player's clock read `jiffies` (plus the time since).
    start_at = (jiffies + 700 + int((time.monotonic() - loaded.received_at) * 1000)) & 0xFFFFFFFF
    server.call(lambda: client._send_strm(b"u", flags=0, replay_gain=start_at))
    started = server.wait_for(lambda: next((s for s in server.recorder.stats if s.event == "STMs"), None), timeout=5)
    assert started, player.log()
    reported = struct.unpack("!I", started.raw[25:29])[0]
    assert abs(reported - start_at) <= 10, (reported, start_at)
