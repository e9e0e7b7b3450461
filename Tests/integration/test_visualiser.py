"""`-v`: the samples played, in squeezelite's shared memory segment for a visualiser.

A reader of our own (fakes/vis_reader.c) maps /dev/shm/squeezelite-<mac> by squeezelite's layout and
takes its lock, as jivelite's VU meter does, while a track of a loud tone then silence plays through
`-o -` at a sound card's pace: the levels follow the audio, silence reads as silence, and once the
queue has ended the segment says nothing plays. The same reader against Debian's squeezelite with the
same options reads the same."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

import pytest
from harness.lms import LoopbackServer
from harness.media import Capture, MediaServer, run
from test_differential import SQUEEZELITE, SqueezeliteProcess
from harness.slimproto import events

from harness.player import PlayerProcess

READER_SOURCE = Path(__file__).parent / "fakes" / "vis_reader.c"
MACS = {"slimplay": "02:11:22:33:44:b1", "squeezelite": "02:11:22:33:44:b2"}
LOUD_RMS = 0.5 * 32767 / 2 ** 0.5  # a sine at half of full scale


def reader_binary(folder: Path) -> Path:
    binary = folder / "vis_reader"
    subprocess.run(["gcc", "-O2", "-o", str(binary), str(READER_SOURCE), "-lm"], check=True)
    return binary


def loud_then_silent(folder: Path) -> Path:
    loud, silent, track = folder / "loud.wav", folder / "silent.wav", folder / "loud-then-silent.wav"
    run("sox", "-n", "-r", "44100", "-b", "16", "-c", "2", str(loud), "synth", "2", "sine", "440", "vol", "0.5")
    run("sox", "-n", "-r", "44100", "-b", "16", "-c", "2", str(silent), "trim", "0", "2")
    run("sox", str(loud), str(silent), str(track))
    return track


def read_while_playing(kind: str, folder: Path, reader: Path, track: Path) -> list[tuple[float, int, int, float, float]]:
    """Plays `track` on `kind` with -v and returns the reader's lines (seconds, running, rate, RMS left, right)."""
    mac = MACS[kind]
    segment = Path(f"/dev/shm/squeezelite-{mac}")
    with contextlib.suppress(FileNotFoundError):
        segment.unlink()
    server = LoopbackServer()
    server.start()
    media_server = MediaServer(track.parent)
    args = ["-s", f"127.0.0.1:{server.port}", "-m", mac, "-o", "-", "-a", "16", "-v", "-d", "all=info"]
    log = folder / f"{kind}.log"
    if kind == "squeezelite":
        process = SqueezeliteProcess(args, log, stdout=subprocess.PIPE)
    else:
        process = PlayerProcess(["--state-dir", str(folder / "state"), "--control", "off", *args], log,
                                stdout=subprocess.PIPE)
    watcher = None
    try:
        capture = Capture(process.process.stdout, bytes_per_second=44100 * 4)
        client = server.wait_for(lambda: server.player(mac), timeout=10)
        assert client, process.log()
        server.call(lambda: client.power(True))
        server.call(lambda: client.volume_set(100))
        assert server.wait_for(segment.exists, timeout=5), f"no {segment}\n{process.log()}"
        watcher = subprocess.Popen([str(reader), mac, "9", "50"], stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        server.call(lambda: client.play_url(media_server.url(track.name), mime_type="audio/wav"))
        assert server.wait_for(lambda: "STMu" in events(server), timeout=15), process.log()
        out, _ = watcher.communicate(timeout=15)
        assert len(capture.bytes()) >= 4 * 44100 * 4 * 0.9, "the track did not play"
    finally:
        if watcher and watcher.poll() is None:
            watcher.kill()
        process.stop()
        media_server.close()
        server.close()
        with contextlib.suppress(FileNotFoundError):
            segment.unlink()
    rows = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 5:
            rows.append((float(fields[0]), int(fields[1]), int(fields[2]), float(fields[3]), float(fields[4])))
    return rows


def summary(rows) -> dict[str, int]:  # noqa: ANN001
    loud = [r for r in rows if r[1] and all(0.9 * LOUD_RMS <= level <= 1.1 * LOUD_RMS for level in r[3:])]
    silent = [r for r in rows if r[1] and max(r[3:]) < 2]
    # Once the queue has ended (the last lines), nothing plays.
    ended = rows[-10:]
    return {"loud": len(loud), "silent while running": len(silent), "rate 44100": sum(r[2] == 44100 for r in rows if r[1]),
            "not running at the end": sum(1 for r in ended if not r[1])}


@pytest.mark.skipif(not os.path.exists(SQUEEZELITE), reason="squeezelite not installed")
def test_the_visualiser_segment_follows_the_audio_as_squeezelites_does(tmp_path):
    reader = reader_binary(tmp_path)
    track = loud_then_silent(tmp_path)
    seen = {}
    for kind in ("slimplay", "squeezelite"):
        rows = read_while_playing(kind, tmp_path, reader, track)
        seen[kind] = summary(rows)
        print(kind, seen[kind])
    for kind, counts in seen.items():
        # 2 s loud and 2 s silent, read every 50 ms: most readings of each part land inside it.
        assert counts["loud"] >= 20, (kind, counts)
        assert counts["silent while running"] >= 10, (kind, counts)
        assert counts["rate 44100"] >= counts["loud"], (kind, counts)
        assert counts["not running at the end"] == 10, (kind, counts)
