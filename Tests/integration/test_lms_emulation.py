"""EmulatedLMS checked against squeezelite (the C reference player): the layer behaves like LMS before it is used
to test slimplay. No slimplay binary is needed here."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from harness.media import Capture
from test_differential import BYTES_PER_SECOND, SQUEEZELITE, SqueezeliteProcess, describe_difference, strip_silence

MAC = "02:11:22:33:44:90"

pytestmark = pytest.mark.skipif(not os.path.exists(SQUEEZELITE), reason="squeezelite not installed")


def rpc(lms, *command, mac=MAC, auth=None, timeout=5):
    """One JSON-RPC request, as an LMS client sends it; returns the whole reply."""
    body = json.dumps({"id": 1, "method": "slim.request", "params": [mac, list(command)]}).encode()
    headers = {"Content-Type": "application/json"}
    if auth:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    request = urllib.request.Request(f"http://127.0.0.1:{lms.http_port}/jsonrpc.js", data=body, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.load(response)


def status(lms, mac=MAC):
    return rpc(lms, "status", "-", 1, "tags:adlu", mac=mac)["result"]


def download(lms, track_id, range_header=None, timeout=5, auth=None):
    headers = {"Range": range_header} if range_header else {}
    if auth:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    request = urllib.request.Request(f"http://127.0.0.1:{lms.http_port}/music/{track_id}/download", headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.status, dict(response.headers), response.read()


@pytest.fixture
def squeezelite(tmp_path, request):
    """Starts squeezelite against an EmulatedLMS, its `-o -` read at real time; returns (process, capture)."""
    started: list[SqueezeliteProcess] = []

    def start(lms, mac=MAC):
        log = tmp_path / f"squeezelite-{len(started)}.log"
        process = SqueezeliteProcess(
            ["-s", f"127.0.0.1:{lms.port}", "-m", mac, "-o", "-", "-a", "16", "-d", "all=info"], log,
            stdout=subprocess.PIPE,
        )
        started.append(process)
        capture = Capture(process.process.stdout, bytes_per_second=BYTES_PER_SECOND)
        assert lms.wait_for(lambda: lms.client(mac), timeout=10), process.log()
        return process, capture

    yield start
    for process in started:
        process.stop()
    if getattr(request.node, "rep_call", None) and request.node.rep_call.failed:
        for process in started:
            print(f"--- {process.log_path.name}\n{process.log()[-4000:]}")


def audio_of(capture, expected_length, timeout):
    """The capture without the player's silence, once `expected_length` bytes of audio came out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(strip_silence(capture.bytes())) < expected_length:
        time.sleep(0.05)
    time.sleep(0.2)
    return strip_silence(capture.bytes())


def test_two_track_queue_plays_gaplessly(lms, squeezelite, media):
    a = media.flac(media.tone("emu-a.wav", seconds=2, freq="330"))
    b = media.flac(media.tone("emu-b.wav", seconds=2, freq="550"))
    _, capture = squeezelite(lms)
    lms.load(MAC, [a, b])
    rpc(lms, "mixer", "volume", 100)  # unity gain: the output is the decoded audio, bit for bit
    rpc(lms, "playlist", "jump", 0)

    first = lms.wait_for(lambda: (s := status(lms))["mode"] == "play" and s["time"] > 0.3 and s, timeout=5)
    assert first and first["playlist_cur_index"] == "0", first
    later = lms.wait_for(lambda: (s := status(lms))["time"] > first["time"] + 0.3 and s, timeout=3)
    assert later and later["playlist_cur_index"] == "0", later
    second = lms.wait_for(lambda: (s := status(lms))["playlist_cur_index"] == "1" and s, timeout=5)
    assert second and second["mode"] == "play" and second["time"] < 1.0, second
    assert second["playlist_loop"][0]["id"] == lms.add_track(b).id
    assert lms.wait_for(lambda: status(lms)["mode"] == "stop", timeout=5)

    expected = media.flac_reference(a) + media.flac_reference(b)
    got = audio_of(capture, len(expected), timeout=3)
    assert got == expected, describe_difference(got, expected)
    # track 2 was requested on STMd of track 1, without a strm q in between
    assert [(r.index, r.offset, r.ext) for r in lms.stream_requests] == [(0, 0, "flac"), (1, 0, "flac")]


