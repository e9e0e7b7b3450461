"""Sync groups measured at the outputs, on the real LMS.

Two players in one LMS sync group each play through ALSA's `pulse` plugin into a PulseAudio sink of
their own. Both sinks are remapped onto the channels of one 4-channel null sink (aux0/aux1 for the
first player, aux2/aux3 for the second; `aux` channels, so PulseAudio never mixes one player into the
other's channels), whose monitor is recorded: one clock and one recording, so the offset between the
two outputs is read to the sample. Each channel's place in the album is found by cross-correlation
with the reference decode (the tracks are tones over white noise, so the match is sharp), and the
offset is the difference of the two places.

A scenario plays an album, then pauses and resumes, then skips a track; each phase's offset is the
median over its last 3 seconds, once LMS's own sync check and the players' corrections have acted;
the largest offset before that is kept beside it.

Used by Tests/integration/test_sync_groups.py (short scenario) and scripts/sync-check (long one).
"""

from __future__ import annotations

import contextlib
import os
import re
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from .pulse import PulseServer

RATE = 44100
SQUEEZELITE = "/usr/bin/squeezelite"
WINDOW = 4096  # frames correlated per measurement (93 ms)
STEP = 0.25  # seconds between measurements


class SyncRig(PulseServer):
    """A private PulseAudio daemon with the 4-channel null sink and one remapped sink per player.

    The null sink runs without rewinds, as a sound card's buffer plays what it was given: with
    them, a stream that starts or is flushed rewinds the sink, and PulseAudio's delay estimate for
    it then wanders by up to 10 ms for several seconds (measured, in slimplay's start checks one
    second apart: 1.2, 3.2, 4.5, 6.0, 5.7, 4.0 ms) while the output does not: no player reporting
    through it (squeezelite or slimplay) can then be placed to the millisecond."""

    SINKS = ("sync_a", "sync_b")

    @property
    def channel_map(self) -> str:
        return ",".join(f"aux{n}" for n in range(2 * len(self.SINKS)))

    def sink_modules(self) -> list[str]:
        return [
            f"module-null-sink sink_name=sync_all norewinds=1 rate=44100 channels={2 * len(self.SINKS)} "
            f"channel_map={self.channel_map}",
            *[f"module-remap-sink sink_name={sink} master=sync_all channels=2 "
              f"master_channel_map=aux{2 * n},aux{2 * n + 1} channel_map=front-left,front-right remix=no"
              for n, sink in enumerate(self.SINKS)],
        ]

    def device_hold_ms(self, binary: str) -> float | None:
        """What the sound server holds of `binary`'s stream as it says now: its buffer and the sink's
        latency behind it (None when that player has no stream open)."""
        held = None
        for block in self.pactl("list", "sink-inputs").split("Sink Input #")[1:]:
            if f'application.process.binary = "{binary}"' not in block:
                continue
            numbers = [int(m) for m in re.findall(r"(?:Buffer|Sink) Latency: (\d+) usec", block)]
            if len(numbers) == 2:
                held = max(held or 0.0, sum(numbers) / 1000)
        return held

    def player_env(self, index: int) -> dict[str, str]:
        """The environment that sends a player's `-o pulse` to its own sink."""
        return dict(self.env, PULSE_SINK=self.SINKS[index])

    @contextlib.contextmanager
    def recording(self, path: Path) -> Iterator[Callable[[], float]]:
        """Records the 4-channel monitor into `path`; yields a clock: seconds into the recording.

        The recorder takes a moment (up to a second on a loaded machine) to deliver its first frame,
        so the clock counts from when that frame was recorded, not from the launch: a clock from the
        launch runs ahead of the recording, and a phase that ends "0.5 s before the skip" then takes
        in the skip itself."""
        with open(path, "wb") as out:
            recorder = subprocess.Popen(
                ["parec", "-d", "sync_all.monitor", "--raw", "--format=s16le", f"--rate={RATE}",
                 f"--channels={2 * len(self.SINKS)}", f"--channel-map={self.channel_map}", "--latency-msec=20"],
                env=self.env, stdout=out)
            deadline = time.monotonic() + 10
            while (size := os.path.getsize(path)) == 0 and time.monotonic() < deadline and recorder.poll() is None:
                time.sleep(0.005)
            assert size > 0, "the recorder delivered nothing"
            started = time.monotonic() - size / (2 * len(self.SINKS) * 2 * RATE)
            try:
                yield lambda: time.monotonic() - started
            finally:
                recorder.terminate()
                recorder.wait(5)


