"""The real path: slimplay and both squeezelite builds registered with a real LMS 7.9.1, each at its
own defaults (for slimplay that is offline mode on: status polls, downloads, their verification,
state saves, artwork), playing whole albums that LMS sends them.

- Albums: FLAC 16/44.1, FLAC 24/96, MP3 320k (sent as the files' bytes) and WAV (which LMS
  transcodes to FLAC on the fly, as it does for every player that lists `flc` before `pcm`), each of
  a few tracks made with Debian's encoders from a noise-and-tones master; and a radio-like stream:
  an MP3 that a local HTTP server sends at its own bit rate, which LMS hands to the players as a
  remote URL.
- The three players play the same album at the same time, each into its own paced reader (`-o -`,
  the same sample size for all, read at exactly real time like a sound card), as the same
  unprivileged user, each in its own control group: the group's CPU counter is exact and includes
  threads that ended. Memory is sampled from /proc ten times a second over the whole session
  (process start → the end of the last track). A relay between the players and LMS
  (`slimproto_tap.py`) notes HELO and `strm s`.
- Each capture is compared whole with the reference decode of the whole album (frame for frame),
  and searched for gaps: a paced read that found nothing (slimplay) or a run of zero frames
  (squeezelite writes silence when it has nothing).
- CPU quota: the smallest `cpu.cfs_quota_us` (of a 100 ms period) at which each player plays the
  first track of each album whole, without a gap, with the rest of the album queued; found by
  bisection, the three players side by side, each in its own group. Memory limit: the smallest
  `memory.limit_in_bytes` at which each plays that track whole.

Needs root (LMS, control groups). `scripts/bench` runs it.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
from harness import dsd_files
from harness.real_lms import RealLMS, UnknownPlayer

from cgroups import Cgroup
from slimproto_tap import SlimProtoTap

ROOT = Path(__file__).resolve().parents[1]

READER = ROOT / "scripts" / "bench_reader.py"
LMS_SCRIPT = ROOT.parent / "shared" / "lms" / "lms"
# Addresses of its own: the tests' LMS is on 127.0.0.2, the soak's on 127.0.0.4, the fault loops' on
# 127.0.0.6 (each server reaps copies of LMS on its address that it did not start).
LMS_ADDR = "127.0.0.7"
TAP_ADDR = "127.0.0.8"  # the players' server: the relay in front of LMS


def run(*command: str) -> None:
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


PLAYER_USER = "nobody"


def pipe_of(user: str) -> tuple[int, int]:
    """A pipe owned by `user`, as the shell of a user who runs `player -o - | reader` makes it: the
    player may open it for reading too (slimplay does, to take back what a flush drops)."""
    import ctypes
    import pwd

    libc = ctypes.CDLL(None, use_errno=True)
    previous = libc.setfsuid(pwd.getpwnam(user).pw_uid)  # this thread only; new inodes take it
    try:
        return os.pipe()
    finally:
        libc.setfsuid(previous)


def describe_stalls(stalls: list, report: dict, album: AlbumSpec) -> str:
    """Each stall as (seconds of audio before it, its length), at most five."""
    bytes_per_second = album.rate * album.frame_bytes
    offset = report.get("capture_offset", 0)
    return ", ".join(f"({(at - offset) / bytes_per_second:.2f}, {length:.3f})" for at, length in stalls[:5])


# --- media ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AlbumSpec:
    key: str
    label: str
    kind: str  # flac, mp3, wav, ogg, aac, alac
    rate: int
    bits: int
    out_bits: int  # -a for `-o -`, the same for every player
    tracks: int = 3
    # Players built without this codec (they sit the album out): the lean upstream squeezelite
    # decodes ALAC only with Apple's library, which Debian does not package.
    lacking: frozenset[str] = frozenset()

    @property
    def frame_bytes(self) -> int:
        return 2 * self.out_bits // 8


ALBUMS = [
    AlbumSpec("flac16", "FLAC 16/44.1", "flac", 44100, 16, 16),
    AlbumSpec("flac24", "FLAC 24/96", "flac", 96000, 24, 32),
    AlbumSpec("mp3", "MP3 320k", "mp3", 44100, 16, 16),
    AlbumSpec("wav", "WAV, transcoded by LMS", "wav", 44100, 16, 16),
    AlbumSpec("ogg", "Ogg Vorbis q5", "ogg", 44100, 16, 16),
    # libfaad's 24-bit output (squeezelite's too), played at 32 bits: from a 24-bit master.
    AlbumSpec("aac", "AAC 256k in MP4 (ffmpeg)", "aac", 44100, 24, 32),
    AlbumSpec("alac", "ALAC 16/44.1 in MP4 (ffmpeg)", "alac", 44100, 16, 16,
              lacking=frozenset({"squeezelite-upstream"})),
]
# DSD64 in DSF, played as DoP (`-D`) at 176.4 kHz in 32-bit frames; LMS 7.9.1 lists DSD files only
# with an older Audio::Scan than Debian's, so they reach it as streams (audio/dsf). The lean upstream
# build has no DSD (its Makefile's OPTS leave -DDSD out).
DSD = AlbumSpec("dsd", "DSD64 in DSF as DoP (-D), streamed to LMS", "dsd", 176400, 32, 32, tracks=2,
                lacking=frozenset({"squeezelite-upstream"}))
RADIO = AlbumSpec("radio", "MP3 radio-like stream (arrives at play speed)", "radio", 44100, 16, 16, tracks=1)
# The same stream from an https station (port 443, which is how LMS 7.9 marks https for a player):
# straight to a player that offers CanHTTPS, relayed by LMS to one that does not (the upstream build).
RADIO_TLS = AlbumSpec("radio-https", "the same stream over https (port 443)", "radio", 44100, 16, 16, tracks=1)


@dataclass
class BenchTrack:
    path: Path  # what LMS plays (in the music folder) or serves (radio)
    master: Path
    seconds: float
    spec: AlbumSpec

    def reference(self) -> bytes:
        """The track's PCM as a bit-exact player writes it with `-o - -a out_bits` at volume 100."""
        if self.spec.kind == "dsd":
            return dsd_files.dop_frames(np.load(self.master))
        # per kind: the FLAC, MP3 and WAV albums share their masters, not their decodes
        target = self.master.with_name(f"{self.master.stem}.{self.spec.kind}.ref.raw")
        if not target.exists():
            partial = target.with_suffix(".partial")
            kind = self.spec.kind
            if kind == "flac":
                run("flac", "-s", "-f", "-d", "--force-raw-format", "--endian=little", "--sign=signed",
                    "-o", str(partial), str(self.path))
            elif kind in ("mp3", "radio"):
                with open(partial, "wb") as out:
                    subprocess.run(["mpg123", "-q", "-s", str(self.path)], check=True, stdout=out)
            elif kind == "ogg":
                run("oggdec", "--quiet", "-R", "-o", str(partial), str(self.path))
            elif kind == "aac":
                # faad's decode (libfaad withholds the first frame), less the rest of the priming (the
                # first packet's time, from ffprobe), as long as the source.
                run("faad", "-q", "-b", "2", "-f", "2", "-o", str(partial), str(self.path))
                priming = -int(subprocess.run(
                    ["ffprobe", "-v", "error", "-select_streams", "a", "-show_entries", "packet=pts", "-of",
                     "default=nw=1:nk=1", str(self.path)], check=True, capture_output=True, text=True).stdout.split()[0])
                frames = int(subprocess.run(["soxi", "-s", str(self.master)], check=True, capture_output=True,
                                            text=True).stdout)
                start = (priming - 1024) * 6
                partial.write_bytes(partial.read_bytes()[start:start + frames * 6])
            else:  # wav, and alac: lossless, the source itself
                run("sox", str(self.master), "-t", "raw", "-e", "signed", "-L", str(partial))
            partial.rename(target)
        data = target.read_bytes()
        if self.spec.bits == 24 and self.spec.out_bits == 32:
            widened = bytearray(len(data) // 3 * 4)
            for k in range(3):
                widened[k + 1 :: 4] = data[k::3]
            return bytes(widened)
        return data


class BenchLibrary:
    """`<root>/music/Bench <album>/NN.ext` scanned by LMS, `<root>/ref/` masters and decodes, and
    `<root>/radio/` the radio-like stream, `<root>/dsd/` the DSD files (served as streams too)."""

    def __init__(self, root: Path, track_seconds: float, radio_seconds: float):
        self.root = root
        self.music = root / "music"
        self.albums: dict[str, list[BenchTrack]] = {}
        tag = f"{track_seconds:g}s"
        for spec in ALBUMS:
            folder = self.music / f"Bench {spec.key} {tag}"
            ext = {"flac": "flac", "mp3": "mp3", "wav": "wav", "ogg": "ogg", "aac": "m4a", "alac": "m4a"}[spec.kind]
            self.albums[spec.key] = [
                BenchTrack(folder / f"{n:02d} Bench {spec.key} {n}.{ext}",
                           root / "ref" / f"{spec.rate}-{spec.bits}-{tag}-{n}.wav", track_seconds + n / 10, spec)
                for n in range(1, spec.tracks + 1)]
        self.radio = BenchTrack(root / "radio" / f"radio-{radio_seconds:g}s.mp3",
                                root / "ref" / f"44100-16-radio-{radio_seconds:g}s.wav", radio_seconds, RADIO)
        self.albums[DSD.key] = [
            BenchTrack(root / "dsd" / f"dsd-{tag}-{n}.dsf", root / "ref" / f"dsd64-{tag}-{n}.npy",
                       track_seconds + n / 10, DSD)
            for n in range(1, DSD.tracks + 1)]

    def build(self) -> BenchLibrary:
        (self.root / "ref").mkdir(parents=True, exist_ok=True)
        (self.root / "radio").mkdir(parents=True, exist_ok=True)
        (self.root / "dsd").mkdir(parents=True, exist_ok=True)
        for tracks in self.albums.values():
            for n, track in enumerate(tracks, start=1):
                self._make(track, n)
        self._make(self.radio, 1)
        for folder, _, files in os.walk(self.root):
            os.chmod(folder, 0o755)
            for name in files:
                os.chmod(os.path.join(folder, name), 0o644)
        return self

    def _make(self, track: BenchTrack, number: int) -> None:
        spec = track.spec
        if spec.kind == "dsd":
            if not track.master.exists():
                bits = dsd_files.modulate(track.seconds, dsd_files.DSD64, (200 + 20 * number, 331))
                with open(track.master.with_suffix(".partial.npy"), "wb") as out:
                    np.save(out, bits)
                track.master.with_suffix(".partial.npy").rename(track.master)
            if not track.path.exists():
                partial = track.path.with_name(".partial-" + track.path.name)
                dsd_files.write_dsf(partial, np.load(track.master), dsd_files.DSD64)
                partial.rename(track.path)
            return
        if not track.master.exists():
            # Pink noise under slowly moving tones: FLAC makes ~835 kbps of it at 16/44.1, like music.
            s, rate = f"{track.seconds:g}", spec.rate
            partial = track.master.with_suffix(".partial.wav")
            noise = f"|sox -n -r {rate} -c 2 -p synth {s} pinknoise pinknoise vol 0.07"
            tones = (f"|sox -n -r {rate} -c 2 -p synth {s} sine {200 + 20 * number} sine 331 synth {s} sine mix "
                     f"440-880 sine mix 554 tremolo 0.3 40 vol 0.35")
            run("sox", "-D", "-m", noise, tones, "-b", str(spec.bits), str(partial))
            partial.rename(track.master)
        if track.path.exists():
            return
        track.path.parent.mkdir(parents=True, exist_ok=True)
        partial = track.path.with_name(".partial-" + track.path.name)
        title, album = f"Bench {spec.key} track {number}", track.path.parent.name
        if spec.kind == "flac":
            run("flac", "-s", "-f", "-o", str(partial), str(track.master))
            run("metaflac", "--set-tag=ARTIST=Slimplay Bench", f"--set-tag=ALBUM={album}", f"--set-tag=TITLE={title}",
                f"--set-tag=TRACKNUMBER={number}", str(partial))
        elif spec.kind in ("mp3", "radio"):
            run("lame", "--quiet", "-b", "320", "--tt", title, "--ta", "Slimplay Bench", "--tl", album,
                "--tn", str(number), str(track.master), str(partial))
        elif spec.kind in ("aac", "alac"):
            codec = ["-c:a", "aac", "-b:a", "256k"] if spec.kind == "aac" else ["-c:a", "alac"]
            run("ffmpeg", "-v", "error", "-y", "-i", str(track.master), *codec, "-movflags", "+faststart",
                "-metadata", f"title={title}", "-metadata", "artist=Slimplay Bench", "-metadata", f"album={album}",
                "-metadata", f"track={number}", "-f", "mp4", str(partial))
        elif spec.kind == "ogg":
            run("oggenc", "--quiet", "-q", "5", "-t", title, "-a", "Slimplay Bench", "-l", album, "-N", str(number),
                "-o", str(partial), str(track.master))
        else:
            shutil.copyfile(track.master, partial)
        partial.rename(track.path)


class PacedFileServer:
    """Serves files (`root` + the URL's path) at their own average bit rate (+2 %), like an internet
    radio station: the player never has a full stream buffer."""

    def __init__(self, address: str, seconds_of: Callable[[Path], float], root: Path = Path("/"),
                 tls_folder: Path | None = None):
        import http.server
        import ssl

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # noqa: ANN002
                pass

            def do_GET(self) -> None:  # noqa: N802
                path = root / urllib.parse.unquote(self.path.split("?")[0]).lstrip("/")
                try:
                    data = path.read_bytes()
                except OSError:
                    self.send_error(404)
                    return
                rate = len(data) / seconds_of(path) * 1.02
                self.send_response(200)
                self.send_header("Content-Type", {".dsf": "audio/dsf"}.get(path.suffix, "audio/mpeg"))
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                started, sent = time.monotonic(), 0
                while sent < len(data):
                    try:
                        self.wfile.write(data[sent : sent + 1400])
                    except OSError:
                        return
                    sent += 1400
                    ahead = sent / rate - (time.monotonic() - started)
                    if ahead > 0:
                        time.sleep(ahead)

        self.httpd = http.server.ThreadingHTTPServer((address, 443 if tls_folder else 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda request, client: None
        self.port = self.httpd.server_address[1]
        self.url = f"http://{address}:{self.port}"
        if tls_folder:
            tls_folder.mkdir(parents=True, exist_ok=True)
            key, cert = tls_folder / "key.pem", tls_folder / "cert.pem"
            run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={address}", "-days", "1",
                "-keyout", str(key), "-out", str(cert))
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            # LMS 7.9.1's own https client reads no response from a TLS 1.3 server.
            context.maximum_version = ssl.TLSVersion.TLSv1_2
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            self.url = f"https://{address}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# --- players --------------------------------------------------------------------------------------


# What slimplay announces for `-o -` (Player.maximumSampleRate).
STDOUT_MAX_RATE = 384_000


@dataclass(frozen=True)
class PlayerSpec:
    key: str
    label: str
    binary: str
    mac: str
    slimplay: bool = False
    environment: dict[str, str] = field(default_factory=dict)
    extra_args: list[str] = field(default_factory=list)  # e.g. debug logging while chasing a stall

    def command(self, out_bits: int, state_dir: Path) -> list[str]:
        common = ["-s", TAP_ADDR, "-m", self.mac, "-n", f"bench {self.key}", "-o", "-", "-a", str(out_bits)]
        if self.slimplay:
            return [self.binary, *common, "--state-dir", str(state_dir), *self.extra_args]
        # squeezelite's stdout output announces MaxSampleRate=44100 unless told otherwise, and LMS
        # then resamples a 96 kHz album for it: the same ceiling slimplay announces for stdout keeps
        # the three on the same stream.
        return [self.binary, *common, "-r", str(STDOUT_MAX_RATE)]


@dataclass
class Running:
    spec: PlayerSpec
    process: subprocess.Popen
    reader: subprocess.Popen
    report: Path
    capture: Path
    group: Cgroup
    started: float
    log: Path
    oom_kills: int = 0
    memory: list[tuple[int, int, int]] = field(default_factory=list)  # VmRSS kB, RssAnon kB, threads
    threads: dict[int, tuple[str, int, int]] = field(default_factory=dict)  # tid -> (name, ns, switches)


def end_process(process: subprocess.Popen, terminate: bool = True, timeout: float = 10) -> None:
    """SIGTERM now, SIGKILL if it is still there after `timeout`; or, without `terminate` (a process
    that ends by itself), SIGTERM only after `timeout`."""
    if process.poll() is None:
        if terminate:
            process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill() if terminate else process.terminate()
            process.wait()


def proc_memory(pid: int) -> tuple[int, int, int] | None:
    try:
        fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    except (OSError, ValueError):
        return None
    try:
        return int(fields["VmRSS"].split()[0]), int(fields["RssAnon"].split()[0]), int(fields["Threads"])
    except (KeyError, ValueError, IndexError):
        return None


def thread_times(pid: int) -> dict[int, tuple[str, int, int]]:
    """Each thread's name, run time (ns, schedstat) and context switches (its wake-ups, mostly)."""
    found = {}
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            switches = sum(int(line.split()[1]) for line in (task / "status").read_text().splitlines()
                           if "ctxt_switches:" in line)
            found[int(task.name)] = ((task / "comm").read_text().strip(),
                                     int((task / "schedstat").read_text().split()[0]), switches)
        except (OSError, ValueError, IndexError):
            pass
    return found


# squeezelite leaves its threads unnamed; it starts them in this order (main.c): the main thread runs
# SlimProto, then the stream, output and decode threads.
SQUEEZELITE_THREADS = ("main (slimproto)", "stream", "output", "decode")


def thread_rows(threads: dict[int, tuple[str, int, int]], seconds: float) -> dict[str, dict]:
    """CPU seconds and wake-ups per second by thread; NIO's numbered loop threads (NIO-ELT-0-#1)
    and squeezelite's unnamed ones get names that mean the same in every run."""
    rows: dict[str, dict] = {}
    unnamed = [tid for tid in sorted(threads) if threads[tid][0] == "squeezelite"]
    for tid, (name, ns, switches) in sorted(threads.items()):
        if tid in unnamed:
            position = unnamed.index(tid)
            name = SQUEEZELITE_THREADS[position] if position < len(SQUEEZELITE_THREADS) else "other"
        elif name.startswith("NIO-ELT-"):
            name = "NIO loop " + name.rsplit("#", 1)[-1]
        row = rows.setdefault(name, {"cpu_s": 0.0, "wakeups_per_s": 0.0})
        row["cpu_s"] += ns / 1e9
        row["wakeups_per_s"] += switches / seconds
    return dict(sorted(rows.items(), key=lambda kv: -kv[1]["cpu_s"]))


def analyse_capture(capture: Path, reference: bytes, frame_bytes: int, stalls: list, capture_offset: int) -> dict:
    """Whole capture against the whole reference, frame for frame, and the gaps in it."""
    data = capture.read_bytes() if capture.exists() else b""
    zero_frame = bytes(frame_bytes)
    # DoP's silence (32-bit frames: DSD's idle pattern 0x6969 behind either marker), which a player
    # writes instead of zeros while a DoP track is current.
    dop_idle = b"\x00\x69\x69"

    def silent(frame: bytes) -> bool:
        return frame == zero_frame or (frame_bytes == 8 and frame[0:3] == dop_idle and frame[4:7] == dop_idle
                                       and frame[3] in (0x05, 0xFA) and frame[7] == frame[3])

    def trim(pcm: bytes) -> bytes:
        start = 0
        while start < len(pcm) and silent(pcm[start : start + frame_bytes]):
            start += frame_bytes
        end = len(pcm) - len(pcm) % frame_bytes
        while end > start and silent(pcm[end - frame_bytes : end]):
            end -= frame_bytes
        return pcm[start:end]

    heard, wanted = trim(data), trim(reference)
    # A run of 31 zero frames (in any alignment) holds at least 30 whole ones: music never has that
    # many, a player with nothing to play does.
    zero_runs, at, run_bytes, first_zero_run = 0, 0, bytes(31 * frame_bytes), None
    while (at := heard.find(run_bytes, at)) >= 0:
        zero_runs += 1
        first_zero_run = at // frame_bytes if first_zero_run is None else first_zero_run
        at += len(run_bytes)
        while at < len(heard) and heard[at] == 0:  # to the end of this run
            at += 1
    end_of_audio = capture_offset + len(data.rstrip(b"\0"))
    stalls_in_audio = [s for s in stalls if s[0] < end_of_audio]
    first_difference = None
    if heard != wanted:
        common = min(len(heard), len(wanted))
        block = next((i for i in range(0, common, 1 << 16) if heard[i : i + (1 << 16)] != wanted[i : i + (1 << 16)]),
                     common)
        byte = next((i for i in range(block, min(common, block + (1 << 16))) if heard[i] != wanted[i]), common)
        first_difference = byte // frame_bytes
    return {
        "frames": len(heard) // frame_bytes,
        "reference_frames": len(wanted) // frame_bytes,
        "identical": heard == wanted,
        "first_difference_frame": first_difference,
        "zero_runs": zero_runs,
        "first_zero_run_frame": first_zero_run,
        "stalls": len(stalls_in_audio),
        "stall_seconds": round(sum(s[1] for s in stalls_in_audio), 3),
    }


# --- the bench ------------------------------------------------------------------------------------


class RealPathBench:
    def __init__(self, work: Path, players: list[PlayerSpec], track_seconds: float, radio_seconds: float,
                 progress: Callable[[str], None], lms_state: Path = Path("/tmp/slimplay-bench-lms"),
                 keep_captures: bool = False):
        self.work = work
        self.keep_captures = keep_captures
        self.players = players
        self.progress = progress
        self.library = BenchLibrary(Path("/tmp/slimplay-bench-music"), track_seconds, radio_seconds)
        self.lms = RealLMS(LMS_SCRIPT, self.library.music, lms_state, addr=LMS_ADDR, version="7.9.1")
        self.tap: SlimProtoTap | None = None
        self.radio_server: PacedFileServer | None = None
        self.tls_server: PacedFileServer | None = None
        self.counter = 0
        self.prefix = ["setpriv", f"--reuid={PLAYER_USER}", "--regid=nogroup", "--clear-groups"]
        self.register_timeout = 20.0

    def __enter__(self) -> RealPathBench:
        self.progress("making the bench's albums (Debian's sox, flac, lame)")
        self.library.build()
        self.progress("starting LMS 7.9.1")
        self.lms.start()
        wanted = {str(t.path) for key, tracks in self.library.albums.items() if key != DSD.key for t in tracks}
        if not wanted <= set(self.lms.track_ids(refresh=True)):
            self.progress("LMS scans the bench's albums")
            self.lms.script_run("rescan")
            self.lms.track_ids(refresh=True)
        self.tap = SlimProtoTap(TAP_ADDR, LMS_ADDR).start()
        seconds = {t.path: t.seconds for t in [self.library.radio, *self.library.albums[DSD.key]]}
        self.radio_server = PacedFileServer(TAP_ADDR, lambda path: seconds[path])
        self.tls_server = PacedFileServer(TAP_ADDR, lambda path: seconds[path], tls_folder=self.work / "tls")
        return self

    def __exit__(self, *exc: object) -> None:
        for server in (self.radio_server, self.tls_server):
            if server:
                server.close()
        if self.tap:
            self.tap.close()
        self.lms.stop()

    # -- one player --

    def discard(self, capture: Path) -> None:
        """A capture is large: kept only with --keep-captures, to look into a difference."""
        if not self.keep_captures:
            capture.unlink(missing_ok=True)

    def start_player(self, spec: PlayerSpec, album: AlbumSpec, quota: float | None = None,
                     memory_limit: int | None = None) -> Running:
        self.counter += 1
        name = f"{self.counter:03d}-{spec.key}-{album.key}"
        state_dir = self.work / "state" / name
        state_dir.mkdir(parents=True)
        os.chmod(state_dir, 0o777)
        group = Cgroup(name)
        group.set_cpu_quota(quota)
        group.set_memory_limit(memory_limit)
        log = self.work / "logs" / f"{name}.log"
        log.parent.mkdir(exist_ok=True)
        report, capture = self.work / f"{name}.json", self.work / f"{name}.raw"
        started = time.monotonic()
        read_end, write_end = pipe_of(PLAYER_USER)
        with open(log, "wb") as log_file:
            process = subprocess.Popen(
                [*self.prefix, *spec.command(album.out_bits, state_dir),
                 *(["-D"] if album.kind == "dsd" else [])], stdin=subprocess.DEVNULL,
                stdout=write_end, stderr=log_file, preexec_fn=group.join,
                env={**os.environ, **spec.environment})
        os.close(write_end)
        rate = album.rate * album.frame_bytes
        reader = subprocess.Popen([sys.executable, str(READER), "--rate", str(rate), "--report", str(report),
                                   "--capture", str(capture)], stdin=read_end, stdout=subprocess.DEVNULL)
        os.close(read_end)
        return Running(spec, process, reader, report, capture, group, started, log)

    def stop_player(self, running: Running) -> dict:
        # LMS keeps a player's queue for 300 s after it leaves and resumes it when the same MAC comes
        # back: the next trial's player would start with a second of the previous album, then the
        # bench's own queue (a gap that is the bench's, not the player's).
        for command in (["stop"], ["playlist", "clear"]):
            try:
                self.lms.rpc(running.spec.mac, command, timeout=3)
            except Exception:  # noqa: BLE001 - a player LMS never saw, or a server already gone
                pass
        end_process(running.process)
        end_process(running.reader, terminate=False)  # it ends with its input, reporting
        report = json.loads(running.report.read_text()) if running.report.exists() else {}
        running.oom_kills = running.group.oom_kills()
        running.group.remove()
        return report

    def register(self, running: Running, timeout: float = 20) -> float | None:
        """Waits until LMS lists the player as connected; returns start → HELO (s)."""
        mac = running.spec.mac
        deadline = time.monotonic() + timeout
        hello = None
        while hello is None and time.monotonic() < deadline and running.process.poll() is None:
            hello = self.tap.wait(mac, "HELO", since=running.started, timeout=0.2)
        if hello is None or not self.lms.wait_for(lambda: self.lms.connected(mac), timeout):
            raise RuntimeError(f"{running.spec.label} did not register with LMS (log: {running.log})")
        return hello.at - running.started

    def served(self, track: BenchTrack, tls: bool = False) -> str:
        server = self.tls_server if tls else self.radio_server
        return f"{server.url}{urllib.parse.quote(str(track.path))}"

    def queue(self, mac: str, album: AlbumSpec) -> None:
        self.lms.rpc(mac, ["mixer", "volume", 100])  # unity gain: bit-exact for all three
        if album.kind == "radio" or album.key == DSD.key:
            self.lms.rpc(mac, ["playlist", "clear"])
        else:
            self.lms.load_tracks(mac, [t.path for t in self.library.albums[album.key]])

    def play(self, mac: str, album: AlbumSpec) -> None:
        if album.kind == "radio":
            self.lms.rpc(mac, ["playlist", "play", self.served(self.library.radio, tls=album is RADIO_TLS)])
        elif album.key == DSD.key:
            tracks = self.library.albums[DSD.key]
            self.lms.rpc(mac, ["playlist", "play", self.served(tracks[0])])
            for track in tracks[1:]:
                self.lms.rpc(mac, ["playlist", "add", self.served(track)])
        else:
            self.lms.play(mac, 0)

    def tracks_of(self, album: AlbumSpec) -> list[BenchTrack]:
        return [self.library.radio] if album.kind == "radio" else self.library.albums[album.key]

    def sample(self, running: Running) -> None:
        if (memory := proc_memory(running.process.pid)) is not None:
            running.memory.append(memory)

    def sample_threads(self, running: Running) -> None:
        for tid, value in thread_times(running.process.pid).items():
            running.threads[tid] = value

    # -- a whole session --

    def session(self, album: AlbumSpec, order: list[PlayerSpec]) -> dict[str, dict]:
        """The three players, started one after another, then playing the album side by side from
        the same moment until LMS reports each stopped after the last track."""
        tracks = self.tracks_of(album)
        seconds = sum(t.seconds for t in tracks)
        order = [spec for spec in order if spec.key not in album.lacking]
        runnings: list[Running] = []
        results: dict[str, dict] = {}
        try:
            hello: dict[str, float | None] = {}
            for spec in order:
                running = self.start_player(spec, album)
                runnings.append(running)
                hello[spec.key] = self.register(running, self.register_timeout)
                self.queue(spec.mac, album)
            play_sent: dict[str, float] = {}
            for running in runnings:
                play_sent[running.spec.key] = time.monotonic()
                self.play(running.spec.mac, album)
            deadline = time.monotonic() + seconds + 60
            playing_seen: set[str] = set()
            stopped_at: dict[str, float] = {}
            tick = 0
            while len(stopped_at) < len(runnings) and time.monotonic() < deadline:
                for running in runnings:
                    self.sample(running)
                    if tick % 5 == 0:
                        self.sample_threads(running)
                if tick % 10 == 0:
                    for running in runnings:
                        key = running.spec.key
                        if key in stopped_at:
                            continue
                        try:
                            mode = self.lms.status(running.spec.mac).get("mode")
                        except (OSError, UnknownPlayer):
                            continue
                        if mode == "play":
                            playing_seen.add(key)
                        elif mode == "stop" and key in playing_seen:
                            stopped_at[key] = time.monotonic()
                tick += 1
                time.sleep(0.1)
            time.sleep(0.5)
            for running in runnings:
                self.sample(running)
                self.sample_threads(running)
            cpu = {r.spec.key: r.group.cpu_seconds() for r in runnings}
            ended = time.monotonic()
        finally:
            reports = {r.spec.key: self.stop_player(r) for r in runnings}
        reference = b"".join(t.reference() for t in tracks)
        for running in runnings:
            key, report = running.spec.key, reports[running.spec.key]
            strm = self.tap.first(running.spec.mac, "strm", "s", since=play_sent[key])
            first_audio = report.get("first_nonzero_at")
            rss = [m[0] for m in running.memory]
            anon = [m[1] for m in running.memory]
            results[key] = {
                "cpu_s": cpu[key],
                "session_s": ended - running.started,
                "audio_s": seconds,
                "cpu_s_per_audio_min": 60 * cpu[key] / seconds,
                "stopped": key in stopped_at,
                "rss_peak_kb": max(rss, default=None),
                "rss_median_kb": statistics.median(rss) if rss else None,
                "anon_peak_kb": max(anon, default=None),
                "anon_median_kb": statistics.median(anon) if anon else None,
                "threads_peak": max((m[2] for m in running.memory), default=None),
                "threads": thread_rows(running.threads, ended - running.started),
                "hello_s": hello[key],
                "strm_to_first_audio_s": first_audio - strm.at if first_audio and strm else None,
                **analyse_capture(running.capture, reference, album.frame_bytes, report.get("stalls", []),
                                  report.get("capture_offset", 0)),
            }
            self.discard(running.capture)
        return results

    # -- the first track under a limit --

    def trial(self, album: AlbumSpec, limits: dict[str, dict]) -> dict[str, bool]:
        """Each player in `limits` ({"quota": fraction} or {"memory": bytes}) plays the album's first
        track with the rest queued; True when that track came out whole, without a gap."""
        tracks = self.tracks_of(album)
        first = tracks[0]
        runnings: list[Running] = []
        outcome: dict[str, bool] = {}
        try:
            for spec in self.players:
                if spec.key not in limits:
                    continue
                running = self.start_player(spec, album, quota=limits[spec.key].get("quota"),
                                            memory_limit=limits[spec.key].get("memory"))
                runnings.append(running)
            for running in list(runnings):
                try:
                    self.register(running, timeout=30)
                    self.queue(running.spec.mac, album)
                except (RuntimeError, OSError) as error:
                    self.progress(f"  {running.spec.key}: {error}")
                    outcome[running.spec.key] = False
            for running in runnings:
                if running.spec.key not in outcome:
                    self.play(running.spec.mac, album)
            # the first track and a second of the next one; all of it (less the 64 frames the
            # verdict allows) when it is the only one: stopping a lone player short of that
            # would fail it for the bench's own impatience
            need = int(first.seconds * album.rate) * album.frame_bytes
            need = need + album.rate * album.frame_bytes if len(tracks) > 1 else need - 64 * album.frame_bytes
            deadline = time.monotonic() + first.seconds * 3 + 30
            while time.monotonic() < deadline:
                waiting = [r for r in runnings if r.spec.key not in outcome and r.process.poll() is None
                           and (not r.capture.exists() or r.capture.stat().st_size < need)]
                if not waiting:
                    break
                time.sleep(0.25)
        finally:
            reports = {r.spec.key: self.stop_player(r) for r in runnings}
        reference = first.reference()
        for running in runnings:
            key = running.spec.key
            if key in outcome:
                self.discard(running.capture)
                continue
            report = reports[key]
            size = running.capture.stat().st_size if running.capture.exists() else 0
            head = running.capture.read_bytes()[: len(reference) + 64 * album.frame_bytes] if size else b""
            running.capture.write_bytes(head)
            found = analyse_capture(running.capture, b"", album.frame_bytes, report.get("stalls", []),
                                    report.get("capture_offset", 0))
            stalls = [s for s in report.get("stalls", []) if s[0] < report.get("capture_offset", 0) + len(reference)]
            whole = found["frames"] >= len(reference) // album.frame_bytes - 64
            outcome[key] = whole and not stalls and found["zero_runs"] == 0 and running.oom_kills == 0
            if not outcome[key]:
                self.progress(f"  {key}: {found['frames']} of {len(reference) // album.frame_bytes} frames, "
                              f"{len(stalls)} stalls, {found['zero_runs']} zero runs (first at frame "
                              f"{found['first_zero_run_frame']}), {running.oom_kills} OOM kills, "
                              f"exit {running.process.returncode}"
                              + (f"; stalls at (s into the track, s long) {describe_stalls(stalls, report, album)}"
                                 if stalls else ""))
            self.discard(running.capture)
        return outcome

    def smallest(self, album: AlbumSpec, kind: str, low: float, high: float, steps: int,
                 players: list[PlayerSpec]) -> dict[str, dict]:
        """Bisection (geometric) per player, all players side by side in each trial: the smallest
        value of `kind` ("quota", fraction of a core; "memory", bytes) that passed. `low` is the
        floor of the search: a player that passes there is reported at it."""
        players = [p for p in players if p.key not in album.lacking]
        brackets = {p.key: [low, high] for p in players}
        passed: dict[str, float | None] = {p.key: None for p in players}
        trials: dict[str, list] = {p.key: [] for p in players}
        # First the top of the range, to know there is something to find.
        values = {p.key: high for p in players}
        for step in range(steps + 1):
            shown = ", ".join(f"{k} {self.show(kind, v)}" for k, v in values.items())
            self.progress(f"{kind} for {album.label}, step {step + 1}/{steps + 1}: {shown}")
            outcome = self.trial(album, {k: {kind: v} for k, v in values.items()})
            # A failure is confirmed by a second try: one unlucky run must not end a bisection.
            if again := {k: v for k, v in values.items() if not outcome.get(k, False)}:
                self.progress(f"{kind} for {album.label}, step {step + 1}: trying the failures again")
                outcome.update(self.trial(album, {k: {kind: v} for k, v in again.items()}))
            for key, value in values.items():
                ok = outcome.get(key, False)
                trials[key].append([value, ok])
                if ok:
                    passed[key] = value if passed[key] is None else min(passed[key], value)
                    brackets[key][1] = value
                elif step == 0:
                    brackets[key] = [high, high]  # fails at the top: nothing below will pass
                else:
                    brackets[key][0] = value
            # Then the bottom (a player that passes there needs no more), then geometric halves.
            values = {k: low if step == 0 else math.sqrt(lo * hi) for k, (lo, hi) in brackets.items() if lo < hi}
            if not values:
                break
        return {k: {"smallest": passed[k], "failed_below": brackets[k][0] if passed[k] else None, "trials": trials[k]}
                for k in brackets}

    @staticmethod
    def show(kind: str, value: float) -> str:
        return f"{100 * value:.2f} %" if kind == "quota" else f"{value / 2**20:.1f} MiB"


# --- the report -----------------------------------------------------------------------------------


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def real_rows(results: dict, players: list[PlayerSpec]) -> list[dict]:
    """One row per figure: the median over the runs for each player, and slimplay's ratio to each
    squeezelite build."""
    rows: list[dict] = []
    keys = [p.key for p in players]

    def add(group: str, metric: str, values: dict[str, float | None], digits: int) -> None:
        rows.append({"group": group, "metric": metric, "values": values, "digits": digits})

    for album in [*ALBUMS, DSD, RADIO, RADIO_TLS]:
        section = results.get("real", {}).get(album.key)
        if not section:
            continue
        first = section[keys[0]][0]
        group = (f"real path: {album.label}, {first['audio_s']:.0f} s of audio, whole session (start → end of the "
                 f"last track), players at their defaults, `-o - -a {album.out_bits}` into a paced reader")

        def med(field: str, scale: float = 1.0, where: dict = section) -> dict[str, float | None]:
            out = {}
            for key in keys:
                values = [r.get(field) for r in where.get(key, [])]
                value = _median([v * scale for v in values if v is not None])
                out[key] = value
            return out

        add(group, "CPU s, whole session (control group)", med("cpu_s"), 3)
        add(group, "CPU s per minute of audio", med("cpu_s_per_audio_min"), 3)
        add(group, "VmRSS MB, peak", med("rss_peak_kb", 1 / 1024), 1)
        add(group, "VmRSS MB, median", med("rss_median_kb", 1 / 1024), 1)
        add(group, "RssAnon MB, peak", med("anon_peak_kb", 1 / 1024), 1)
        add(group, "RssAnon MB, median", med("anon_median_kb", 1 / 1024), 1)
        add(group, "threads, peak", med("threads_peak"), 0)
        add(group, "start → HELO, ms", med("hello_s", 1000), 0)
        add(group, "strm s → first audio, ms", med("strm_to_first_audio_s", 1000), 0)
        add(group, "runs whose whole capture equals the reference", {
            k: float(sum(1 for r in section.get(k, []) if r.get("identical"))) for k in keys}, 0)
        add(group, "gaps (stalls + zero runs), all runs", {
            k: float(sum(r.get("stalls", 0) + r.get("zero_runs", 0) for r in section.get(k, []))) for k in keys}, 0)
        thread_names: list[str] = []
        for key in keys:
            for run in section.get(key, []):
                for name in run.get("threads", {}):
                    if name not in thread_names:
                        thread_names.append(name)
        for key in keys:
            per_thread: dict[str, list[float]] = {}
            for run in section.get(key, []):
                for name, row in run.get("threads", {}).items():
                    per_thread.setdefault(name, []).append(row["cpu_s"])
            for name, values in sorted(per_thread.items(), key=lambda kv: -statistics.median(kv[1])):
                wakeups = _median([run["threads"][name]["wakeups_per_s"] for run in section.get(key, [])
                                   if name in run.get("threads", {})])
                add(group + " — CPU by thread", f"{key}: {name} (CPU s; {wakeups:.0f} wake-ups/s)",
                    {k: (statistics.median(values) if k == key else None) for k in keys}, 3)

    for kind, unit in (("quota", "% of one core"), ("memory", "MiB")):
        section = results.get(kind)
        if not section:
            continue
        if kind == "quota":
            group = ("smallest CPU quota (cpu.cfs_quota_us per 100 ms; 1 % is the kernel's floor) that plays the "
                     "first track whole, rest of the album queued, all three side by side (bisection)")
        else:
            group = "smallest memory limit (memory.limit_in_bytes) that plays the first track whole (bisection)"
        for album_key, by_player in section.items():
            label = next(a.label for a in [*ALBUMS, DSD, RADIO, RADIO_TLS] if a.key == album_key)
            scale = 100 if kind == "quota" else 1 / 2**20
            add(group, f"{label}, {unit}", {
                k: (by_player[k]["smallest"] * scale if by_player.get(k, {}).get("smallest") else None) for k in keys},
                2 if kind == "quota" else 1)
    return rows


def _fmt(value: float | None, digits: int) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or not b else f"{a / b:.2f}"


def render_real(rows: list[dict], players: list[PlayerSpec], markdown: bool = False) -> str:
    keys = [p.key for p in players]
    labels = [p.label for p in players]
    ratio_labels = [f"÷ {p.label}" for p in players[1:]]
    lines: list[str] = []
    group = None
    width = max((len(r["metric"]) for r in rows), default=10) + 2
    column = max(len(h) for h in labels + ratio_labels) + 2
    for row in rows:
        values = [row["values"].get(k) for k in keys]
        cells = [_fmt(v, row["digits"]) for v in values] + [_ratio(values[0], v) for v in values[1:]]
        if row["group"] != group:
            group = row["group"]
            if markdown:
                lines += ["", f"**{group}**", "", "| metric | " + " | ".join(labels + ratio_labels) + " |",
                          "|---|" + "---:|" * (len(labels) + len(ratio_labels))]
            else:
                lines += ["", group, "  " + "metric".ljust(width) + "".join(f"{h:>{column}}" for h in labels + ratio_labels)]
        if markdown:
            lines.append(f"| {row['metric']} | " + " | ".join(cells) + " |")
        else:
            lines.append("  " + row["metric"].ljust(width) + "".join(f"{c:>{column}}" for c in cells))
    return "\n".join(lines).strip() + "\n"