def test_jump_with_time_offset_seeks_server_side(lms, squeezelite, media):
    flac = media.flac(media.tone("emu-seek.wav", seconds=4))
    _, capture = squeezelite(lms)
    lms.load(MAC, [flac])
    lms.set_volume(MAC, 100)
    reply = rpc(lms, "playlist", "jump", 0, 1, 0, {"timeOffset": 1.5})
    assert reply["result"] == {} and reply["params"] == [MAC, ["playlist", "jump", "0", "1", "0", {"timeOffset": 1.5}]]
    asked = time.monotonic()
    started = lms.wait_for(lambda: lms.state(MAC).started, timeout=2)
    assert started
    now = status(lms)
    assert now["mode"] == "play" and 1.5 <= now["time"] <= 1.5 + (time.monotonic() - asked) + 0.3, now
    assert lms.stream_requests[-1].offset == 66150

    # the stream starts exactly at sample 66150 of the track
    reference = media.flac_reference(flac)[66150 * 4 :]
    got = audio_of(capture, len(reference), timeout=5)
    assert got == reference, describe_difference(got, reference)
    assert lms.wait_for(lambda: status(lms)["mode"] == "stop", timeout=3)


def test_pause_freezes_time_and_seek_moves_it(lms, squeezelite, media):
    flac = media.flac(media.tone("emu-pause.wav", seconds=6))
    squeezelite(lms)
    lms.load(MAC, [flac], play=True)
    assert lms.wait_for(lambda: status(lms)["time"] > 1.0, timeout=5)
    rpc(lms, "pause", 1)
    assert lms.wait_for(lambda: "STMp" in lms.stat_events(("STMp",)), timeout=2)
    paused = status(lms)
    time.sleep(0.6)
    assert status(lms)["mode"] == "pause" and abs(status(lms)["time"] - paused["time"]) < 0.05
    rpc(lms, "pause", 0)
    assert lms.wait_for(lambda: status(lms)["time"] > paused["time"] + 0.3, timeout=3)
    assert status(lms)["mode"] == "play"

    rpc(lms, "time", 4)
    assert rpc(lms, "time", "?")["result"]["_time"] >= 4.0
    assert lms.wait_for(lambda: lms.state(MAC).started and status(lms)["time"] > 4.2, timeout=3)
    assert lms.stream_requests[-1].offset == 4 * 44100


def test_download_with_range(lms, media):
    flac = media.flac(media.tone("emu-dl.wav", seconds=1))
    track = lms.add_track(flac)
    data = flac.read_bytes()

    status_code, headers, body = download(lms, track.id)
    assert status_code == 200 and body == data
    assert headers["Content-Length"] == str(len(data)) and headers["Content-Type"] == "audio/x-flac"
    assert headers["Connection"] == "close"

    status_code, headers, body = download(lms, track.id, "bytes=100-199")
    assert status_code == 206 and body == data[100:200]
    assert headers["Content-Range"] == f"bytes 100-199/{len(data)}" and headers["Content-Length"] == "100"

    status_code, headers, body = download(lms, track.id, "bytes=1000-")
    assert status_code == 206 and body == data[1000:]
    assert [(d.track_id, d.range) for d in lms.downloads] == [
        (str(track.id), None), (str(track.id), "bytes=100-199"), (str(track.id), "bytes=1000-")
    ]


def test_unknown_download_id_gets_no_answer(lms):
    started = time.monotonic()
    with pytest.raises((TimeoutError, urllib.error.URLError)):
        download(lms, 999, timeout=1)
    assert time.monotonic() - started >= 0.9
    assert [d.track_id for d in lms.downloads] == ["999"]
    # once the client is gone, the server lets go too
    assert lms.wait_for(lambda: lms.held_downloads() == 0, timeout=2)


def test_basic_auth_guards_every_route_and_streams_still_play(lms_factory, squeezelite, media):
    lms = lms_factory(user="admin", password="secret")
    flac = media.flac(media.tone("emu-auth.wav", seconds=1))
    track = lms.add_track(flac)
    for call in (lambda: rpc(lms, "status", "-", 1), lambda: download(lms, track.id)):
        with pytest.raises(urllib.error.HTTPError) as error:
            call()
        assert error.value.code == 401
        assert error.value.headers["WWW-Authenticate"] == 'Basic realm="LMS"'
    with pytest.raises(urllib.error.HTTPError):
        rpc(lms, "status", "-", 1, auth=("admin", "wrong"))
    assert download(lms, track.id, auth=("admin", "secret"))[2] == flac.read_bytes()

    # the strm request carries LMS's stream credentials, which the player sends verbatim
    squeezelite(lms)
    lms.load(MAC, [track])
    rpc(lms, "play", auth=("admin", "secret"))
    assert lms.wait_for(lambda: "STMu" in lms.stat_events(), timeout=8)
    assert lms.stream_requests[0].headers.get("Authorization", "").startswith("Basic ")


