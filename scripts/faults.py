#!/usr/bin/env python3
"""Fault loops on the real LMS 7.9.1: each fault repeated until its recovery is boring, with the
player's threads, file descriptors and memory sampled after every round.

    scripts/faults [--rounds N] LOOP...      loops: restart, pulse, kill-download, kill-save,
                                             damaged-index, full-disk (all: every loop)

- restart: LMS restarted N times while the player plays from its queue (repeat on); a recovery
  is LMS listing the player again and playing, with audio still coming.
- pulse: the PulseAudio server the player plays into killed and started again N times; a
  recovery is the player's stream back in the server and its device reopened.
- kill-download / kill-save: the player SIGKILLed N times just after a download began / at a
  random moment of playback (state saves); each time the cache index must name only complete
  files of the size it says, the saved state must parse, and the next start must play.
- damaged-index: index.json overwritten with garbage; the next start rebuilds it from the files.
- full-disk: cache and state folders on a 1 MiB tmpfs; playback goes on, the log says why.

A report, not a test: it prints a table per loop and exits non-zero only when a round failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from harness.lms import free_port
from harness.media import Capture
from harness.player import PlayerProcess, state_folder
from harness.pulse import PulseServer
from harness.real_lms import LMSError, MusicLibrary, RealLMS

LMS_SCRIPT = ROOT.parent / "shared" / "lms" / "lms"
LMS_STATE = Path("/tmp/slimplay-lms-faults")
LMS_ADDR = "127.0.0.6"  # beside the tests' server (127.0.0.2) and the soak's (127.0.0.4)
BYTES_PER_SECOND = 44100 * 4


@dataclass
class Sample:
    rss_kb: int
    threads: int
    fds: int


def sample(pid: int) -> Sample:
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return Sample(int(fields["VmRSS"].split()[0]), int(fields["Threads"]), len(os.listdir(f"/proc/{pid}/fd")))


@dataclass
class Report:
    name: str
    rounds: int = 0
    recovered: int = 0
    seconds: list[float] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def judge(self, round_: int, recovered: bool, began: float, failure: str, player: PlayerProcess) -> bool:
        """Notes one round of a loop around a running player; False once the player has exited."""
        if recovered:
            self.recovered += 1
            self.seconds.append(time.monotonic() - began)
        else:
            self.failures.append(f"round {round_ + 1}: {failure}")
        if not player.alive:
            self.failures.append(f"round {round_ + 1}: the player exited")
            return False
        self.samples.append(sample(player.process.pid))
        return True

    def print(self) -> None:
        print(f"\n## {self.name}: {self.recovered}/{self.rounds} recovered")
        if self.seconds:
            print(f"recovery s: median {statistics.median(self.seconds):.2f}, max {max(self.seconds):.2f}")
        if self.samples:
            first, last = self.samples[0], self.samples[-1]
            rss = [s.rss_kb for s in self.samples]
            print(f"VmRSS kB first {first.rss_kb}, last {last.rss_kb}, min {min(rss)}, max {max(rss)}; "
                  f"threads {first.threads} -> {last.threads} (max {max(s.threads for s in self.samples)}); "
                  f"fds {first.fds} -> {last.fds} (max {max(s.fds for s in self.samples)})")
        for note in self.notes:
            print(f"- {note}")
        for failure in self.failures[:10]:
            print(f"FAILED: {failure}")


def wait_for(condition, timeout: float, interval: float = 0.1) -> bool:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return True
        except Exception:  # noqa: BLE001 - a server that is restarting answers nothing
            pass
        time.sleep(interval)
    return False


class Session:
    """The real LMS and one slimplay playing a long queue from it."""

    def __init__(self, lms: RealLMS, work: Path, mac: str):
        self.lms = lms
        self.work = work
        self.mac = mac  # one per loop: LMS gives a player that comes back the queue it had
        self.data: Path | None = None  # the state and cache folders' parent, when not `work`
        self.player: PlayerProcess | None = None
        self.capture: Capture | None = None

    def start_player(self, *extra: str, output: str = "-", env: dict[str, str] | None = None) -> PlayerProcess:
        args = ["-s", self.lms.addr, "-m", self.mac, "-n", "faults", "--lms-port", str(self.lms.http_port),
                "--control", f"127.0.0.1:{free_port()}",
                "--state-dir", str((self.data or self.work) / "state"),
                "--cache-dir", str((self.data or self.work) / "cache"), "-o", output,
                # Standard output claims 44.1 kHz alone unless -r says more: the 24/96 album plays as it is.
                *(["-r", "768000"] if output == "-" else []),
                *(["-a", "16"] if output == "-" else []), "-d", "cache=info", "-d", "stream=info", *extra]
        saved = dict(os.environ)
        if env:
            os.environ.update(env)
        try:
            self.player = PlayerProcess(args, self.work / "player.log",
                                        stdout=subprocess.PIPE if output == "-" else subprocess.DEVNULL)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self.capture = Capture(self.player.process.stdout, bytes_per_second=BYTES_PER_SECOND) if output == "-" else None
        return self.player

    def play_long_queue(self) -> None:
        self.load_queue(self.lms.library.tracks("Long FLAC"))
        self.lms.rpc(self.mac, ["playlist", "repeat", "2"])
        self.lms.set_volume(self.mac, 100)
        self.lms.play(self.mac, 0)

    def load_queue(self, tracks: list) -> None:  # noqa: ANN001
        """Replaces LMS's queue for the player. A player that comes back gets its old queue back from
        LMS a moment after it registers, which can land after the `playlist clear`: then again."""
        for attempt in range(3):
            self.lms.rpc(self.mac, ["playlist", "clear"])
            try:
                self.lms.load_tracks(self.mac, [t.path for t in tracks])
                return
            except LMSError:
                if attempt == 2:
                    raise
                time.sleep(1)

    def playing(self) -> bool:
        return self.lms.connected(self.mac) and self.lms.status(self.mac).get("mode") == "play"

    def audio_flows(self, seconds: float = 0.5, timeout: float = 10) -> bool:
        if self.capture is None:
            return True
        start = len(self.capture.bytes())
        return wait_for(lambda: len(self.capture.bytes()) - start >= seconds * BYTES_PER_SECOND, timeout)

    def stop(self) -> None:
        if self.player:
            self.player.stop()
            self.player = None


def loop_restart(session: Session, rounds: int) -> Report:
    report = Report("LMS restarted during playback")
    player = session.start_player()
    session.lms.wait_player(session.mac, 20)
    session.play_long_queue()
    assert session.audio_flows(2, 20), player.log()
    time.sleep(5)
    lms_restarts: list[float] = []
    for round_ in range(rounds):
        report.rounds += 1
        began = time.monotonic()
        lms_restarts.append(session.lms.restart())
        recovered = wait_for(session.playing, 30) and session.audio_flows()
        if not report.judge(round_, recovered, began, "not playing 30 s after the restart", player):
            break
        time.sleep(2)
    report.notes.append("recovery: from the restart command to LMS listing the player as playing, audio flowing; "
                        f"LMS's own restart (stop, start, JSON-RPC answering) took median "
                        f"{statistics.median(lms_restarts):.2f} s")
    gaps = [(round(seconds, 2)) for _, seconds in session.capture.late]
    report.notes.append(f"output gaps over 50 ms: {len(gaps)} {gaps[:10]}")
    session.stop()
    return report


def loop_pulse(session: Session, rounds: int) -> Report:
    report = Report("PulseAudio killed and started again during playback")
    pulse = PulseServer(session.work / "pulse").start()
    player = session.start_player(output="pulse", env=pulse.env)
    session.lms.wait_player(session.mac, 20)
    session.play_long_queue()
    if not wait_for(lambda: pulse.playback_streams() == 1, 20):
        report.failures.append("never played into PulseAudio")
        return report
    time.sleep(3)
    for round_ in range(rounds):
        report.rounds += 1
        opened = player.log().count("output: pulse opened")
        pulse.daemon.kill()
        pulse.daemon.wait(5)
        time.sleep(1)
        (session.work / "pulse" / "native").unlink(missing_ok=True)
        pulse.start()
        began = time.monotonic()
        recovered = wait_for(
            lambda: pulse.playback_streams() == 1 and player.log().count("output: pulse opened") > opened, 20)
        if not report.judge(round_, recovered, began, "no stream in PulseAudio 20 s after it came back", player):
            break
        time.sleep(2)
    session.stop()
    pulse.stop()
    return report


def check_cache(work: Path, mac: str) -> list[str]:
    """What is wrong with the cache and the saved state a killed player left."""
    problems = []
    index_path = work / "cache" / "index.json"
    if index_path.exists():
        try:
            index = json.loads(index_path.read_text())
        except ValueError as error:
            return [f"index.json does not parse: {error}"]
        for entry in index.get("entries", []):
            audio = work / "cache" / f"{entry['key']}.audio"
            if not audio.exists():
                problems.append(f"index names {audio.name}, which is missing")
            elif audio.stat().st_size != entry["size"]:
                problems.append(f"{audio.name}: {audio.stat().st_size} bytes, the index says {entry['size']}")
    state = state_folder(work / "state", mac) / "playback.json"
    if state.exists():
        try:
            json.loads(state.read_text())
        except ValueError as error:
            problems.append(f"playback.json does not parse: {error}")
    return problems


def loop_kill(session: Session, rounds: int, during: str) -> Report:
    report = Report(f"player SIGKILLed during {'a download' if during == 'download' else 'playback (state saves)'}")
    rng = random.Random(during)
    album = "FLAC 24-96" if during == "download" else "FLAC 16-44"
    for round_ in range(rounds):
        report.rounds += 1
        log_before = (session.work / "player.log").read_text(errors="replace") if (
            session.work / "player.log").exists() else ""
        player = session.start_player()
        began = time.monotonic()
        try:
            session.lms.wait_player(session.mac, 20)
        except Exception as error:  # noqa: BLE001
            report.failures.append(f"round {round_ + 1}: not registered: {error}")
            player.process.kill()
            continue
        if round_ == 0 or rng.random() < 0.3:
            # A new queue now and then, so that there is something to download.
            tracks = session.lms.library.tracks(album)
            rng.shuffle(tracks)
            session.load_queue(tracks)
            session.lms.set_volume(session.mac, 100)
            session.lms.play(session.mac, 0)
        elif session.lms.status(session.mac).get("mode") != "play":
            session.lms.play(session.mac, 0)
        first_audio = wait_for(lambda: len(session.capture.bytes()) > 0, 15, 0.005)
        heard_at = time.monotonic() - began
        if not (first_audio and session.audio_flows(0.3, 15)):
            report.failures.append(f"round {round_ + 1}: no audio after the start")
        else:
            report.recovered += 1
            report.seconds.append(heard_at)
        if during == "download":
            wait_for(lambda: "download: track" in player.log()[len(log_before):], 5, 0.005)
            time.sleep(rng.uniform(0, 0.05))
        else:
            time.sleep(rng.uniform(0.2, 3))
        report.samples.append(sample(player.process.pid))
        player.process.kill()
        player.process.wait()
        player.stop()
        for problem in check_cache(session.work, session.mac):
            report.failures.append(f"round {round_ + 1}: {problem}")
    report.notes.append("recovery: from the player's start (a new process) to its first audio out (LMS resumes a "
                        "player that comes back; now and then the test replaces the queue first)")
    return report


def loop_damaged_index(session: Session, rounds: int) -> Report:
    report = Report("index.json damaged")
    session.start_player()
    session.lms.wait_player(session.mac, 20)
    session.play_long_queue()
    wait_for(lambda: "cached" in session.player.log(), 20)
    time.sleep(2)
    session.stop()
    files = sorted((session.work / "cache").glob("*.audio"))
    for round_ in range(rounds):
        report.rounds += 1
        (session.work / "cache" / "index.json").write_bytes(os.urandom(512) if round_ % 2 else b'{"entries": [')
        log_path = session.work / "player.log"
        before = len(log_path.read_text(errors="replace"))
        player = session.start_player()
        found = f"{len(files)} files in"
        rebuilt = wait_for(lambda: found in player.log()[before:], 10)
        session.lms.wait_player(session.mac, 20)
        if rebuilt and session.audio_flows(0.5, 15) and not check_cache(session.work, session.mac):
            report.recovered += 1
        else:
            lines = [line for line in player.log()[before:].splitlines() if "cache" in line][:3]
            report.failures.append(f"round {round_ + 1}: {check_cache(session.work, session.mac)} {lines}")
        session.stop()
    report.notes.append(f"{len(files)} cached files before the damage; after: "
                        f"{len(list((session.work / 'cache').glob('*.audio')))}")
    return report


def loop_full_disk(session: Session, rounds: int) -> Report:
    report = Report("cache and state folders on a full disk")
    mount = Path(tempfile.mkdtemp(prefix="slimplay-full-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], check=True)
    try:
        with open(mount / "filler", "wb") as filler:  # until the disk is full
            try:
                filler.write(b"\0" * (2 << 20))
            except OSError:
                pass
        session.data = mount
        base = session.mac
        for round_ in range(rounds):
            report.rounds += 1
            # A new player each round: one that comes back at once is resumed by LMS mid-queue, and
            # replacing that queue races LMS's own restore.
            session.mac = f"{base[:-2]}{0xd0 + round_:02x}"
            player = session.start_player()
            session.lms.wait_player(session.mac, 20)
            session.play_long_queue()
            if session.audio_flows(3, 20) and player.alive:
                report.recovered += 1
            else:
                report.failures.append(f"round {round_ + 1}: playback did not go on")
            for line in player.log().splitlines():
                message = line.split("] ", 1)[-1].replace(str(mount), "DISK")
                if ("error" in line or "warning" in line) and message not in report.notes:
                    report.notes.append(message)
            session.stop()
    finally:
        session.data = None
        session.stop()
        subprocess.run(["umount", "--lazy", str(mount)])
    return report


LOOPS = {
    "restart": loop_restart,
    "pulse": loop_pulse,
    "kill-download": lambda s, n: loop_kill(s, n, "download"),
    "kill-save": lambda s, n: loop_kill(s, n, "save"),
    "damaged-index": loop_damaged_index,
    "full-disk": loop_full_disk,
}
DEFAULT_ROUNDS = {"restart": 100, "pulse": 50, "kill-download": 50, "kill-save": 50, "damaged-index": 4,
                  "full-disk": 2}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, help="rounds of each loop (default: 100 restarts, 50 of the rest)")
    parser.add_argument("loops", nargs="+", choices=[*LOOPS, "all"])
    args = parser.parse_args()
    names = list(LOOPS) if "all" in args.loops else args.loops
    library = MusicLibrary().build()
    lms = RealLMS(LMS_SCRIPT, library.music, LMS_STATE, addr=LMS_ADDR, library=library, version="7.9.1")
    lms.heal()
    lms.wipe()  # a fresh database: no player queue left from an earlier run
    lms.start()
    failed = False
    try:
        for name in names:
            work = Path(tempfile.mkdtemp(prefix=f"slimplay-faults-{name}-"))
            session = Session(lms, work, f"02:11:22:33:44:{0xc0 + list(LOOPS).index(name):02x}")
            try:
                report = LOOPS[name](session, args.rounds or DEFAULT_ROUNDS[name])
            finally:
                session.stop()  # also when the loop failed: a player left behind would fight the next
            report.print()
            failed |= bool(report.failures)
            if not lms.running():
                lms.start()
    finally:
        lms.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
