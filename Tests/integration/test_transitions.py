"""Crossfade, fade in and fade out between two tracks, checked sample by sample in 32-bit output."""

import struct

import pytest

from harness.media import Capture
from harness.slimproto import events, lms_style_strm, mute_resp
from test_playback import MAC

RATE = 44100


def samples32(reference16: bytes) -> list[int]:
    return [s << 16 for s in struct.unpack(f"<{len(reference16) // 2}h", reference16)]


def weight(i: int, n: int) -> int:
    return min(max(i, 0), n) * 65536 // n


@pytest.mark.parametrize("kind", ["crossfade", "fade_in", "fade_out"])
def test_transition_between_two_tracks(server, start_player, media, media_server, kind):
    a = media.flac(media.tone("fade-a.wav", seconds=3, freq="330"))
    b = media.flac(media.tone("fade-b.wav", seconds=3, freq="550"))
    code = {"crossfade": b"1", "fade_in": b"2", "fade_out": b"3"}[kind]
    player = start_player(
        "-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "-", "-a", "32", "-d", "all=info", capture=True
    )
    capture = Capture(player.process.stdout, bytes_per_second=RATE * 8)
    client = server.wait_for(lambda: server.player(MAC), timeout=5)
    mute_resp(server, client)
    server.call(lambda: client.volume_set(100))
    server.call(lambda: lms_style_strm(client, media_server.port, "/" + a.name))
    assert server.wait_for(lambda: "STMd" in events(server), timeout=5), player.log()
    server.call(
        lambda: lms_style_strm(client, media_server.port, "/" + b.name, transition=code, transition_seconds=1)
    )
    assert server.wait_for(lambda: "STMu" in events(server), timeout=15), player.log()
    old, new = samples32(media.flac_reference(a)), samples32(media.flac_reference(b))
    d = RATE  # one second, in frames
    if kind == "crossfade":
        cut = len(old) - 2 * d
        window = []
        for i in range(d):
            g = weight(i, d)
            for c in range(2):
                window.append((old[cut + 2 * i + c] * (65536 - g) + new[2 * i + c] * g) >> 16)
        expected = old[:cut] + window + new[2 * d :]
    elif kind == "fade_in":
        ramp = [(new[2 * i + c] * weight(i, d)) >> 16 for i in range(d) for c in range(2)]
        expected = old + ramp + new[2 * d :]
    else:
        cut = len(old) - 2 * d
        ramp = [(old[cut + 2 * i + c] * (65536 - weight(i, d))) >> 16 for i in range(d) for c in range(2)]
        expected = old[:cut] + ramp + new
    got = capture.wait_for_length(len(expected) * 4, timeout=5)
    out = list(struct.unpack(f"<{len(got) // 4}i", got))
    assert len(out) == len(expected), player.log()
    first_bad = next((i for i, (x, y) in enumerate(zip(out, expected)) if x != y), None)
    assert first_bad is None, f"first difference at sample {first_bad}: {out[first_bad]} != {expected[first_bad]}"
    assert events(server).count("STMs") == 2
