"""A sync group through an outage, measured at the outputs (the sync rig of sync_measure.py).

Three slimplay players in one LMS sync group each play through ALSA's `pulse` plugin into a sink of
their own, all remapped onto one 6-channel null sink whose monitor is recorded: one clock, one
recording. Each player's sound card runs off its nominal rate (fakes/dac_clock.c: the PCM opened,
say, 45 ppm fast while the player counts time at 44.1 kHz), so the members drift apart as real
DACs do unless something keeps them together: LMS while it is there, the members' own group clock
(`--sync-port`) while it is away. The server goes away (stopped, or cut off by a partition) once
the album is cached; every 10 s from the cut on, each member's offset from the first is read from
the recording (the median of five placements 0.1 s apart).

Used by scripts/sync-check --group-outage (a report, not a test).
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from .sync_measure import RATE, WINDOW, Locator, SyncRig, release_players

SHIM_SOURCE = Path(__file__).parent / "fakes" / "dac_clock.c"
# 44100 Hz ± 2 Hz: the nearest whole rates to ±50 ppm.
PPMS = (0.0, 45.35, -45.35)


class GroupSyncRig(SyncRig):
    """The sync rig with one sink per member of a three-player group."""

    SINKS = ("sync_a", "sync_b", "sync_c")


def dac_shim(folder: Path) -> Path:
    shim = folder / "dac_clock.so"
    if not shim.exists():
        subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(shim), str(SHIM_SOURCE), "-ldl", "-lasound", "-lm"],
                       check=True)
    return shim


@dataclass
class GroupOutageResult:
    clock: bool
    outage: str
    away: float
    # (seconds after the cut, each member's offset from the first in ms; None where not found)
    readings: list[tuple[float, list[float | None]]] = field(default_factory=list)
    recorded: tuple[float, float, float] = (0, 0, 0)  # the cut, the end and the recording's length, s
    logs: dict[str, str] = field(default_factory=dict)

    def worst_while_away_ms(self) -> float | None:
        values = [abs(v) for t, row in self.readings if 0 < t <= self.away for v in row[1:] if v is not None]
        return max(values) if values else None


def member_offsets(recording: np.ndarray, locator: Locator, at: float, album: int) -> list[float | None]:
    """Each member's place minus the first's at `at` seconds into the recording, in ms: the median of
    five placements 0.1 s apart (the queue repeats the album, so places are taken modulo it)."""
    rows = []
    for step in range(5):
        frame = int((at + (step - 2) * 0.1) * RATE)
        if frame < 0 or frame + WINDOW > len(recording):
            continue
        places = [locator.locate(recording[frame:frame + WINDOW, 2 * member]) for member in range(3)]
        if places[0] is None:
            continue
        rows.append([None if p is None else (p - places[0] + album // 2) % album - album // 2 for p in places])
    offsets: list[float | None] = []
    for member in range(3):
        values = [row[member] for row in rows if row[member] is not None]
        offsets.append(statistics.median(values) * 1000 / RATE if values else None)
    return offsets


def read_offsets(recording_path: Path, tracks, cut: float, end: float) -> list[tuple[float, list[float | None]]]:  # noqa: ANN001
    """Every 10 s from `cut` to `end` (seconds into the recording): (seconds after the cut, offsets)."""
    channels = len(GroupSyncRig.SINKS) * 2
    data = np.fromfile(recording_path, dtype="<i2")
    recording = data[:len(data) - len(data) % channels].reshape(-1, channels)
    reference = np.concatenate([np.frombuffer(track.reference(), dtype="<i2").reshape(-1, 2)[:, 0]
                                for track in tracks])
    # The members whose cards run off 44.1 kHz reach the sink through PulseAudio's resampler: their
    # recordings match the reference at about 0.92 rather than 1.0.
    locator = Locator(reference, quality=0.8)
    readings = []
    after = 0.0
    while cut + after < end - 1:
        readings.append((after, member_offsets(recording, locator, cut + after, len(reference))))
        after += 10
    return readings


def run_group_outage(lms, tracks, folder: Path, binary: str, *, outage: str = "stopped", away: float = 90,  # noqa: ANN001
                     after: float = 60, clock: bool = True, copies: int = 2) -> GroupOutageResult:
    """Three members on `lms` (a real_lms.RealLMS) play `tracks` `copies` times over; 25 s in, with the
    album cached, the server goes away for `away` s ("stopped" or "partition"), and the recording
    goes on `after` s after it returns."""
    folder.mkdir(parents=True, exist_ok=True)
    rig = GroupSyncRig(folder / "pulse").start()
    shim = dac_shim(folder)
    macs = [f"02:5c:00:00:{index:02x}:60" for index in range(3)]
    processes: list[tuple[subprocess.Popen, Path]] = []
    result = GroupOutageResult(clock, outage, away)
    try:
        for index, (mac, ppm) in enumerate(zip(macs, PPMS)):
            log = folder / f"member-{index}.log"
            args = [binary, "-s", lms.addr, "-m", mac, "-n", f"group-rig-{index}", "-o", "pulse",
                    "--lms-port", str(lms.http_port), "--state-dir", str(folder / f"member-{index}" / "state"),
                    "--cache-dir", str(folder / f"member-{index}" / "cache"), "--prefetch", "15", "--control", "off",
                    "-d", "group=info", "-d", "stream=info", *(() if clock else ("--sync-port", "0"))]
            env = dict(rig.player_env(index), LD_PRELOAD=str(shim), FAKE_DAC_PPM=str(ppm))
            processes.append((subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                               stderr=open(log, "ab")), log))  # noqa: SIM115
        for mac in macs:
            lms.wait_player(mac, timeout=30)
            with contextlib.suppress(Exception):
                lms.rpc(mac, ["sync", "-"])
            lms.set_volume(mac, 100)
        for mac in macs[1:]:
            lms.rpc(macs[0], ["sync", mac])
        queue = list(tracks) * copies
        for mac in macs:
            # LMS 7.9.1 keeps a group's queue for its return only under the player it came through.
            lms.load_tracks(mac, queue)
        recording_path = folder / "recording.raw"
        with rig.recording(recording_path) as seconds:
            lms.play(macs[0], 0)
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and not (
                    seconds() > 25 and all(cached_entries(folder / f"member-{i}" / "cache") >= len(tracks) for i in range(3))):
                time.sleep(0.2)
            cut = seconds()
            if outage == "stopped":
                lms.stop()
                time.sleep(away)
                lms.start()
            else:
                with lms.partition():
                    time.sleep(away)
            time.sleep(after)
            end = seconds()
            time.sleep(1)
        result.recorded = (cut, end, recording_path.stat().st_size / (len(GroupSyncRig.SINKS) * 4 * RATE))
        result.readings = read_offsets(recording_path, tracks, cut, end)
        if os.environ.get("SYNC_KEEP_RECORDING") is None:
            recording_path.unlink()
        return result
    finally:
        result.logs = release_players(lms, macs, processes)
        rig.stop()


def cached_entries(cache: Path) -> int:
    """Tracks in a member's cache index (its `--cache-dir`)."""
    try:
        return len(json.loads((cache / "index.json").read_text())["entries"])
    except (OSError, ValueError, KeyError):
        return 0