def launch_player(kind: str, index: int, mac: str, rig: SyncRig, server: str, lms_port: int, folder: Path,
                  binary: str, extra: tuple[str, ...] = ()) -> tuple[subprocess.Popen, Path]:
    """Starts slimplay or squeezelite (Debian's) on `-o pulse` into the rig's sink `index`, with
    `extra` options (both take squeezelite's)."""
    log = folder / f"{kind}-{index}.log"
    if kind == "squeezelite":
        args = [SQUEEZELITE, "-s", server, "-m", mac, "-n", f"sync-{kind}-{index}", "-o", "pulse",
                "-d", "output=info", "-d", "slimproto=debug", *extra]
    else:
        args = [binary, "-s", server, "-m", mac, "-n", f"sync-{kind}-{index}", "-o", "pulse",
                "--lms-port", str(lms_port), "--state-dir", str(folder / f"state-{index}"),
                "--control", "off", "-d", "stream=debug", "-d", "slimproto=trace", *extra]
    process = subprocess.Popen(args, env=rig.player_env(index), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=open(log, "ab"))  # noqa: SIM115
    return process, log


# --- reading the recording ------------------------------------------------------------------------------


class Locator:
    """Finds where a stretch of one output channel sits in the album's reference (left channel)."""

    def __init__(self, reference: np.ndarray, quality: float = 0.99):
        """`quality`: the normalised correlation a match must reach (lower for an output that went
        through the sound server's resampler, which blurs the noise's finest detail)."""
        self.quality = quality
        self.reference = reference.astype(np.float64)
        size = 1 << (len(self.reference) + WINDOW - 1).bit_length()
        self.size = size
        self.spectrum = np.fft.rfft(self.reference, size)

    def _match(self, window: np.ndarray, reference: np.ndarray, spectrum: np.ndarray | None, size: int
               ) -> int | None:
        if not window.any():
            return None
        ref_spectrum = spectrum if spectrum is not None else np.fft.rfft(reference, size)
        correlation = np.fft.irfft(ref_spectrum * np.conj(np.fft.rfft(window, size)), size)
        place = int(np.argmax(correlation[:len(reference) - len(window) + 1]))
        matched = reference[place:place + len(window)]
        quality = correlation[place] / np.sqrt((window * window).sum() * (matched * matched).sum() + 1e-9)
        return place if quality > self.quality else None

    def locate(self, window: np.ndarray, near: int | None = None) -> int | None:
        """The reference frame where `window` starts, searching ±1 s around `near` first."""
        window = window.astype(np.float64)
        if near is not None:
            low = max(0, near - RATE)
            high = min(len(self.reference), near + RATE + len(window))
            if high - low > len(window):
                size = 1 << (high - low + len(window) - 1).bit_length()
                place = self._match(window, self.reference[low:high], None, size)
                if place is not None:
                    return low + place
        return self._match(window, self.reference, self.spectrum, self.size)


def read_recording(path: Path) -> np.ndarray:
    """(frames, 4) int16: player one on columns 0-1, player two on 2-3."""
    data = np.fromfile(path, dtype="<i2")
    return data[:len(data) - len(data) % 4].reshape(-1, 4)


def offsets(recording: np.ndarray, locator: Locator, start: float, end: float) -> list[tuple[float, int]]:
    """(seconds into the recording, second player's place minus first player's, in frames) every STEP
    seconds from `start` to `end`, where both outputs play audio that is found in the reference."""
    found: list[tuple[float, int]] = []
    near: list[int | None] = [None, None]
    last_time = None
    t = start
    while t < end:
        frame = int(t * RATE)
        if frame + WINDOW > len(recording):
            break
        places = []
        for player, column in enumerate((0, 2)):
            guess = None if near[player] is None or last_time is None else near[player] + int((t - last_time) * RATE)
            places.append(locator.locate(recording[frame:frame + WINDOW, column], guess))
        # Both found, and in the same lap of the album (the queue repeats).
        if places[0] is not None and places[1] is not None and abs(places[1] - places[0]) < 5 * RATE:
            found.append((t, places[1] - places[0]))
            near = places
            last_time = t
        t += STEP
    return found


