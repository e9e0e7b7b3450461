#!/usr/bin/env python3
"""A long soak on the real LMS 7.9.1: slimplay with its defaults (offline on) plays a queue of mixed
formats and rates (a track change about every 10 s) into a PulseAudio null sink through ALSA's
`pulse` plugin, for hours, with the network to the server cut now and then.

    scripts/soak [--minutes 120] [--partition-every 600] [--partition-seconds 60] [--out DIR]

Measured, and written to DIR (soak.csv, soak.png, and the summary printed at the end):
- the player's VmRSS, RssAnon, threads and file descriptors every 10 s;
- every stretch of digital silence of 10 ms or more in what the sink played (its monitor, recorded
  for the whole run), each placed in time: during a partition (or the minute after it), at a
  change of sample rate (the device is reopened at the new rate), or elsewhere, which is an
  underrun;
- for each partition: whether the player went on playing from its cache, and how long after the
  network came back LMS listed it as connected and playing again.

The server runs on its own address (127.0.0.4, state in /tmp/slimplay-lms-soak), so the soak can run
beside the tests' server. A report, not a test: it exits non-zero when an acceptance figure fails.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from faults import wait_for
from harness.player import PlayerProcess
from harness.pulse import SINK, PulseServer
from harness.real_lms import MusicLibrary, RealLMS

LMS_SCRIPT = ROOT.parent / "shared" / "lms" / "lms"
LMS_STATE = Path("/tmp/slimplay-lms-soak")
LMS_ADDR = "127.0.0.4"
MAC = "02:11:22:33:44:5a"
MONITOR_RATE = 44100
MONITOR_FRAME = 4  # s16le stereo
SILENCE_MS = 10
# Albums taken in turn, a track of each, so that format and rate change at most track changes.
ALBUMS = ("FLAC 16-44", "MP3 CBR", "FLAC 24-96", "MP3 VBR", "Mixed rates")


@dataclass
class Gap:
    at: float  # monotonic time the silence began
    ms: float
    kind: str = "underrun"


class SilenceWatch:
    """Records the sink's monitor and notes every run of exact zeros of `SILENCE_MS` or more. A null
    sink plays zeros when its one stream has nothing for it (an underrun) or is closed (a reopen)."""

    def __init__(self, env: dict[str, str]):
        self.gaps: list[Gap] = []
        self.frames = 0
        self.started = 0.0
        self._min_bytes = MONITOR_RATE * SILENCE_MS // 1000 * MONITOR_FRAME
        self._inner = re.compile(rb"\x00{%d,}" % self._min_bytes)
        self._run = 0  # zero bytes at the end of what was read so far
        self._process = subprocess.Popen(
            ["parec", "-d", f"{SINK}.monitor", "--raw", "--format=s16le", f"--rate={MONITOR_RATE}", "--channels=2",
             "--latency-msec=50"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _time_at(self, byte_offset: int) -> float:
        return self.started + byte_offset / (MONITOR_RATE * MONITOR_FRAME)

    def _note(self, end_offset: int, length: int) -> None:
        if length >= self._min_bytes:
            self.gaps.append(Gap(self._time_at(end_offset - length), length / (MONITOR_RATE * MONITOR_FRAME) * 1000))

    def _read(self) -> None:
        offset = 0
        stream = self._process.stdout
        while chunk := stream.read1(65536):
            if not self.started:
                self.started = time.monotonic()
            lead = len(chunk) - len(chunk.lstrip(b"\0"))
            if lead == len(chunk):
                self._run += lead
                offset += lead
                self.frames = offset // MONITOR_FRAME
                continue
            self._note(offset + lead, self._run + lead)
            trail = len(chunk) - len(chunk.rstrip(b"\0"))
            for match in self._inner.finditer(chunk, lead, len(chunk) - trail):
                self._note(offset + match.end(), match.end() - match.start())
            self._run = trail
            offset += len(chunk)
            self.frames = offset // MONITOR_FRAME

    def stop(self) -> None:
        self._process.terminate()
        self._process.wait(5)
        self._thread.join(5)
        # A silence still running at the end (the player fell silent for good) counts too.
        self._note(self.frames * MONITOR_FRAME, self._run)

    def silent_between(self, start: float, end: float, longer_than_ms: float = 500) -> bool:
        """Whether a silence longer than `longer_than_ms` overlaps [start, end] (monotonic times);
        a silence still running counts up to now."""
        stretches = [(g.at, g.at + g.ms / 1000) for g in self.gaps if g.ms > longer_than_ms]
        if self._run * 1000 / (MONITOR_RATE * MONITOR_FRAME) > longer_than_ms:
            stretches.append((self._time_at(self.frames * MONITOR_FRAME - self._run), time.monotonic()))
        return any(a < end and b > start for a, b in stretches)


@dataclass
class Partition:
    began: float
    ended: float = 0.0
    audio_went_on: bool = False
    resynced_after: float | None = None
    audio_after: bool = False


@dataclass
class Run:
    samples: list[dict[str, float]] = field(default_factory=list)
    partitions: list[Partition] = field(default_factory=list)
    reopens: list[float] = field(default_factory=list)


def proc_sample(pid: int) -> dict[str, float]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {"rss_kb": int(fields["VmRSS"].split()[0]), "rss_anon_kb": int(fields["RssAnon"].split()[0]),
            "threads": int(fields["Threads"]), "fds": len(os.listdir(f"/proc/{pid}/fd"))}


OPENED = re.compile(r"^\[(\d\d):(\d\d):(\d\d\.\d+)\].*output: \S+ opened at \d+ Hz", re.M)


def device_reopens(log: str, began_wall: float, began_monotonic: float) -> list[float]:
    """Monotonic times at which the player (re)opened its device, from its log's local time-of-day
    stamps (a run may pass midnight)."""
    midnight = datetime.fromtimestamp(began_wall).replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
    times = []
    for hours, minutes, seconds in OPENED.findall(log):
        wall = midnight + int(hours) * 3600 + int(minutes) * 60 + float(seconds)
        if wall < began_wall - 3600:
            wall += 86400
        times.append(wall - began_wall + began_monotonic)
    return times


def classify(gaps: list[Gap], run: Run) -> None:
    for gap in gaps:
        if any(p.began - 1 <= gap.at <= (p.ended or p.began) + 60 for p in run.partitions):
            gap.kind = "partition"
        elif any(abs(gap.at - t) <= 1.5 for t in run.reopens):
            gap.kind = "rate change"


def queue(library: MusicLibrary) -> list[Path]:
    albums = [library.tracks(name) for name in ALBUMS]
    order = []
    for index in range(max(len(tracks) for tracks in albums)):
        order.extend(tracks[index].path for tracks in albums if index < len(tracks))
    return order


def plot(run: Run, path: Path, warmup_s: float) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    minutes = [s["t"] / 60 for s in run.samples]
    figure, (memory, counts) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    memory.plot(minutes, [s["rss_kb"] / 1024 for s in run.samples], label="VmRSS")
    memory.plot(minutes, [s["rss_anon_kb"] / 1024 for s in run.samples], label="RssAnon")
    memory.set_ylabel("MiB")
    memory.legend(loc="lower right")
    counts.plot(minutes, [s["threads"] for s in run.samples], label="threads")
    counts.plot(minutes, [s["fds"] for s in run.samples], label="file descriptors")
    counts.set_ylabel("count")
    counts.set_xlabel("minutes")
    counts.legend(loc="lower right")
    start = run.samples[0]["at"] if run.samples else 0
    for axis in (memory, counts):
        axis.axvline(warmup_s / 60, color="grey", linestyle=":")
        for partition in run.partitions:
            axis.axvspan((partition.began - start) / 60, ((partition.ended or partition.began) - start) / 60,
                         color="orange", alpha=0.3)
    figure.suptitle("slimplay soak on LMS 7.9.1 (partitions shaded; dotted: end of warm-up)")
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=120)
    parser.add_argument("--partition-every", type=float, default=600, help="seconds between partitions")
    parser.add_argument("--partition-seconds", type=float, default=60)
    parser.add_argument("--warmup", type=float, default=600, help="seconds before memory growth is judged")
    parser.add_argument("--out", type=Path, default=ROOT / ".build-soak")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="slimplay-soak-"))

    library = MusicLibrary().build()
    lms = RealLMS(LMS_SCRIPT, library.music, LMS_STATE, addr=LMS_ADDR, library=library, version="7.9.1")
    lms.heal()
    lms.wipe()
    lms.start()
    pulse = PulseServer(work / "pulse").start()
    saved_env = dict(os.environ)
    os.environ.update(pulse.env)
    try:
        player = PlayerProcess(["-s", LMS_ADDR, "-m", MAC, "-n", "soak", "--state-dir", str(work / "state"),
                                "--cache-dir", str(work / "cache"), "-o", "pulse", "-d", "stream=info"],
                               work / "player.log")
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
    run = Run()
    watch = None
    try:
        lms.wait_player(MAC, 20)
        tracks = queue(library)
        lms.load_tracks(MAC, tracks)
        lms.rpc(MAC, ["playlist", "repeat", "2"])
        lms.set_volume(MAC, 100)
        lms.play(MAC, 0)
        if not wait_for(lambda: pulse.playback_streams() == 1, 20):
            print("never played into PulseAudio\n" + player.log()[-3000:])
            return 1
        watch = SilenceWatch(pulse.env)
        began, began_wall = time.monotonic(), time.time()
        end = began + args.minutes * 60
        next_partition = began + args.partition_every
        next_sample = began
        print(f"soak: {len(tracks)} tracks, {args.minutes:.0f} min, a {args.partition_seconds:.0f} s partition "
              f"every {args.partition_every:.0f} s; work in {work}", flush=True)
        while time.monotonic() < end and player.alive:
            now = time.monotonic()
            if now >= next_sample:
                run.samples.append({"t": now - began, "at": now, **proc_sample(player.process.pid),
                                    "partitioned": int(lms.partitioned)})
                next_sample += 10
            if now >= next_partition and now + args.partition_seconds + 60 < end:
                partition = Partition(began=now)
                run.partitions.append(partition)
                with lms.partition():
                    time.sleep(args.partition_seconds)
                partition.ended = time.monotonic()
                partition.audio_went_on = not watch.silent_between(partition.began, partition.ended)
                if wait_for(lambda: lms.connected(MAC) and lms.status(MAC).get("mode") == "play", 60, 0.5):
                    partition.resynced_after = time.monotonic() - partition.ended
                # LMS saying "play" is not enough: the sink must be playing too.
                time.sleep(10)
                partition.audio_after = not watch.silent_between(partition.ended, time.monotonic())
                print(f"partition {len(run.partitions)}: resynced after {partition.resynced_after}", flush=True)
                next_partition += args.partition_every
                continue
            time.sleep(min(1.0, max(0.0, min(next_sample, next_partition) - time.monotonic())))
        alive = player.alive
    finally:
        if watch:
            watch.stop()
        log = player.log()
        player.stop()
        pulse.stop()
        lms.heal()
        lms.stop()

    run.reopens = device_reopens(log, began_wall, began)
    gaps = watch.gaps if watch else []
    classify(gaps, run)
    with open(args.out / "soak.csv", "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=["t", "rss_kb", "rss_anon_kb", "threads", "fds", "partitioned"],
                                extrasaction="ignore")
        writer.writeheader()
        writer.writerows(run.samples)
    (args.out / "player.log").write_text(log)
    plotted = plot(run, args.out / "soak.png", args.warmup)

    after = [s for s in run.samples if s["t"] >= args.warmup]
    growth = (max(s["rss_kb"] for s in after) - after[0]["rss_kb"]) / 1024 if after else float("nan")
    end_growth = (statistics.median(s["rss_kb"] for s in after[-30:]) - statistics.median(
        s["rss_kb"] for s in after[:30])) / 1024 if len(after) >= 60 else float("nan")
    underruns = [g for g in gaps if g.kind == "underrun"]
    print(f"\n## soak: {(run.samples[-1]['t'] / 60) if run.samples else 0:.1f} min, player alive at the end: {alive}")
    for key in ("rss_kb", "rss_anon_kb", "threads", "fds"):
        values = [s[key] for s in after]
        if values:
            print(f"{key} after warm-up: first {values[0]}, last {values[-1]}, min {min(values)}, max {max(values)}")
    print(f"VmRSS growth after warm-up: max - first {growth:.2f} MiB; median of the last 5 min - of the first 5 min "
          f"{end_growth:.2f} MiB")
    print(f"silences >= {SILENCE_MS} ms: {len(gaps)}; during partitions {sum(g.kind == 'partition' for g in gaps)}, "
          f"at rate changes {sum(g.kind == 'rate change' for g in gaps)} (device reopens: {len(run.reopens)}), "
          f"underruns {len(underruns)}")
    for gap in underruns[:20]:
        print(f"  underrun at {(gap.at - began) / 60:.2f} min: {gap.ms:.0f} ms")
    for index, partition in enumerate(run.partitions, 1):
        print(f"partition {index} at {(partition.began - began) / 60:.1f} min: audio went on "
              f"{partition.audio_went_on}, LMS playing again {partition.resynced_after} s after the network came back, "
              f"audio in the 10 s after: {partition.audio_after}")
    print(f"files: {args.out}/soak.csv{', soak.png' if plotted else ''}, player.log")
    # VmRSS saw-tooths with code paged in at track starts and unmapped again: medians, not the peak.
    ok = (alive and end_growth < 0.5 and not underruns and all(
        p.audio_went_on and p.audio_after and p.resynced_after is not None for p in run.partitions))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