def test_wav_is_transcoded_for_squeezelite_and_mp3_follows(lms, squeezelite, media):
    wav = media.tone("emu-wav.wav", seconds=1)
    mp3 = media.mp3(media.tone("emu-mp3.wav", seconds=1, freq="660"))
    _, capture = squeezelite(lms)
    lms.set_volume(MAC, 100)
    lms.load(MAC, [wav, mp3], play=True)
    assert lms.wait_for(lambda: status(lms)["mode"] == "stop" and "STMu" in lms.stat_events(), timeout=8)
    # squeezelite lists flc before pcm: WAV comes as FLAC (LMS's wav→flc rule)
    assert [(r.index, r.ext) for r in lms.stream_requests] == [(0, "flac"), (1, "mp3")]
    assert lms.stat_events(("STMs",)).count("STMs") == 2
    reference = media.raw_reference(wav)
    assert audio_of(capture, len(reference), timeout=2)[: len(reference)] == reference


def test_reconnect_with_the_bit_keeps_the_stream(lms, squeezelite, media):
    flac = media.flac(media.tone("emu-reconnect.wav", seconds=8))
    squeezelite(lms)
    lms.load(MAC, [flac], play=True)
    assert lms.wait_for(lambda: status(lms)["time"] > 0.5, timeout=5)
    hellos = len(lms.recorder.hellos)
    lms.restart()  # a short outage: state kept
    assert lms.wait_for(lambda: len(lms.recorder.hellos) > hellos and lms.client(MAC), timeout=10)
    assert lms.recorder.hellos[-1].reconnect
    now = status(lms)
    assert now["mode"] == "play" and now["player_connected"] == 1 and now["time"] > 0.5, now
    time.sleep(0.5)
    assert len(lms.stream_requests) == 1  # the stream was left alone
    assert status(lms)["mode"] == "play"


def test_forgotten_player_is_stopped_but_keeps_its_playlist(lms_factory, squeezelite, media):
    lms = lms_factory(forget_seconds=1)
    a = media.flac(media.tone("emu-forget-a.wav", seconds=8))
    b = media.flac(media.tone("emu-forget-b.wav", seconds=1))
    squeezelite(lms)
    lms.load(MAC, [b, a])
    rpc(lms, "playlist", "jump", 1)
    assert lms.wait_for(lambda: status(lms)["time"] > 0.3, timeout=5)
    lms.stop()
    with pytest.raises(urllib.error.URLError):
        status(lms)  # the HTTP side is down too
    time.sleep(1.2)
    lms.start()
    assert lms.wait_for(lambda: lms.client(MAC), timeout=10)
    hello = lms.recorder.hellos[-1]
    assert hello.reconnect
    now = lms.wait_for(lambda: (s := status(lms))["mode"] == "stop" and s, timeout=3)
    assert now and now["playlist_tracks"] == 2 and now["playlist_cur_index"] == "1", now
    # a new client is stopped with strm q, which squeezelite answers with STMf
    assert lms.wait_for(
        lambda: any(s.event == "STMf" and s.received_at > hello.received_at for s in lms.recorder.stats), timeout=2
    )


def test_fresh_helo_while_playing_restarts_the_song(lms, squeezelite, media):
    a = media.flac(media.tone("emu-restart-a.wav", seconds=1))
    b = media.flac(media.tone("emu-restart-b.wav", seconds=8))
    first, _ = squeezelite(lms)
    lms.load(MAC, [a, b])
    rpc(lms, "playlist", "jump", 1, 0, 0, {"timeOffset": 2})
    assert lms.wait_for(lambda: status(lms)["time"] > 2.2, timeout=5)
    first.stop()  # the player dies; a new process says HELO without the reconnect bit
    squeezelite(lms)
    assert not lms.recorder.hellos[-1].reconnect
    assert lms.wait_for(lambda: len(lms.stream_requests) == 2, timeout=5)
    assert (lms.stream_requests[-1].index, lms.stream_requests[-1].offset) == (1, 0)
    assert lms.wait_for(lambda: (s := status(lms))["mode"] == "play" and 0 < s["time"] < 2 and s, timeout=5)