def first_audio(recording: np.ndarray) -> float | None:
    """Seconds into the recording when the first player's output first carries sound."""
    loud = np.nonzero(np.abs(recording[:, 0].astype(np.int32)) > 64)[0]
    return None if len(loud) == 0 else loud[0] / RATE


@dataclass
class Phase:
    """One event's offsets (second player's place minus the first's, so positive: the second is
    ahead): `settled_ms`, the median over the phase's last `SETTLED` seconds, after LMS's sync check
    (every second, for offsets of 10 ms and more) and the players' own corrections have acted, with
    `spread_ms` the largest distance of a reading there from it; `before_ms`, the largest offset
    before that."""

    name: str
    event: float  # seconds into the recording
    end: float
    settled_ms: float | None = None
    spread_ms: float | None = None
    before_ms: float | None = None
    readings: int = 0

    SETTLED = 3.0

    def measure(self, recording: np.ndarray, locator: Locator) -> Phase:
        boundary = max(self.event, self.end - self.SETTLED)
        early = offsets(recording, locator, self.event, boundary)
        settled = offsets(recording, locator, boundary, self.end)
        self.readings = len(settled)
        if settled:
            values = [frames for _, frames in settled]
            median = statistics.median(values)
            self.settled_ms = median * 1000 / RATE
            self.spread_ms = max(abs(v - median) for v in values) * 1000 / RATE
        if early:
            self.before_ms = max((frames for _, frames in early), key=abs) * 1000 / RATE
        return self

    def summary(self) -> str:
        def ms(value: float | None) -> str:
            return "-" if value is None else f"{value:+.3f} ms"
        return (f"{self.name}: {ms(self.settled_ms)} (spread {ms(self.spread_ms)}, {self.readings} readings; "
                f"largest before {ms(self.before_ms)})")


@dataclass
class PairResult:
    kinds: tuple[str, str]  # (master, the player synced to it)
    phases: list[Phase] = field(default_factory=list)
    logs: dict[str, str] = field(default_factory=dict)
    # The most the sound server held of squeezelite's stream after the resume (None: no squeezelite).
    squeezelite_hold_ms: float | None = None

    @property
    def label(self) -> str:
        return f"{self.kinds[0]} (master) + {self.kinds[1]}"

    def resume_lines(self) -> str:
        """What each side logged of the pause and the resume: the reports' elapsed times, the resume
        commands, each player's start time as LMS set it and the timed start's check."""
        marks = ("STMp", "STMr", "STMt", "STAT: STM", "strm command p", "strm command u", "unpause at", "pause",
                 "startAt", "timed start", "skip")
        return "\n".join(f"--- {name}\n" + "\n".join(line for line in text.splitlines() if any(m in line for m in marks))
                         for name, text in self.logs.items())

    def worst_settled_ms(self) -> float | None:
        values = [abs(p.settled_ms) for p in self.phases if p.settled_ms is not None]
        return max(values) if values else None


