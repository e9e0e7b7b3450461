"""slimplay against squeezelite, same machine, same run: CPU and memory while playing, startup
times, decode throughput (also against the bare decoder tools), binary sizes, idle footprint.

Both players connect to the same aioslimproto LoopbackServer and stream the same generated
media from the same loopback HTTP server, LMS-style (strm s, autostart, server_ip 0, explicit
format). Runs alternate between the players (and swap who goes first each run); the table shows
medians. It is a report: nothing here passes or fails.

Run through `scripts/bench`, which installs the tools, makes the venv and builds the player.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path


from aioslimproto.models import EventType
from harness.lms import LoopbackServer
from harness.media import MediaServer
from harness.slimproto import lms_style_strm, mute_resp

import bench_real
from footprint import measure as idle_measure
from footprint import proc_status
from link_order import link_order

PLAYERS = ("slimplay", "squeezelite")
MACS = {"slimplay": "02:00:00:00:be:01", "squeezelite": "02:00:00:00:be:02"}
READER = Path(__file__).resolve().parent / "bench_reader.py"
# Both players' default output buffer: 3,528,000 bytes of stereo 32-bit frames (10 s at 44.1 kHz).
# The decoder runs that far ahead of what is heard, so it stops decoding that long before the end.
OUTPUT_BUFFER_BYTES = 44_100 * 8 * 10
# The smallest CPU quota the kernel takes is 1 ms per period: 1 % of one core at the 100 ms period.
QUOTA_FLOOR = 0.01


@dataclass(frozen=True)
class Codec:
    key: str
    label: str
    rate: int
    bits: int  # of the master and the FLAC
    fmt: bytes  # strm format byte
    token: str  # HELO capability
    out_bits: int  # -a for `-o -`
    details: bytes = b"????"  # the strm's sample size, rate, channels and endianness after `fmt`

    @property
    def out_bytes_per_second(self) -> int:
        return self.rate * 2 * (4 if self.out_bits > 16 else 2)

    @property
    def buffer_seconds(self) -> float:
        return OUTPUT_BUFFER_BYTES / (self.rate * 8)


CODECS = [
    Codec("flac16", "FLAC 16/44.1", 44100, 16, b"f", "flc", 16),
    Codec("flac24", "FLAC 24/96", 96000, 24, b"f", "flc", 32),
    Codec("mp3", "MP3 320k", 44100, 16, b"m", "mp3", 16),
    Codec("opus", "Opus 128k", 48000, 16, b"u", "ops", 16),
]
# AAC in MP4 (sample size '5', as LMS sends it), for the instruction counts only: the other parts
# compare with a command-line decoder, and Debian's faad does not read from a pipe.
AAC = Codec("aac", "AAC 256k (MP4)", 44100, 16, b"a", "aac", 16, details=b"5???")


def run(*command: str) -> None:
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


# --- CPU time -----------------------------------------------------------------------------------


def cpu_sample(pid: int) -> dict:
    """Per-thread run time in ns (/proc/PID/task/*/schedstat), name and context switches, and the
    process's utime+stime in s (/proc/PID/stat).

    schedstat is exact to the nanosecond; utime+stime counts in 10 ms ticks, too coarse for a
    process that uses 0.3 % of a core over 10 s. Threads that ended are only in /proc/PID/stat.
    """
    threads = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            ns = int((task / "schedstat").read_text().split()[0])
            name = (task / "comm").read_text().strip()
            switches = 0
            for line in (task / "status").read_text().splitlines():
                if "ctxt_switches:" in line:  # voluntary and nonvoluntary
                    switches += int(line.split()[1])
            threads[int(task.name)] = (ns, name, switches)
        except (FileNotFoundError, ProcessLookupError):
            pass
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    ticks = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return {"threads": threads, "ticks": ticks}


def cpu_between(before: dict, after: dict) -> float:
    """Exact from the threads' schedstat. A thread that ended inside the window (slimplay's idle
    Dispatch workers do) takes its time with it: then the ticks decide, if they show more."""
    exact = sum(ns - before["threads"].get(tid, (0,))[0] for tid, (ns, _, _) in after["threads"].items()) / 1e9
    ticks = after["ticks"] - before["ticks"]
    ended = set(before["threads"]) - set(after["threads"])
    # utime+stime are whole ticks of the total: each reading is up to one tick short.
    return ticks if ended and ticks - exact > 2 / os.sysconf("SC_CLK_TCK") else exact


def per_thread(before: dict, after: dict, seconds: float) -> list[dict]:
    """CPU ms and wake-ups (context switches) per second of each thread, busiest first."""
    rows = []
    for tid, (ns, name, switches) in after["threads"].items():
        ns0, _, switches0 = before["threads"].get(tid, (0, name, 0))
        rows.append({"tid": tid, "name": name, "cpu_ms_per_s": (ns - ns0) / 1e6 / seconds,
                     "switches_per_s": (switches - switches0) / seconds})
    return sorted(rows, key=lambda r: -r["cpu_ms_per_s"])


# --- the bench ----------------------------------------------------------------------------------


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.work = Path(tempfile.mkdtemp(prefix="slimplay-bench-"))
        os.chmod(self.work, 0o755)
        self.media_dir = self.work / "media"
        self.media_dir.mkdir()
        self.state_dir = self.work / "state"
        self.state_dir.mkdir()
        os.chmod(self.state_dir, 0o777)  # slimplay runs as nobody
        self.logs = self.work / "logs"
        self.logs.mkdir()
        os.chmod(self.logs, 0o777)
        # squeezelite as root mlockall()s every mapped page (its FFmpeg tree): run both players as
        # an ordinary user would.
        self.prefix = (
            ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] if os.geteuid() == 0 else []
        )
        # Another machine's userland (arm64 under qemu): the players, and valgrind, are its own; the
        # work folder (under /tmp) must be seen there at the same path.
        if args.userland:
            self.prefix = ["chroot", str(args.userland), *self.prefix]
        self.server = LoopbackServer()
        self.server.start()
        self.media_server = MediaServer(self.media_dir)
        # Stopping a player mid-stream resets its connection: not worth a traceback.
        self.media_server.httpd.handle_error = lambda request, address: None
        self.seconds_of: dict[str, float] = {}
        self.paced_server = bench_real.PacedFileServer("127.0.0.1", lambda path: self.seconds_of[path.name],
                                                       root=self.media_dir)
        self.counter = 0

    def close(self) -> None:
        self.media_server.close()
        self.paced_server.close()
        self.server.close()
        if self.args.keep:
            print(f"work folder kept: {self.work}", file=sys.stderr)
        else:
            shutil.rmtree(self.work, ignore_errors=True)

    # media

    def master(self, rate: int, bits: int, seconds: float) -> Path:
        """Pink noise (×0.07) under slowly moving tones: FLAC makes ~835 kbps of it at 16/44.1."""
        target = self.media_dir / f"master-{rate}-{bits}-{seconds:g}.wav"
        if not target.exists():
            s = f"{seconds:g}"
            noise = f"|sox -n -r {rate} -c 2 -p synth {s} pinknoise pinknoise vol 0.07"
            tones = (f"|sox -n -r {rate} -c 2 -p synth {s} sine 220 sine 331 synth {s} sine mix 440-880 "
                     f"sine mix 554 tremolo 0.3 40 vol 0.35")
            run("sox", "-D", "-m", noise, tones, "-b", str(bits), str(target))
        return target

    def encoded(self, codec: Codec, seconds: float) -> Path:
        wav = self.master(codec.rate, codec.bits, seconds)
        suffix = {"flac16": ".flac", "flac24": ".flac", "mp3": ".mp3", "opus": ".opus", "aac": ".m4a"}[codec.key]
        target = wav.with_suffix(suffix)
        if not target.exists():
            if suffix == ".flac":
                run("flac", "-s", "-f", "-o", str(target), str(wav))
            elif suffix == ".mp3":
                run("lame", "--quiet", "-b", "320", str(wav), str(target))
            elif suffix == ".m4a":
                run("ffmpeg", "-v", "error", "-y", "-i", str(wav), "-c:a", "aac", "-b:a", "256k", "-movflags",
                    "+faststart", str(target))
            else:
                run("opusenc", "--quiet", "--bitrate", "128", str(wav), str(target))
        self.seconds_of[target.name] = seconds
        return target

    def tool_command(self, codec: Codec, path: Path) -> list[str]:
        if codec.fmt == b"f":
            return ["flac", "-d", "-c", "-s", "--force-raw-format", "--endian=little", "--sign=signed", str(path)]
        if codec.fmt == b"m":
            return ["mpg123", "-q", "-s", str(path)]
        # opusdec resamples to the original input rate unless told otherwise; the players don't.
        return ["opusdec", "--quiet", "--no-dither", "--rate", "48000", str(path), "-"]

    # processes

    def command(self, player: str, output: list[str]) -> list[str]:
        common = ["-s", f"127.0.0.1:{self.server.port}", "-m", MACS[player]]
        if player == "slimplay":
            return [*self.prefix, self.args.slimplay, "--state-dir", str(self.state_dir), *common, *output]
        return [*self.prefix, self.args.squeezelite, *common, *output]

    def start(self, command: list[str], reader_rate: float | None, env: dict[str, str] | None = None) -> dict:
        """Starts a player; with a reader rate, its stdout goes to a reader process (0 = unpaced).
        `env`: added to this process's environment."""
        self.counter += 1
        log = open(self.logs / f"{self.counter:03d}-{Path(command[len(self.prefix)]).name}.log", "wb")
        report = self.work / f"reader-{self.counter}.json"
        started = time.monotonic()
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stderr=log, env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE if reader_rate is not None else subprocess.DEVNULL,
        )
        reader = None
        if reader_rate is not None:
            reader = subprocess.Popen(
                [sys.executable, str(READER), "--rate", str(reader_rate), "--report", str(report)],
                stdin=process.stdout, stdout=subprocess.DEVNULL,
            )
            process.stdout.close()
        log.close()
        return {"process": process, "reader": reader, "report": report, "started": started, "command": command}

    def stop(self, running: dict, mac: str | None = None) -> dict | None:
        bench_real.end_process(running["process"])
        result = None
        if running["reader"]:
            bench_real.end_process(running["reader"], terminate=False)
            if running["report"].exists():
                result = json.loads(running["report"].read_text())
        if mac:
            self.server.wait_for(lambda: self.server.player(mac) is None, timeout=5)
        return result

    def connect(self, running: dict, mac: str, timeout: float = 15):
        client = self.server.wait_for(lambda: self.server.player(mac), timeout=timeout, step=0.01)
        if not client:
            raise RuntimeError(f"{running['command']} did not register")
        return client

    def hello_of(self, mac: str, since: float):
        with self.server.recorder.lock:
            hellos = [h for h in self.server.recorder.hellos if h.mac == mac and h.received_at >= since]
        return hellos[0] if hellos else None

    def prepare(self, client) -> None:  # noqa: ANN001
        mute_resp(self.server, client)
        self.server.call(lambda: client.volume_set(100))  # unity gain for both

    def stats_count(self) -> int:
        with self.server.recorder.lock:
            return len(self.server.recorder.stats)

    def stat_after(self, index: int, event: str, timeout: float, step: float = 0.01):
        def find():
            with self.server.recorder.lock:
                return next((s for s in self.server.recorder.stats[index:] if s.event == event), None)

        return self.server.wait_for(find, timeout=timeout, step=step)

    def strm(self, client, codec: Codec, path: Path, paced: bool = False) -> float:  # noqa: ANN001
        port = self.paced_server.port if paced else self.media_server.port
        sent = time.monotonic()
        self.server.call(lambda: lms_style_strm(client, port, "/" + path.name, fmt=codec.fmt, details=codec.details))
        return sent

    # measurements

    def sizes(self) -> dict:
        # In another machine's userland the paths are its own, and so are `ldd` and the packages'
        # binaries (installed stripped, and this machine's strip cannot read them).
        userland = self.args.userland
        inside = ["chroot", str(userland)] if userland else []

        def on_disk(path: str) -> str:
            return os.path.realpath(f"{userland}{path}" if userland else path)

        def shared_libraries(binary: str) -> int:
            out = subprocess.run([*inside, "ldd", binary], capture_output=True, text=True).stdout
            paths = set()
            for line in out.splitlines():
                parts = line.split("=>")
                candidate = (parts[1] if len(parts) > 1 else parts[0]).strip().split(" (")[0].strip()
                if candidate.startswith("/"):
                    paths.add(on_disk(candidate))
            return sum(os.path.getsize(p) for p in paths)

        def stripped_size(player: str, binary: str) -> int:
            if userland:
                return os.path.getsize(on_disk(binary))
            stripped = self.work / f"{player}.stripped"
            run("strip", "-o", str(stripped), binary)
            return os.path.getsize(stripped)

        return {
            player: {
                "binary_bytes": os.path.getsize(on_disk(binary)),
                "stripped_bytes": stripped_size(player, binary),
                "shared_libraries_bytes": shared_libraries(binary),
            }
            for player, binary in (("slimplay", self.args.slimplay), ("squeezelite", self.args.squeezelite))
        }

    def emulator_alone(self) -> dict:
        """What the userland's emulator holds by itself: VmRSS of its `sleep` (qemu translating one
        small program), the share of each player's VmRSS that is the emulator's and not the player's."""
        process = subprocess.Popen(["chroot", str(self.args.userland), "sleep", "5"])
        try:
            time.sleep(2)
            status = proc_status(process.pid)
            return {"rss_kb": int(status["VmRSS"].split()[0]), "rss_anon_kb": int(status["RssAnon"].split()[0])}
        finally:
            process.wait()

    def idle(self, player: str) -> dict:
        # squeezelite keeps its output open and writes silence while stopped: `-C 1` closes it.
        output = ["-o", "null"] if player == "slimplay" else ["-o", "null", "-C", "1"]
        return idle_measure(self.command(player, output), MACS[player], self.server, self.args.idle_settle,
                            self.args.idle_window)

    def startup(self, player: str, codec: Codec, path: Path) -> dict:
        """Process start → HELO, and → first non-zero PCM byte on stdout when the server sends
        strm s the moment the player has registered."""
        mac = MACS[player]
        sent: list[float] = []

        def on_connect(event) -> None:  # noqa: ANN001 (runs on the server's loop)
            client = self.server.server.get_player(mac)
            mute_resp(self.server, client)
            sent.append(time.monotonic())
            asyncio.get_running_loop().create_task(
                lms_style_strm(client, self.media_server.port, "/" + path.name, fmt=codec.fmt))

        unsubscribe = self.server.server.subscribe(on_connect, EventType.PLAYER_CONNECTED, mac)
        index = self.stats_count()
        running = self.start(self.command(player, ["-o", "-", "-a", str(codec.out_bits)]), reader_rate=0)
        try:
            self.connect(running, mac)
            hello = self.hello_of(mac, running["started"])
            self.stat_after(index, "STMs", timeout=15)
            time.sleep(0.3)
        finally:
            report = self.stop(running, mac)
            unsubscribe()
        first = report and report["first_nonzero_at"]
        return {
            "hello_s": hello.received_at - running["started"] if hello else None,
            "first_audio_s": first - running["started"] if first else None,
            "strm_to_first_audio_s": first - sent[0] if first and sent else None,
        }

    def playing(self, player: str, codec: Codec, path: Path, seconds: float, stdout: bool = False,
                paced_stream: bool = False) -> dict:
        """CPU, memory and threads while playing at real time. slimplay plays to `-o null`, which
        keeps real time itself; with `stdout` it plays like squeezelite does here. With
        `paced_stream` the file arrives at its own bit rate, like internet radio."""
        mac = MACS[player]
        if player == "slimplay" and not stdout:
            running = self.start(self.command(player, ["-o", "null"]), reader_rate=None)
        else:
            # No paced null output in squeezelite: stdout into a reader that takes real time.
            running = self.start(self.command(player, ["-o", "-", "-a", str(codec.out_bits)]),
                                 reader_rate=codec.out_bytes_per_second)
        try:
            client, hello = self.ready(running, mac, codec, settle=0.5)
            if client is None:
                return {"supported": False}
            index = self.stats_count()
            sent = self.strm(client, codec, path, paced=paced_stream)
            stms = self.stat_after(index, "STMs", timeout=20)
            if not stms:
                raise RuntimeError(f"{player}: no STMs for {codec.label}")
            # Measure only while playing and while the decoder still has input: it runs one output
            # buffer ahead of what is heard.
            window_start = stms.received_at + self.args.lead
            # (A paced stream keeps the decoder busy to the end: it only waits for the network.)
            latest_end = stms.received_at + seconds - (0 if paced_stream else codec.buffer_seconds) - 1.5
            window_end = min(window_start + self.args.window, latest_end)
            if window_end - window_start < 1:
                raise RuntimeError(f"--seconds {seconds} is too short for a CPU window with {codec.label}")
            pid = running["process"].pid
            time.sleep(max(0.0, window_start - time.monotonic()))
            before = cpu_sample(pid)
            measured_from = time.monotonic()
            peak = {"rss_kb": 0, "rss_anon_kb": 0, "threads": 0}
            while time.monotonic() < window_end:
                status = proc_status(pid)
                peak["rss_kb"] = max(peak["rss_kb"], int(status["VmRSS"].split()[0]))
                peak["rss_anon_kb"] = max(peak["rss_anon_kb"], int(status["RssAnon"].split()[0]))
                peak["threads"] = max(peak["threads"], int(status["Threads"]))
                time.sleep(min(0.25, max(0.0, window_end - time.monotonic())))
            after = cpu_sample(pid)
            window = time.monotonic() - measured_from
            cpu = cpu_between(before, after)
            decoded = self.stat_after(index, "STMd", timeout=0)
        finally:
            report = self.stop(running, mac)
        return {
            "supported": True,
            "window_s": window,
            "cpu_s": cpu,
            "cpu_ticks_s": after["ticks"] - before["ticks"],
            "wakeups_per_s": sum(t["switches_per_s"] for t in per_thread(before, after, window)),
            "threads_cpu": per_thread(before, after, window),
            "cpu_s_per_audio_min": 60 * cpu / window,
            "cpu_percent": 100 * cpu / window,
            **peak,
            "hello_s": hello.received_at - running["started"] if hello else None,
            "strm_to_stms_s": stms.received_at - sent,
            # Sanity: the decoder must not have finished inside the window.
            "decoder_done_in_window": bool(decoded and decoded.received_at < window_end),
            "reader": report,
        }

    def ready(self, running: dict, mac: str, codec: Codec, settle: float):  # noqa: ANN201
        """Waits for the player to register; (None, hello) when it does not offer the codec."""
        client = self.connect(running, mac)
        hello = self.hello_of(mac, running["started"])
        if hello and codec.token not in hello.capabilities.split(","):
            return None, hello
        self.prepare(client)
        time.sleep(settle)
        return client, hello

    def throughput(self, player: str, codec: Codec, path: Path, seconds: float) -> dict:
        """Unpaced: `-o -` into a reader that takes everything at once; strm s → last audio byte."""
        mac = MACS[player]
        running = self.start(self.command(player, ["-o", "-", "-a", str(codec.out_bits)]), reader_rate=0)
        try:
            client, hello = self.ready(running, mac, codec, settle=0.3)
            if client is None:
                return {"supported": False}
            index = self.stats_count()
            pid = running["process"].pid
            before = cpu_sample(pid)
            sent = self.strm(client, codec, path)
            done = self.stat_after(index, "STMu", timeout=max(60, seconds * 2), step=0.005)
            after = cpu_sample(pid)
        finally:
            report = self.stop(running, mac)
        if not done or not report or not report["last_nonzero_at"]:
            return {"supported": True, "failed": True, "reader": report}
        wall = report["last_nonzero_at"] - sent
        cpu = cpu_between(before, after)
        audio_bytes = report["last_nonzero_end"] - report["first_nonzero_offset"]
        return {
            "supported": True,
            "wall_s": wall,
            "cpu_s": cpu,
            "x_realtime_wall": seconds / wall,
            "x_realtime_cpu": seconds / cpu,
            "audio_seconds_out": audio_bytes / codec.out_bytes_per_second,
        }

    def tool(self, codec: Codec, path: Path, seconds: float) -> dict:
        """The bare library's command-line decoder on the same file, into the same unpaced reader."""
        report = self.work / f"reader-tool-{codec.key}.json"
        read_end, write_end = os.pipe()
        reader = subprocess.Popen([sys.executable, str(READER), "--rate", "0", "--report", str(report)],
                                  stdin=read_end)
        os.close(read_end)
        time.sleep(0.3)  # the reader's own start-up is not the tool's
        started = time.monotonic()
        process = subprocess.Popen(self.tool_command(codec, path), stdout=write_end, stderr=subprocess.DEVNULL)
        os.close(write_end)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        reader.wait()
        cpu = usage.ru_utime + usage.ru_stime
        return {"wall_s": wall, "cpu_s": cpu, "x_realtime_wall": seconds / wall, "x_realtime_cpu": seconds / cpu,
                "exit": process.returncode}

    def start_under_callgrind(self, out: Path, out_bits: int, options: list[str] | None = None,
                              player: str = "slimplay") -> dict:
        """A player under callgrind, `-o -` into an unpaced reader."""
        binary = Path(self.args.slimplay if player == "slimplay" else self.args.squeezelite)
        if not self.args.userland:  # a userland's installed binaries carry no debug information
            binary = without_debug_information(binary, self.work)
        # Fair scheduling: valgrind runs one thread at a time, and by default a thread that spins
        # can keep the others from ever running.
        valgrind = ["valgrind", "--tool=callgrind", "--fair-sched=yes", *(options or []),
                    f"--callgrind-out-file={out}"]
        command = self.command(player, ["-o", "-", "-a", str(out_bits)])
        binary_at = len(self.prefix)
        command[binary_at] = str(binary)
        # callgrind opens its output file at start, as the unprivileged user; the caller closes
        # the folder again when the run is over.
        os.chmod(self.work, 0o777)
        return self.start([*command[:binary_at], *valgrind, *command[binary_at:]], reader_rate=0)

    def executed_functions(self, codec: Codec | None, seconds: float) -> dict[str, int]:
        """The functions slimplay runs from start to stop, by mangled name (as the linker knows
        them), with how often each was called (callgrind): playing `codec`, or with None only
        starting, registering and stopping."""
        out = self.work / f"order-{codec.key if codec else 'start'}.out"
        running = self.start_under_callgrind(out, codec.out_bits if codec else 16,
                                             ["--demangle=no", "--dump-instr=no", "--dump-line=no"])
        try:
            client = self.connect(running, MACS["slimplay"], timeout=120)
            if codec:
                self.prepare(client)
                index = self.stats_count()
                self.strm(client, codec, self.encoded(codec, seconds))
                if not self.stat_after(index, "STMu", timeout=600, step=0.05):
                    raise RuntimeError("callgrind run: no STMu")
                time.sleep(6)  # heartbeats and status polls while stopped
        finally:
            self.stop(running, MACS["slimplay"])
            os.chmod(self.work, 0o755)
        return callgrind_calls(out)

    def profiled_functions(self, binary: Path, codec: Codec | None, output: str, seconds: float) -> dict[str, int]:
        """Every Swift function an instrumented slimplay (`-profile-generate`) can count, with how
        often it was entered (0: never), running at full speed: callgrind's slow motion changes
        which paths the network and timer code take, and those paths count too. `codec` None: only
        start, register and stop; `output` "null" plays at real time, "-" unpaced."""
        folder = self.work / f"profile-{codec.key if codec else 'start'}-{'null' if output == 'null' else 'stdout'}"
        folder.mkdir()
        os.chmod(folder, 0o777)
        command = self.command("slimplay", ["-o", output] if output == "null" else ["-o", "-", "-a", "24"])
        command[len(self.prefix)] = str(binary)
        running = self.start(command, reader_rate=None if output == "null" else 0,
                             env={"LLVM_PROFILE_FILE": str(folder / "%p.profraw")})
        try:
            client = self.connect(running, MACS["slimplay"])
            if codec:
                self.prepare(client)
                index = self.stats_count()
                self.strm(client, codec, self.encoded(codec, seconds))
                if not self.stat_after(index, "STMu", timeout=seconds + 30, step=0.05):
                    raise RuntimeError("profiled run: no STMu")
            time.sleep(4)  # heartbeats and status polls while stopped
        finally:
            self.stop(running, MACS["slimplay"])
        return profile_counts(folder)

    def callgrind(self, codec: Codec, seconds_list: tuple[float, float], player: str = "slimplay") -> dict:
        """Instructions (callgrind Ir, whole process) of a player decoding with `-o -` unpaced."""
        totals, top, by_object = {}, {}, {}
        for seconds in seconds_list:
            path = self.encoded(codec, seconds)
            out = self.work / f"callgrind-{player}-{codec.key}-{seconds:g}.out"
            running = self.start_under_callgrind(out, codec.out_bits, player=player)
            try:
                client = self.connect(running, MACS[player], timeout=300)
                self.prepare(client)
                index = self.stats_count()
                self.strm(client, codec, path)
                if not self.stat_after(index, "STMu", timeout=1800, step=0.05):
                    raise RuntimeError("callgrind run: no STMu")
            finally:
                self.stop(running, MACS[player])
                os.chmod(self.work, 0o755)
            for line in out.read_text().splitlines():
                if line.startswith(("summary:", "totals:")):
                    totals[seconds] = int(line.split()[1])
                    break
            annotated = subprocess.run(["callgrind_annotate", "--threshold=100", str(out)], capture_output=True,
                                       text=True).stdout
            functions = [line.strip() for line in annotated.splitlines() if line.rstrip().endswith("]") and "%)" in line]
            top[f"{seconds:g}"] = [line[:160] for line in functions[:12]]
            # Self cost by object: the codec library, libc, slimplay's own code (and its Swift runtime).
            objects: dict[str, int] = {}
            for line in functions:
                count = int(line.split()[0].replace(",", ""))
                name = Path(line[line.rindex("[") + 1 : -1]).name
                kind = "slimplay" if name.startswith("slimplay") else name.split(".so")[0]
                objects[kind] = objects.get(kind, 0) + count
            by_object[f"{seconds:g}"] = objects
        short, long = seconds_list
        return {
            "instructions": {f"{s:g}": n for s, n in totals.items()},
            "per_audio_second": totals[long] / long,
            "marginal_per_audio_second": (totals[long] - totals[short]) / (long - short),
            "top_functions_self": top,
            "by_object": by_object,
            "marginal_by_object_per_audio_second": {
                k: (by_object[f"{long:g}"].get(k, 0) - by_object[f"{short:g}"].get(k, 0)) / (long - short)
                for k in by_object[f"{long:g}"]
            },
        }


# --- the report ---------------------------------------------------------------------------------


def run_real_path(args: argparse.Namespace, parts: set[str], progress) -> tuple[list, dict]:  # noqa: ANN001
    """The real LMS, both squeezelite builds, slimplay at its defaults: see bench_real.py."""
    if os.geteuid() != 0:
        raise SystemExit("the real-path parts need root (LMS, control groups); --only sizes,throughput runs without")
    players = [
        bench_real.PlayerSpec("slimplay", "slimplay", args.slimplay, "02:00:00:00:be:21", slimplay=True,
                              extra_args=shlex.split(args.slimplay_args)),
        bench_real.PlayerSpec("squeezelite-debian", "squeezelite 1.9.9 (Debian)", args.squeezelite, "02:00:00:00:be:22"),
    ]
    if args.squeezelite_upstream:
        players.append(bench_real.PlayerSpec("squeezelite-upstream", "squeezelite 2.0.0 (upstream)",
                                             args.squeezelite_upstream, "02:00:00:00:be:23"))
    albums = [a for a in [*bench_real.ALBUMS, bench_real.DSD, bench_real.RADIO, bench_real.RADIO_TLS] if a.key in args.albums.split(",")]
    work = Path(tempfile.mkdtemp(prefix="slimplay-bench-real-"))
    os.chmod(work, 0o755)
    results: dict = {}
    try:
        with bench_real.RealPathBench(work, players, args.track_seconds, args.radio_seconds, progress,
                                      keep_captures=args.keep_captures) as bench:
            if "real" in parts:
                results["real"] = {a.key: {p.key: [] for p in players} for a in albums}
                for i in range(args.runs):
                    for album in albums:
                        # who starts first changes each run
                        turn = players[i % len(players):] + players[: i % len(players)]
                        progress(f"real path, run {i + 1}, {album.label}: {', '.join(p.key for p in turn)}")
                        for key, value in bench.session(album, turn).items():
                            results["real"][album.key][key].append(value)
            if "quota" in parts:
                results["quota"] = {a.key: bench.smallest(a, "quota", QUOTA_FLOOR, 0.5, args.quota_steps, players)
                                    for a in albums}
            if "memory" in parts:
                flac = bench_real.ALBUMS[0]
                results["memory"] = {flac.key: bench.smallest(flac, "memory", 3 * 2**20, 96 * 2**20,
                                                              args.memory_steps, players)}
    finally:
        if args.keep or args.keep_captures:
            print(f"real-path work folder kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return players, results


def real_path_profile(args: argparse.Namespace, progress) -> dict[str, int]:  # noqa: ANN001
    """The instrumented build through the real LMS at its defaults (offline on: status polls,
    downloads, verification, state saves), a FLAC and an MP3 album: the functions a user's player
    runs, with how often each was entered."""
    work = Path(tempfile.mkdtemp(prefix="slimplay-profile-real-"))
    os.chmod(work, 0o755)
    folder = work / "profiles"
    folder.mkdir()
    os.chmod(folder, 0o777)
    spec = bench_real.PlayerSpec("slimplay-profiled", "slimplay (instrumented)", str(args.profiled_slimplay),
                                 "02:00:00:00:be:2f", slimplay=True,
                                 environment={"LLVM_PROFILE_FILE": str(folder / "%p.profraw")})
    try:
        with bench_real.RealPathBench(work, [spec], args.track_seconds, args.radio_seconds, progress) as bench:
            for album in (a for a in bench_real.ALBUMS if a.key in ("flac16", "mp3")):
                progress(f"functions run on the real path, {album.label} (instrumented build)")
                bench.session(album, [spec])
        return profile_counts(folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def without_debug_information(binary: Path, folder: Path) -> Path:
    """A copy of `binary` in `folder` without debug information (same code, symbols kept):
    valgrind 3.19 cannot read the DWARF 5 the Swift toolchain writes."""
    copy = folder / f"{binary.name}.nodebug"
    if not copy.exists():
        run("strip", "--strip-debug", "-o", str(copy), str(binary))
    return copy


def callgrind_calls(out: Path) -> dict[str, int]:
    """Each function in a callgrind output file (`--demangle=no`), with how often it was called."""
    # Names are compressed: "(id) name" the first time, "(id)" after.
    names: dict[str, str] = {}
    calls: dict[str, int] = {}
    callee = None
    for line in out.read_text(errors="replace").splitlines():
        if line.startswith(("fn=(", "cfn=(")):
            key, _, name = line.strip().split("=", 1)[1].partition(" ")
            if name:
                names[key] = name.strip()
            calls.setdefault(names.get(key, key), 0)
            callee = names.get(key) if line.startswith("cfn=") else None
        elif line.startswith("calls=") and callee:
            calls[callee] += int(line.split("=", 1)[1].split()[0])
    return calls


def real_path_callgrind(args: argparse.Namespace, progress, settle: float = 30) -> dict[str, int]:  # noqa: ANN001
    """The release build itself under callgrind, through the real LMS at its defaults, a FLAC
    album: every function the linker will place, the runtime's and the libraries' code included,
    by the names the release build gives them (the instrumented build inlines differently, so
    some of what a user's player runs on each status poll has no name there). Counted from
    `settle` seconds after the player started, when it has dropped the code it used to start and
    to start playing: what it runs from then on (polls, saves, downloads, track changes) is what
    stays resident."""
    work = Path(tempfile.mkdtemp(prefix="slimplay-callgrind-real-"))
    os.chmod(work, 0o777)
    binary = without_debug_information(Path(args.slimplay), work)
    wrapper = work / "slimplay-under-callgrind"
    wrapper.write_text("#!/bin/sh\nexec valgrind --tool=callgrind --fair-sched=yes --demangle=no --dump-instr=no "
                       f"--dump-line=no --callgrind-out-file={work}/callgrind.%p.out {binary} \"$@\"\n")
    wrapper.chmod(0o755)
    spec = bench_real.PlayerSpec("slimplay-callgrind", "slimplay (callgrind)", str(wrapper), "02:00:00:00:be:2e",
                                 slimplay=True)

    def zero_when_settled(user: list[str]) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            found = subprocess.run(["pgrep", "-f", f"callgrind-out-file={work}/"], capture_output=True, text=True)
            if pids := found.stdout.split():
                time.sleep(settle)
                # vgdb finds the player's pipes only as the player's own user.
                subprocess.run([*user, "callgrind_control", "--zero", pids[0]], capture_output=True, timeout=60)
                return
            time.sleep(0.1)

    try:
        with bench_real.RealPathBench(work, [spec], args.track_seconds, args.radio_seconds, progress) as bench:
            bench.register_timeout = 120  # callgrind's start-up reads the whole binary
            album = next(a for a in bench_real.ALBUMS if a.key == "flac16")
            progress(f"functions run on the real path, {album.label}, once settled (callgrind, slow motion)")
            zeroing = threading.Thread(target=zero_when_settled, args=(bench.prefix,), daemon=True)
            zeroing.start()
            bench.session(album, [spec])
            zeroing.join()
        calls: dict[str, int] = {}
        for out in work.glob("callgrind.*.out"):
            for name, count in callgrind_calls(out).items():
                calls[name] = calls.get(name, 0) + count
        ran = sum(1 for c in calls.values() if c > 0)
        progress(f"{ran} functions ran once settled")
        if ran == 0:
            raise RuntimeError("callgrind on the real path counted nothing")
        return calls
    finally:
        shutil.rmtree(work, ignore_errors=True)


def profile_counts(folder: Path) -> dict[str, int]:
    """Entry counts of every function in the `.profraw` files of `folder`."""
    merged = folder / "merged.txt"
    # The toolchain's own llvm-profdata: the raw format follows the compiler's version.
    profdata = Path(shutil.which("swiftc") or "swiftc").resolve().parent / "llvm-profdata"
    run(str(profdata), "merge", "--text", "-o", str(merged), *map(str, folder.glob("*.profraw")))
    counts: dict[str, int] = {}
    for block in merged.read_text(errors="replace").split("\n\n"):
        lines = block.strip().splitlines()
        if "# Counter Values:" not in lines or lines[0].startswith("#"):
            continue
        values = lines[lines.index("# Counter Values:") + 1:]
        # Private functions carry their file: "path:$s…".
        name = lines[0][lines[0].find(":$") + 1:] if ":$" in lines[0] else lines[0]
        if values and values[0].strip().isdigit():
            counts[name] = counts.get(name, 0) + int(values[0])
    return counts


def fmt(value: float | None, digits: int) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}"


def build_rows(results: dict, args: argparse.Namespace) -> list[dict]:
    rows: list[dict] = []

    def add(group: str, metric: str, a: float | None, b: float | None, digits: int, columns=PLAYERS) -> None:
        ratio = a / b if a is not None and b not in (None, 0) else None
        rows.append({"group": group, "metric": metric, "a": a, "b": b, "ratio": ratio, "digits": digits,
                     "columns": list(columns)})

    def med(section: dict, player: str, key: str) -> float | None:
        return median([r.get(key) for r in section.get(player, []) if r.get("supported", True)])

    def both(section: dict, key: str, scale: float = 1) -> tuple[float | None, float | None]:
        return tuple(None if (v := med(section, p, key)) is None else v * scale for p in PLAYERS)

    if "sizes" in results:
        s = results["sizes"]
        group = "binary (MB)"
        for key, label in [("binary_bytes", "file"), ("stripped_bytes", "stripped (strip -o)"),
                           ("shared_libraries_bytes", "shared libraries it links (ldd, on disk)")]:
            add(group, label, s["slimplay"][key] / 1e6, s["squeezelite"][key] / 1e6, 2)

    if "idle" in results:
        idle = results["idle"]
        group = f"idle, connected ({args.idle_window:g} s window; squeezelite -C 1)"
        add(group, "VmRSS MB", *both(idle, "rss_kb", 1 / 1024), 1)
        add(group, "RssAnon MB", *both(idle, "rss_anon_kb", 1 / 1024), 1)
        add(group, "threads", *both(idle, "threads"), 0)
        add(group, "CPU % of one core", *both(idle, "cpu_percent"), 2)

    if "startup" in results:
        st = results["startup"]
        group = "startup (ms)"
        add(group, "process start → HELO", *both(st, "hello_s", 1000), 1)
        add(group, "process start → first audio on stdout", *both(st, "first_audio_s", 1000), 1)
        add(group, "strm s → first audio on stdout", *both(st, "strm_to_first_audio_s", 1000), 1)
        play = results.get("playing", {}).get("flac16", {})
        if play:
            add(group, "strm s → STMs (FLAC 16/44.1, paced output)", *both(play, "strm_to_stms_s", 1000), 1)

    if "playing" in results:
        group = f"playing at real time, file from the LMS-like server ({args.window:g} s window)"
        if args.userland:
            group += f", in {args.userland.name}: CPU is the emulator's, not the device's"
        for codec in CODECS:
            section = results["playing"].get(codec.key)
            if section:
                add(group, f"{codec.label}: CPU s per audio minute", *both(section, "cpu_s_per_audio_min"), 3)
                add(group, f"{codec.label}: CPU % of one core", *both(section, "cpu_percent"), 2)
        for codec in CODECS:
            section = results["playing"].get(codec.key)
            if section:
                add(group, f"{codec.label}: context switches per s", *both(section, "wakeups_per_s"), 0)
        control = results.get("playing_stdout", {}).get("flac16")
        if control:
            add(group, "FLAC 16/44.1: CPU %, both `-o -` into the paced reader",
                med(control, "slimplay", "cpu_percent"), med(results["playing"]["flac16"], "squeezelite",
                                                              "cpu_percent"), 2)
        section = results["playing"].get("flac16")
        if section:
            group = "memory while playing FLAC 16/44.1 (peak in the window)"
            add(group, "VmRSS MB", *both(section, "rss_kb", 1 / 1024), 1)
            add(group, "RssAnon MB", *both(section, "rss_anon_kb", 1 / 1024), 1)
            add(group, "threads", *both(section, "threads"), 0)
            if alone := results.get("emulator_alone"):
                # Each process is the emulator and its player: what the emulator holds alone is taken off.
                for key, label in (("rss_kb", "VmRSS"), ("rss_anon_kb", "RssAnon")):
                    add(group, f"{label} MB less the emulator's alone ({alone[key] / 1024:.1f} MB)",
                        *(None if v is None else (v - alone[key]) / 1024 for v in both(section, key)), 1)

    if "radio" in results:
        group = f"playing a stream that arrives at its own bit rate, like internet radio ({args.window:g} s window)"
        for codec in CODECS:
            section = results["radio"].get(codec.key)
            if section:
                add(group, f"{codec.label}: CPU % of one core", *both(section, "cpu_percent"), 2)

    if "throughput" in results:
        group = f"decode unpaced, {args.long_seconds:g} s of audio, × real time (higher is faster)"
        for codec in CODECS:
            section = results["throughput"].get(codec.key)
            if section:
                add(group, f"{codec.label}: strm s → last sample, wall clock", *both(section, "x_realtime_wall"), 0)
        group = "decode unpaced against the bare library's tool, × real time per CPU second (higher is faster)"
        for codec in CODECS:
            section = results["throughput"].get(codec.key)
            if section:
                tool = median([r["x_realtime_cpu"] for r in section.get("tool", [])])
                name = {"f": "flac -d", "m": "mpg123", "u": "opusdec"}[codec.fmt.decode()]
                add(group, f"{codec.label} (tool: {name})", med(section, "slimplay", "x_realtime_cpu"), tool, 0,
                    columns=("slimplay", "tool"))
        group = "decode unpaced against the bare library's tool, wall clock × real time (higher is faster)"
        for codec in CODECS:
            section = results["throughput"].get(codec.key)
            if section:
                tool = median([r["x_realtime_wall"] for r in section.get("tool", [])])
                name = {"f": "flac -d", "m": "mpg123", "u": "opusdec"}[codec.fmt.decode()]
                add(group, f"{codec.label} (tool: {name})", med(section, "slimplay", "x_realtime_wall"), tool, 0,
                    columns=("slimplay", "tool"))

    if "callgrind" in results:
        machine = f", in {args.userland.name}" if args.userland else ""
        group = f"callgrind{machine}, `-o -` unpaced, million instructions per audio second (lower is better)"
        for key, players in results["callgrind"].items():
            label = next(c.label for c in [*CODECS, AAC] if c.key == key)
            mine, theirs = players["slimplay"], players["squeezelite"]
            add(group, f"{label}: whole run ÷ audio seconds", mine["per_audio_second"] / 1e6,
                theirs["per_audio_second"] / 1e6, 1)
            add(group, f"{label}: marginal (long run − short run)", mine["marginal_per_audio_second"] / 1e6,
                theirs["marginal_per_audio_second"] / 1e6, 1)
            for name, count in sorted(mine["marginal_by_object_per_audio_second"].items(), key=lambda kv: -kv[1]):
                if count >= 0.05 * mine["marginal_per_audio_second"]:
                    add(group, f"{label}: slimplay's marginal, in {name}", count / 1e6, None, 1,
                        columns=("slimplay", "-"))
    return rows


def render(rows: list[dict], header: str) -> str:
    width = max(len(r["metric"]) for r in rows) + 2
    lines = [header]
    group = None
    for row in rows:
        if row["group"] != group:
            group = row["group"]
            a_name, b_name = row["columns"]
            lines += ["", f"{group}", f"  {'metric':<{width}}{a_name:>12}{b_name:>14}{'ratio':>8}"]
        d = row["digits"]
        ratio = "n/a" if row["ratio"] is None else f"{row['ratio']:.2f}"
        lines.append(f"  {row['metric']:<{width}}{fmt(row['a'], d):>12}{fmt(row['b'], d):>14}{ratio:>8}")
    return "\n".join(lines)


def markdown(rows: list[dict]) -> str:
    lines = []
    group = None
    for row in rows:
        if row["group"] != group:
            group = row["group"]
            a_name, b_name = row["columns"]
            lines += ["", f"**{group}**", "", f"| metric | {a_name} | {b_name} | ratio |", "|---|---:|---:|---:|"]
        d = row["digits"]
        ratio = "n/a" if row["ratio"] is None else f"{row['ratio']:.2f}"
        lines.append(f"| {row['metric']} | {fmt(row['a'], d)} | {fmt(row['b'], d)} | {ratio} |")
    return "\n".join(lines).strip() + "\n"


# --- main ---------------------------------------------------------------------------------------

PARTS = ("real", "quota", "memory", "sizes", "idle", "startup", "playing", "radio", "throughput", "callgrind",
         "pinned")
REAL_PARTS = {"real", "quota", "memory"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slimplay", required=True, help="the slimplay binary")
    parser.add_argument("--slimplay-args", default="", help="extra slimplay options, e.g. '-d all=debug'")
    parser.add_argument("--squeezelite", default="/usr/bin/squeezelite", help="Debian's squeezelite")
    parser.add_argument("--squeezelite-upstream", help="the lean upstream build (codecs loaded at run time)")
    parser.add_argument("--track-seconds", type=float, default=20,
                        help="real path: length of each album track (3 per album)")
    parser.add_argument("--radio-seconds", type=float, default=40, help="real path: length of the radio-like stream")
    parser.add_argument("--quota-steps", type=int, default=6, help="bisection steps for the CPU quota")
    parser.add_argument("--memory-steps", type=int, default=6, help="bisection steps for the memory limit")
    parser.add_argument("--albums", default="flac16,flac24,mp3,wav,radio", help="real path: which albums")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=40, help="length of the media played at real time")
    parser.add_argument("--window", type=float, default=8, help="CPU window while playing, seconds")
    parser.add_argument("--lead", type=float, default=1.5, help="seconds after STMs before the window opens")
    parser.add_argument("--long-seconds", type=float, default=120, help="length of the media decoded unpaced")
    parser.add_argument("--idle-window", type=float, default=8)
    parser.add_argument("--idle-settle", type=float, default=2)
    parser.add_argument("--radio-codecs", default="flac16,mp3", help="codecs for the radio-like part")
    parser.add_argument("--only", default="real,quota,memory,sizes,throughput",
                        help=f"comma-separated parts: {','.join(PARTS)}")
    parser.add_argument("--callgrind", action="store_true", help="also count instructions under callgrind (slow)")
    parser.add_argument("--callgrind-seconds", default="5,20",
                        help="callgrind: the two lengths of audio (the marginal count is their difference)")
    parser.add_argument("--userland", type=Path,
                        help="run the players (paths inside it) and valgrind in this userland (chroot), e.g. arm64's "
                             "under qemu; only the callgrind part")
    parser.add_argument("--quick", action="store_true", help="smoke run: 1 run, short media and windows")
    parser.add_argument("--json", type=Path, default=Path("bench-results.json"))
    parser.add_argument("--markdown", type=Path, help="also write the table as Markdown")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (media, logs)")
    parser.add_argument("--keep-captures", action="store_true",
                        help="real path: also keep each player's capture in the work folder (implies --keep)")
    parser.add_argument("--profiled-slimplay", type=Path,
                        help="with --link-order: a build of slimplay with -profile-generate, run at full speed")
    parser.add_argument("--link-order", type=Path,
                        help="instead of measuring, write the functions slimplay runs (callgrind) to this file for "
                             "the linker: those that run while playing first, then start-up")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.seconds, args.window, args.long_seconds = 1, 16, 2, 20
        args.idle_window, args.idle_settle, args.lead = 2, 1, 1
        args.track_seconds, args.radio_seconds, args.quota_steps, args.memory_steps = 6, 12, 2, 2
    parts = set(args.only.split(","))
    if args.callgrind:
        parts.add("callgrind")
    if unknown := parts - set(PARTS):
        parser.error(f"unknown parts: {', '.join(sorted(unknown))}")
    if args.userland and not parts <= {"callgrind", "playing", "sizes"}:
        parser.error("--userland runs only the callgrind, playing and sizes parts: give --only with them")
    # aioslimproto's heartbeat tasks are still pending when the server's loop stops: not news.
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)

    began = time.monotonic()

    def progress(text: str) -> None:
        print(f"[{time.monotonic() - began:6.1f} s] {text}", file=sys.stderr, flush=True)

    real_results: dict = {}
    real_players: list = []
    if parts & REAL_PARTS and not args.link_order:
        real_players, real_results = run_real_path(args, parts, progress)
    bench = Bench(args)
    results: dict = {}
    bitrates: dict = {}

    def order(run_index: int) -> tuple[str, ...]:
        return PLAYERS if run_index % 2 == 0 else PLAYERS[::-1]

    if args.link_order:
        try:
            progress("functions run to start, register and stop (callgrind)")
            start = bench.executed_functions(None, 0)
            playing: dict[str, int] = {}
            for codec in CODECS:
                progress(f"functions run while playing {codec.label} (callgrind)")
                for name, count in bench.executed_functions(codec, 3).items():
                    playing[name] = playing.get(name, 0) + count - start.get(name, 0)
            profiled_start: dict[str, int] = {}
            profiled_playing: dict[str, int] = {}
            if args.profiled_slimplay:
                progress("functions run to start, register and stop (instrumented build)")
                profiled_start = bench.profiled_functions(args.profiled_slimplay, None, "null", 0)
                for codec in CODECS:
                    for output in ("null", "-"):
                        progress(f"functions run while playing {codec.label} to -o {output} (instrumented build)")
                        for name, count in bench.profiled_functions(args.profiled_slimplay, codec, output, 5).items():
                            profiled_playing[name] = profiled_playing.get(name, 0) + count - profiled_start.get(name, 0)
        finally:
            bench.close()
        if args.profiled_slimplay and os.geteuid() == 0:
            for name, count in real_path_profile(args, progress).items():
                profiled_playing[name] = profiled_playing.get(name, 0) + count - profiled_start.get(name, 0)
        steady = real_path_callgrind(args, progress) if os.geteuid() == 0 else {}
        names, hot_count, cold_count = link_order(Path(args.slimplay), start, playing, profiled_start,
                                                  profiled_playing, steady)
        args.link_order.write_text("".join(f"{name}\n" for name in names))
        progress(f"{hot_count} functions that run while playing, then {cold_count} others, written to "
                 f"{args.link_order}")
        return

    def kbps(path: Path, seconds: float) -> float:
        return round(path.stat().st_size * 8 / seconds / 1000)

    radio_codecs = [c for c in CODECS if c.key in args.radio_codecs.split(",")]
    try:
        if "sizes" in parts:
            results["sizes"] = bench.sizes()
        if "pinned" in parts:
            # slimplay alone: idle with 5 GB pinned and 5,000 cached tracks against an empty cache,
            # and its library API's answers over that cache (scripts/pinned_footprint.py).
            import pinned_footprint

            progress("pinned: making a cache of 5,000 tracks, 5 GB pinned (sparse files)")
            results["pinned"] = pinned_footprint.run(args.slimplay, bench.work / "pinned", runs=args.runs)
            print("\n".join(pinned_footprint.summary(results["pinned"])), flush=True)
        if "idle" in parts:
            results["idle"] = {p: [] for p in PLAYERS}
            for i in range(args.runs):
                for player in order(i):
                    progress(f"idle, run {i + 1}, {player}")
                    results["idle"][player].append(bench.idle(player))
        if parts & {"startup", "playing", "radio"}:
            progress("making media")
            media = {c.key: bench.encoded(c, args.seconds) for c in CODECS}
            bitrates[f"{args.seconds:g} s"] = {c.key: kbps(media[c.key], args.seconds) for c in CODECS}
        if "startup" in parts:
            results["startup"] = {p: [] for p in PLAYERS}
            for i in range(args.runs):
                for player in order(i):
                    progress(f"startup, run {i + 1}, {player}")
                    results["startup"][player].append(bench.startup(player, CODECS[0], media["flac16"]))
        if "playing" in parts:
            if args.userland:
                results["emulator_alone"] = bench.emulator_alone()
            results["playing"] = {c.key: {p: [] for p in PLAYERS} for c in CODECS}
            results["playing_stdout"] = {"flac16": {"slimplay": []}}
            for i in range(args.runs):
                for codec in CODECS:
                    for player in order(i):
                        progress(f"playing, run {i + 1}, {codec.label}, {player}")
                        results["playing"][codec.key][player].append(
                            bench.playing(player, codec, media[codec.key], args.seconds))
                progress(f"playing, run {i + 1}, FLAC 16/44.1, slimplay -o - into the paced reader")
                results["playing_stdout"]["flac16"]["slimplay"].append(
                    bench.playing("slimplay", CODECS[0], media["flac16"], args.seconds, stdout=True))
        if "radio" in parts:
            results["radio"] = {c.key: {p: [] for p in PLAYERS} for c in radio_codecs}
            for i in range(args.runs):
                for codec in radio_codecs:
                    for player in order(i):
                        progress(f"radio-like stream, run {i + 1}, {codec.label}, {player}")
                        results["radio"][codec.key][player].append(
                            bench.playing(player, codec, media[codec.key], args.seconds, paced_stream=True))
        if "throughput" in parts:
            progress("making long media")
            long_media = {c.key: bench.encoded(c, args.long_seconds) for c in CODECS}
            bitrates[f"{args.long_seconds:g} s"] = {c.key: kbps(long_media[c.key], args.long_seconds) for c in CODECS}
            results["throughput"] = {c.key: {"slimplay": [], "squeezelite": [], "tool": []} for c in CODECS}
            for i in range(args.runs):
                for codec in CODECS:
                    for player in order(i):
                        progress(f"throughput, run {i + 1}, {codec.label}, {player}")
                        results["throughput"][codec.key][player].append(
                            bench.throughput(player, codec, long_media[codec.key], args.long_seconds))
                    results["throughput"][codec.key]["tool"].append(
                        bench.tool(codec, long_media[codec.key], args.long_seconds))
        if "callgrind" in parts:
            results["callgrind"] = {}
            lengths = tuple(float(s) for s in args.callgrind_seconds.split(","))
            for codec in (CODECS[0], CODECS[1], CODECS[2], AAC):
                results["callgrind"][codec.key] = {}
                for player in PLAYERS:
                    progress(f"callgrind, {codec.label}, {player}")
                    results["callgrind"][codec.key][player] = bench.callgrind(codec, lengths, player)
    finally:
        bench.close()

    rows = build_rows(results, args) if results else []
    load = os.getloadavg()
    inside = ["chroot", str(args.userland)] if args.userland else []
    version = subprocess.run([*inside, args.squeezelite, "-?"], capture_output=True, text=True).stdout.split()[1].rstrip(",")
    slimplay_version = subprocess.run([*inside, args.slimplay, "--version"], capture_output=True,
                                      text=True).stdout.strip()
    header = (f"slimplay {slimplay_version} vs squeezelite {version}; median of {args.runs} run(s); "
              f"ratio = first column / second; {os.cpu_count()} CPUs; load average at the end "
              f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; took {time.monotonic() - began:.0f} s")
    print(header)
    if real_results:
        print(bench_real.render_real(bench_real.real_rows(real_results, real_players), real_players))
    if rows:
        print("synthetic: an aioslimproto server on loopback and generated streams; slimplay and Debian's squeezelite")
        print(render(rows, "").lstrip("\n"))
    if bitrates:
        print("\nmedia bit rates, kbps: " + "; ".join(
            f"{length}: " + ", ".join(f"{k} {v}" for k, v in rates.items()) for length, rates in bitrates.items()))
    document = {
        "header": header,
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "media_kbps": bitrates,
        "rows": [{k: v for k, v in r.items() if k != "digits"} for r in rows],
        "runs": results,
        "real_path": real_results,
    }
    args.json.write_text(json.dumps(document, indent=2, default=str))
    print(f"\nJSON: {args.json.resolve()}", file=sys.stderr)
    if args.markdown:
        text = ""
        if real_results:
            text += bench_real.render_real(bench_real.real_rows(real_results, real_players), real_players,
                                           markdown=True)
        if rows:
            text += "\n**synthetic (aioslimproto server, generated streams)**\n" + markdown(rows)
        args.markdown.write_text(text)
        print(f"Markdown: {args.markdown.resolve()}", file=sys.stderr)


if __name__ == "__main__":
    main()