def run_pair(lms, kinds: tuple[str, str], tracks, folder: Path, binary: str, *,  # noqa: ANN001
             phase_seconds: float = 9.0, long_minutes: float = 0.0, play_delay_ms: tuple[int, int] = (0, 0),
             options: dict[str, tuple[str, ...]] | None = None) -> PairResult:
    """One pair in one sync group on `lms` (a real_lms.RealLMS), `tracks` in order (repeated as a
    loop). Phases: start, (after `long_minutes` of play,) after pause/resume, after a skip.
    `play_delay_ms`: LMS's per-player delay setting (playDelay), which starts that player earlier.
    `options`: extra options by kind ("slimplay", "squeezelite")."""
    folder.mkdir(parents=True, exist_ok=True)
    rig = SyncRig(folder / "pulse").start()
    macs = tuple(f"02:5c:00:00:{index:02x}:{0x51 if kind == 'squeezelite' else 0x50:02x}"
                 for index, kind in enumerate(kinds))
    processes: list[tuple[subprocess.Popen, Path]] = []
    result = PairResult(kinds)
    since = time.time()
    sync_logged = lms.logging("player.sync", "INFO")  # each player's resume time ("startAt")
    sync_logged.__enter__()
    try:
        for index, (kind, mac) in enumerate(zip(kinds, macs)):
            processes.append(launch_player(kind, index, mac, rig, lms.addr, lms.http_port, folder, binary,
                                           (options or {}).get(kind, ())))
        for mac in macs:
            lms.wait_player(mac, timeout=30)
        for mac, delay in zip(macs, play_delay_ms):
            with contextlib.suppress(Exception):
                lms.rpc(mac, ["sync", "-"])
            lms.rpc(mac, ["playerpref", "playDelay", str(delay)])
            lms.set_volume(mac, 100)
        lms.rpc(macs[1], ["sync", macs[0]])
        members = lms.rpc(macs[0], ["syncgroups", "?"]).get("syncgroups_loop", [])
        assert members and set(macs) <= set(members[0]["sync_members"].split(",")), members
        lms.load_tracks(macs[0], tracks)
        lms.rpc(macs[0], ["playlist", "repeat", 2])
        recording_path = folder / "recording.raw"
        events: dict[str, float] = {}
        with rig.recording(recording_path) as clock:
            time.sleep(0.5)
            lms.play(macs[0], 0)
            events["play"] = clock()
            time.sleep(phase_seconds + 1)
            if long_minutes:
                time.sleep(max(0.0, long_minutes * 60 - phase_seconds - 1))
                events["long"] = clock()
                time.sleep(phase_seconds)
            # What squeezelite's device holds as the pause comes is what its last report counted: read
            # in the 2 s before the pause as well as after the resume (a loaded machine holds more).
            holding = time.monotonic() + 2.0
            while time.monotonic() < holding:
                time.sleep(0.25)
                if "squeezelite" in kinds and (held := rig.device_hold_ms("squeezelite")) is not None:
                    result.squeezelite_hold_ms = max(result.squeezelite_hold_ms or 0.0, held)
            lms.pause(macs[0])
            time.sleep(3)
            lms.unpause(macs[0])
            events["resume"] = clock()
            resumed = time.monotonic()
            while (left := phase_seconds - (time.monotonic() - resumed)) > 0:
                time.sleep(min(1.0, left))
                if "squeezelite" in kinds and (held := rig.device_hold_ms("squeezelite")) is not None:
                    result.squeezelite_hold_ms = max(result.squeezelite_hold_ms or 0.0, held)
            lms.rpc(macs[0], ["playlist", "index", "+1"])
            events["skip"] = clock()
            time.sleep(phase_seconds)
            events["end"] = clock()
            time.sleep(1)  # what the recorder still has on its way
        recording = read_recording(recording_path)
        locator = Locator(np.concatenate([
            np.frombuffer(track.reference(), dtype="<i2").reshape(-1, 2)[:, 0] for track in tracks]))
        heard = first_audio(recording)
        assert heard is not None, "no sound from the first player"
        plan = [("start", heard, heard + phase_seconds)]
        if long_minutes:
            plan.append((f"after {long_minutes:g} min", events["long"], events["long"] + phase_seconds))
        plan += [("after pause", events["resume"], events["skip"] - 0.5),
                 ("after skip", events["skip"], events["end"] - 0.2)]
        if os.environ.get("SYNC_KEEP_RECORDING") is None:
            recording_path.unlink()
        result.phases = [Phase(name, start, end).measure(recording, locator) for name, start, end in plan]
        return result
    finally:
        result.logs = release_players(lms, macs, processes)
        sync_logged.__exit__(None, None, None)
        result.logs["lms"] = "\n".join(lms.log_lines_since(since, ("StreamingController", "Squeezebox2")))
        (folder / "lms-sync.log").write_text(result.logs["lms"])  # beside the players' own logs
        rig.stop()


def release_players(lms, macs, processes: list[tuple[subprocess.Popen, Path]]) -> dict[str, str]:  # noqa: ANN001
    """Takes the players out of their group and queue on the server, stops them, and returns their
    logs by file name."""
    for mac in macs:
        for command in (["sync", "-"], ["playlist", "repeat", 0], ["playlist", "clear"]):
            with contextlib.suppress(Exception):
                lms.rpc(mac, command)
    for process, _ in processes:
        process.terminate()
    logs = {}
    for process, log in processes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(5)
        logs[log.name] = log.read_text(errors="replace")
    return logs
