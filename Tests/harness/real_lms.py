"""The real Lyrion/Logitech Media Server (8.3.0 or 7.9.1) for the integration tests, and a tagged library made for it.

`RealLMS` wraps `../shared/lms/lms` (the script that runs an unmodified LMS as the `squeezeboxserver` user; it
needs root). The test talks to the server over JSON-RPC from its own address, 127.0.0.3, so that
`partition()` (iptables DROP rules between the player at 127.0.0.1 and the server) cuts the player off
without cutting off the test.

`MusicLibrary` makes the albums with the real encoders (sox, flac, lame), tagged, in a folder the LMS user
can read, once (existing files are kept), with reference decodes beside it (outside the scanned folder).
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from . import dsd_files
import numpy as np

PLAYER_ADDR = "127.0.0.1"  # where slimplay's connections come from (the kernel's choice for 127.0.0.2)
CLIENT_ADDR = "127.0.0.3"  # the test's own JSON-RPC source address: not partitioned
STATUS_TAGS = "tags:adlKuf"
LMS_USER = "squeezeboxserver"  # the script runs LMS as this user
# The version every real-LMS test runs on (closest to what users run); SLIMPLAY_LMS_VERSION=7.9.1 runs them on
# the other one. Tests marked `lms_versions("8.3.0", "7.9.1")` run on both.
DEFAULT_VERSION = os.environ.get("SLIMPLAY_LMS_VERSION", "8.3.0")


class LMSError(RuntimeError):
    pass


class UnknownPlayer(LMSError):
    """LMS closes the connection without an answer to a query for a player it does not know (also right
    after a restart, until the player has reconnected)."""


# --- the music library ------------------------------------------------------------------------------------

ARTIST = "Slimplay Test Tones"


@dataclass(frozen=True)
class TrackSpec:
    seconds: float
    freq: str
    rate: int = 44100
    bits: int = 16
    # "" (intact); "damaged": bytes flipped in two places and 8 KiB of noise inserted, mid-file;
    # "undecodable": the headers and the first tenth of the audio intact, every byte after noise.
    damage: str = ""
    # DSD only: "dsf" or "dff".
    container: str = ""


# album -> (format, tracks). Tones differ per track so that a wrong track or a wrong offset shows.
ALBUMS: dict[str, tuple[str, list[TrackSpec]]] = {
    "FLAC 16-44": ("flac", [TrackSpec(s, f) for s, f in zip(
        (6, 7, 8, 9, 10, 11, 12, 6.5), ("220", "330", "440", "550", "660", "770", "880", "990"))]),
    "FLAC 24-96": ("flac", [TrackSpec(s, f, 96000, 24) for s, f in zip((12, 14, 16, 10), ("300", "500", "700", "900"))]),
    "MP3 CBR": ("mp3-cbr", [TrackSpec(s, f) for s, f in zip((10, 11, 12, 9), ("350", "450", "650", "750"))]),
    "MP3 VBR": ("mp3-vbr", [TrackSpec(s, f) for s, f in zip((10, 11, 12, 9), ("375", "475", "675", "775"))]),
    "Mixed rates": ("flac", [TrackSpec(14, "400", 44100), TrackSpec(14, "600", 96000), TrackSpec(14, "800", 48000),
                             TrackSpec(10, "1000", 44100)]),
    # oggenc keeps each track's exact length (the granule positions trim the edges): gapless.
    "Ogg Vorbis": ("ogg", [TrackSpec(s, f, r) for s, f, r in zip(
        (20, 8.5, 6.25, 9), ("310", "410", "510", "610"), (44100, 44100, 48000, 44100))]),
    # ffmpeg's AAC in MP4 (index first): the edit list skips the encoder's priming, the sample
    # table's last duration ends the audio where the source did: gapless.
    "AAC": ("aac", [TrackSpec(s, f, r) for s, f, r in zip(
        (16, 7.5, 9.3, 8), ("315", "415", "515", "615"), (44100, 44100, 48000, 44100))]),
    # HE-AAC in MP4, signalled as iTunes-style files are: ffmpeg's AAC-LC at a 22.05 and a 24 kHz core,
    # its AudioSpecificConfig's SBR extension switched on (no HE-AAC encoder in Debian), so that libfaad
    # runs its SBR stage at 44.1 and 48 kHz; `rate` is the core's.
    "HE-AAC": ("he-aac", [TrackSpec(20, "365", 22050), TrackSpec(6.2, "465", 24000), TrackSpec(8, "565", 22050)]),
    # ffmpeg's Apple Lossless in MP4: 16-bit 44.1 kHz, 24-bit 96 kHz, 16-bit 48 kHz.
    "ALAC": ("alac", [TrackSpec(s, f, r, b) for s, f, r, b in zip(
        (16, 9, 7.7, 8), ("325", "425", "525", "625"), (44100, 96000, 48000, 44100), (16, 24, 16, 16))]),
    # DSD made here (dsd_files.py): DSD64 in DSF and in DSDIFF, DSD128 in DSF; `rate` is the DSD rate.
    # (Each track's DoP reference begins on the first marker; a queue's is made from all its bits.)
    # The second has 1,764,002 bytes per channel: an odd number of DoP frames, after which the markers
    # must go on alternating.
    "DSD": ("dsd", [TrackSpec(7, "335", 2822400, 1, container="dsf"),
                    TrackSpec(5.000007, "435", 2822400, 1, container="dff"),
                    TrackSpec(4, "535", 5644800, 1, container="dsf")]),
    # Long enough to outlast a 90 s partition or two minutes of a flapping link.
    "Long FLAC": ("flac", [TrackSpec(35, f) for f in ("240", "360", "480", "600")]),
    # An album of ten short tracks: a whole album to pin and play in half a minute.
    "FLAC Ten": ("flac", [TrackSpec(3, str(1100 + 100 * n)) for n in range(10)]),
    # A damaged file between two intact ones.
    "Damaged FLAC": ("flac", [TrackSpec(6, "520"), TrackSpec(10, "620", damage="damaged"),
                              TrackSpec(8, "720", damage="undecodable"), TrackSpec(6, "820")]),
    "Damaged MP3": ("mp3-cbr", [TrackSpec(6, "530"), TrackSpec(10, "630", damage="damaged"),
                                TrackSpec(8, "730", damage="undecodable"), TrackSpec(6, "830")]),
}


def audio_start(path: Path) -> int:
    """The offset of the first audio frame: after FLAC's metadata blocks, or after an MP3's ID3v2
    tag and its first frame (the Xing/LAME header)."""
    data = path.read_bytes()
    if data[:4] == b"fLaC":
        offset = 4
        while True:
            last, length = data[offset] & 0x80, int.from_bytes(data[offset + 1:offset + 4], "big")
            offset += 4 + length
            if last:
                return offset
    offset = 0
    if data[:3] == b"ID3":
        offset = 10 + sum((data[6 + i] & 0x7F) << (7 * (3 - i)) for i in range(4))
    while not (data[offset] == 0xFF and data[offset + 1] & 0xE0 == 0xE0):
        offset += 1
    # MPEG-1 layer III: 144 * bitrate / rate (+ padding); the first frame holds the LAME header.
    bitrates = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
    rates = [44100, 48000, 32000]
    header = data[offset + 2]
    size = 144000 * bitrates[header >> 4] // rates[(header >> 2) & 3] + ((header >> 1) & 1)
    return offset + size


def damage_file(path: Path, how: str) -> None:
    """Damages an encoded file in place, the same way every time (a fixed seed)."""
    import random

    data = bytearray(path.read_bytes())
    start = audio_start(path)
    noise = random.Random(f"{how}:{path.name}")
    if how == "damaged":
        span = len(data) - start
        for fraction in (0.3, 0.5):
            at = start + int(span * fraction)
            for i in range(at, at + 32):
                data[i] ^= 0xA5
        at = start + int(span * 0.7)
        data[at:at] = bytes(noise.getrandbits(8) for _ in range(8192))
    elif how == "undecodable":
        # Its first tenth intact (LMS does not list an MP3 whose first frames are noise).
        start += (len(data) - start) // 10
        data[start:] = bytes(noise.getrandbits(8) for _ in range(len(data) - start))
    else:
        raise ValueError(how)
    path.write_bytes(bytes(data))


def _run(*args: str) -> None:
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


# A lossy decoder's last bit depends on the machine's arithmetic: arm64's libmpg123 rounds 821 of a
# track's 529,200 samples one step away from amd64's. A player built for another machine is held to
# that machine's decoders: SLIMPLAY_REFERENCE_ROOT names its userland, where the reference decoders
# then run (chroot; the files' folder must be seen there at the same path).
REFERENCE_ROOT = os.environ.get("SLIMPLAY_REFERENCE_ROOT")


def _decoder(*args: str) -> list[str]:
    """The command line of a lossy reference decoder, in the reference userland if one is named."""
    return ["chroot", REFERENCE_ROOT, *args] if REFERENCE_ROOT else list(args)


@dataclass(frozen=True)
class Track:
    album: str
    number: int  # 1-based
    title: str
    path: Path  # the file LMS scans
    master: Path  # the WAV it was encoded from (outside the music folder)
    kind: str  # "flac", "mp3-cbr", "mp3-vbr", "ogg", "aac", "he-aac", "alac", "dsd"
    rate: int  # the DSD rate for DSD, the AAC core's for HE-AAC
    bits: int
    seconds: float
    damage: str = ""  # see TrackSpec

    @property
    def reference_bits(self) -> int:
        """The width of its reference decode: the file's, but 24 for AAC (libfaad's 24-bit output)
        and 32 for DSD (DoP frames, as written with `-a 32`)."""
        return {"aac": 24, "he-aac": 24, "dsd": 32}.get(self.kind, self.bits)

    @property
    def output_rate(self) -> int:
        """The rate it plays at: DoP's, a sixteenth of the DSD rate, for DSD; twice the core's for HE-AAC."""
        return {"dsd": self.rate // 16, "he-aac": 2 * self.rate}.get(self.kind, self.rate)

    @property
    def url(self) -> str:
        """The file URL LMS gives this track (tag u)."""
        return "file://" + urllib.parse.quote(str(self.path), safe="/!*'()")

    def reference(self) -> bytes:
        """What a bit-exact player outputs: `flac -d` raw (the file's own width, little-endian), `mpg123 -s`,
        `oggdec -R` (16-bit little-endian), the source itself for Apple Lossless, and for AAC `faad`'s
        24-bit decode (`reference_bits`) trimmed as the file says: faad (libfaad) drops its first frame (1024 frames) itself,
        the rest of the encoder's priming (the first packet's time, from ffprobe) is dropped here, and
        the rest is as long as the source."""
        lossy = self.kind in ("mp3-cbr", "mp3-vbr", "ogg", "aac", "he-aac")
        machine = f"-{Path(REFERENCE_ROOT).name}" if lossy and REFERENCE_ROOT else ""
        target = self.master.with_suffix(f".ref{machine}.raw")
        if not target.exists():
            partial = target.with_suffix(".partial")
            if self.kind == "flac":
                _run("flac", "-s", "-f", "-d", "--force-raw-format", "--endian=little", "--sign=signed",
                     "-o", str(partial), str(self.path))
            elif self.kind == "ogg":
                _run(*_decoder("oggdec", "--quiet", "-R", "-o", str(partial), str(self.path)))
            elif self.kind == "alac":
                _run("sox", str(self.master), "-t", "raw", str(partial))
            elif self.kind == "dsd":
                partial.write_bytes(dsd_files.dop_frames(np.load(self.master)))
            elif self.kind in ("aac", "he-aac"):
                # HE-AAC: priming, length and faad's dropped first packet all at twice the core's rate.
                scale = 2 if self.kind == "he-aac" else 1
                _run(*_decoder("faad", "-q", "-b", "2", "-f", "2", "-o", str(partial), str(self.path)))
                priming = -int(subprocess.run(
                    ["ffprobe", "-v", "error", "-select_streams", "a", "-show_entries", "packet=pts", "-of",
                     "default=nw=1:nk=1", str(self.path)], check=True, capture_output=True, text=True).stdout.split()[0])
                frames = int(subprocess.run(["soxi", "-s", str(self.master)], check=True, capture_output=True,
                                            text=True).stdout)
                start = scale * (priming - 1024) * 6
                frames *= scale
                decoded = partial.read_bytes()
                assert start >= 0 and len(decoded) >= start + frames * 6, (self.path, priming, len(decoded))
                partial.write_bytes(decoded[start:start + frames * 6])
            else:
                with open(partial, "wb") as out:
                    subprocess.run(_decoder("mpg123", "-q", "-s", str(self.path)), check=True, stdout=out)
            partial.rename(target)
        return target.read_bytes()


def signal_sbr(path: Path, output_rate: int) -> None:
    """Switches on the SBR extension of an ffmpeg AAC-LC MP4's AudioSpecificConfig (in place, the same
    size): ffmpeg writes the backward-compatible extension (sync 0x2B7, type 5) with sbrPresentFlag 0;
    set to 1 with the extension's rate, the file is HE-AAC as iTunes-style files signal it."""
    data = bytearray(path.read_bytes())
    rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000]
    found = [i for i in range(len(data) - 10)
             if data[i:i + 5] == b"\x05\x80\x80\x80\x05" and data[i + 7:i + 10] == b"\x56\xe5\x00"]
    assert len(found) == 1, (path, found)
    data[found[0] + 9] = 0x80 | rates.index(output_rate) << 3
    path.write_bytes(data)


class MusicLibrary:
    """`<root>/music/<album>/<NN> <title>.<ext>` (scanned by LMS), `<root>/ref/` (masters and decodes)."""

    def __init__(self, root: Path = Path("/tmp/slimplay-lms-music")):
        self.root = root
        self.music = root / "music"
        self.ref = root / "ref"
        # Files LMS 7.9.1 cannot scan (DSD here), served to it as streams: outside the music folder,
        # where each restart would find them new and rescan the library, renumbering its tracks.
        self.streams = root / "streams"
        self.albums: dict[str, list[Track]] = {}
        for album, (kind, specs) in ALBUMS.items():
            ext = {"flac": "flac", "ogg": "ogg", "aac": "m4a", "he-aac": "m4a", "alac": "m4a"}.get(kind, "mp3")
            slug = album.replace(" ", "_")
            self.albums[album] = [
                Track(album, n, title := f"{album} Track {n} ({spec.freq} Hz)",
                      (self.streams if kind == "dsd" else self.music) / album / f"{n:02d} {title}.{spec.container or ext}",
                      self.ref / f"{slug}-{n:02d}.{'npy' if kind == 'dsd' else 'wav'}",
                      kind, spec.rate, spec.bits, spec.seconds, spec.damage)
                for n, spec in enumerate(specs, start=1)
            ]

    def tracks(self, album: str) -> list[Track]:
        return self.albums[album]

    def all_tracks(self) -> list[Track]:
        return [track for tracks in self.albums.values() for track in tracks]

    def scanned_tracks(self) -> list[Track]:
        """The tracks in LMS's library (not those it only gets as streams): what its song count must be,
        else a start rescans (and renumbers the tracks)."""
        return [track for track in self.all_tracks() if self.music in track.path.parents]

    def build(self) -> MusicLibrary:
        """Makes every missing file (each written under a temporary name, then renamed), readable by all."""
        self.ref.mkdir(parents=True, exist_ok=True)
        for album, (kind, specs) in ALBUMS.items():
            ((self.streams if kind == "dsd" else self.music) / album).mkdir(parents=True, exist_ok=True)
            for track, spec in zip(self.albums[album], specs):
                self._make(track, spec)
        for folder in (self.root, self.music, self.ref, self.streams, *[t.path.parent for t in self.all_tracks()]):
            folder.chmod(0o755)
        for track in self.all_tracks():
            track.path.chmod(0o644)
        return self

    def _make(self, track: Track, spec: TrackSpec) -> None:
        if track.kind == "dsd":
            self._make_dsd(track, spec)
            return
        if not track.master.exists():
            partial = track.master.with_suffix(".partial.wav")
            _run("sox", "-n", "-r", str(spec.rate), "-b", str(spec.bits), "-c", "2", str(partial),
                 "synth", str(spec.seconds), "sine", spec.freq, "whitenoise", "vol", "0.5", "remix", "-",
                 "channels", "2")
            partial.rename(track.master)
        if track.path.exists():
            return
        partial = track.path.with_name(".partial-" + track.path.name)
        if track.kind == "flac":
            _run("flac", "-s", "-f", "-T", f"ARTIST={ARTIST}",
                 "-T", f"ALBUM={track.album}", "-T", f"TITLE={track.title}", "-T", f"TRACKNUMBER={track.number}",
                 "-o", str(partial), str(track.master))
        elif track.kind in ("aac", "he-aac", "alac"):
            # No noise substitution, as in iTunes' encoder: with it a decode that starts mid-track
            # (after a seek) differs from the whole decode in the substituted bands (other noise).
            codec = ["-c:a", "aac", "-aac_pns", "0", "-b:a", "192k"] if track.kind != "alac" else ["-c:a", "alac"]
            if track.bits == 24:
                codec += ["-sample_fmt", "s32p"]
            _run("ffmpeg", "-v", "error", "-y", "-i", str(track.master), *codec, "-movflags", "+faststart",
                 "-metadata", f"title={track.title}", "-metadata", f"artist={ARTIST}", "-metadata",
                 f"album={track.album}", "-metadata", f"track={track.number}", "-f", "mp4", str(partial))
        elif track.kind == "ogg":
            _run("oggenc", "--quiet", "-t", track.title, "-a", ARTIST, "-l", track.album, "-N", str(track.number),
                 "-o", str(partial), str(track.master))
        else:
            quality = ["-b", "320"] if track.kind == "mp3-cbr" else ["-V2"]
            _run("lame", "--quiet", *quality, "--tt", track.title, "--ta", ARTIST, "--tl", track.album,
                 "--tn", str(track.number), str(track.master), str(partial))
        if track.kind == "he-aac":
            signal_sbr(partial, 2 * spec.rate)
        if spec.damage:
            damage_file(partial, spec.damage)
        partial.rename(track.path)

    def _make_dsd(self, track: Track, spec: TrackSpec) -> None:
        """The modulated bits are the master (numpy, MSB first per channel); the file wraps them."""
        if not track.master.exists():
            frequency = float(spec.freq)
            bits = dsd_files.modulate(spec.seconds, spec.rate, (frequency, frequency * 1.5))
            partial = track.master.with_name(".partial-" + track.master.name)
            with open(partial, "wb") as out:
                np.save(out, bits)
            partial.rename(track.master)
        if track.path.exists():
            return
        partial = track.path.with_name(".partial-" + track.path.name)
        write = dsd_files.write_dsf if spec.container == "dsf" else dsd_files.write_dff
        write(partial, np.load(track.master), spec.rate)
        partial.rename(track.path)


# --- the server ---------------------------------------------------------------------------------------------


class _SourceBoundHandler(urllib.request.HTTPHandler):
    """urllib's HTTP handler with the client socket bound to one source address."""

    def __init__(self, source: str):
        super().__init__()
        self.source = source

    def http_open(self, req):  # noqa: ANN001, ANN201
        return self.do_open(functools.partial(http.client.HTTPConnection, source_address=(self.source, 0)), req)


def _int(value: Any, default: int = 0) -> int:
    """LMS sends many numbers as strings."""
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return default


class RealLMS:
    """One LMS instance driven by the `lms` script: `LMS_MUSIC`, `LMS_STATE`, `LMS_ADDR` as given."""

    def __init__(self, script: Path, music: Path, state: Path, addr: str = "127.0.0.2", http_port: int = 9000,
                 start_timeout: float = 300, library: MusicLibrary | None = None, version: str = DEFAULT_VERSION):
        self.script = Path(script)
        self.version = version
        self.music = Path(music)
        self.state = Path(state)
        self.addr = addr
        self.http_port = http_port
        self.start_timeout = start_timeout
        self.library = library
        self.url = f"http://{addr}:{http_port}/jsonrpc.js"
        self._opener = urllib.request.build_opener(_SourceBoundHandler(CLIENT_ADDR))
        self._partitioned = False
        self.logs_commands = False
        self._track_ids: dict[str, int] | None = None
        self.timings: dict[str, float] = {}
        self.stale_scan_flags = 0
        # The script's own curl calls (start/wait) read $CURL_HOME/.curlrc: bind them to the test's address too,
        # so a restart during a partition still sees the server come up.
        self._curl_home = self.state.parent / (self.state.name + "-curl")
        self._curl_home.mkdir(parents=True, exist_ok=True)
        (self._curl_home / ".curlrc").write_text(f"interface = {CLIENT_ADDR}\n")

    # -- the script --

    def _env(self) -> dict[str, str]:
        debug = ",".join(filter(None, [os.environ.get("LMS_DEBUG"),
                                       "control.command=INFO" if self.logs_commands else None]))
        return {**os.environ, "LMS_MUSIC": str(self.music), "LMS_STATE": str(self.state), "LMS_ADDR": self.addr,
                "LMS_HTTP_PORT": str(self.http_port), "LMS_VERSION": self.version, "LMS_START_TIMEOUT": str(int(self.start_timeout)),
                "CURL_HOME": str(self._curl_home), "LMS_DEBUG": debug}

    def script_run(self, *args: str, timeout: float | None = None) -> str:
        result = subprocess.run([str(self.script), *args], env=self._env(), capture_output=True, text=True,
                                timeout=timeout or self.start_timeout + 60)
        if result.returncode != 0:
            raise LMSError(f"lms {' '.join(args)} exited {result.returncode}: {result.stderr.strip()[-2000:]}")
        return result.stdout

    def start(self) -> float:
        """Starts the server (scans the library if the state folder's database is new); returns seconds taken.

        After a `kill()` during a scan LMS's database still says "scanning" (metainformation isScanning=1) and
        a restarted LMS reports `rescan: 1` for ever, so the script would wait for a scan that never ends: the
        stale flag is cleared first (`stale_scan_flags` counts it), and a library left incomplete is
        scanned again (`lms rescan`, which gives new track ids)."""
        t0 = time.monotonic()
        if not self.running() and self._clear_stale_scan_flag():
            self.stale_scan_flags += 1
        try:
            self._script_start("start")
        except LMSError as error:
            # A server that really died at its start: say everything that is known (LMS writes why it gave
            # up to its log, not to its console), clear up and try once more. Whether a server is running on
            # the address after all (under another pid than the pid file's) tells a start the script lost
            # sight of from one that died.
            running = {pid: _cmdline(pid) for pid in self.strays()}
            warnings.warn(f"LMS did not start, trying once more: {error}\n--- pid file: {self.pid()} "
                          f"({_cmdline(self.pid()) if self.pid() else '-'}); LMS processes "
                          f"on {self.addr} besides it: {running or 'none'}\n--- the end of server.log:\n{self.log(15)}",
                          stacklevel=1)
            self.script_run("stop", timeout=60)
            self.reap_strays()
            self.script_run("start")
        self._track_ids = None
        if self.library is not None and self.song_count() != len(self.library.scanned_tracks()):
            self.script_run("rescan")
        self.timings["start"] = time.monotonic() - t0
        return self.timings["start"]

    def _script_start(self, verb: str) -> None:
        """The script's `start` (or `restart`), and what its liveness check misses: it reads the pid file's
        process for `slimserver.pl` a few milliseconds after the start, while that process may still be
        on its way there (unshare, mount, setsid, setpriv, env, each an exec), and then reports "LMS exited
        while starting" of a server that goes on starting (seen under load: the pid file's process was
        `perl slimserver.pl`, scanning, when the script gave up). Such a start is waited for here as the
        script waits for it: JSON-RPC answering and the library scanned."""
        try:
            self.script_run(verb)
            return
        except LMSError as error:
            if "exited while starting" not in str(error) or (pid := self.pid()) is None:
                raise
            failure = error
        waited_from = time.monotonic()
        while time.monotonic() < waited_from + self.start_timeout:
            command = _cmdline(pid)
            if "slimserver.pl" in command:
                with contextlib.suppress(LMSError, OSError):
                    status = self.rpc("", ["serverstatus", 0, 0], timeout=3)
                    if str(status.get("rescan", 0)) == "0" and status.get("lastscan") is not None:
                        warnings.warn(f"the lms script gave up on a start of {self.version} on {self.addr} that went "
                                      f"on: ready {time.monotonic() - waited_from:.1f} s later", stacklevel=2)
                        return
            elif command == "(gone)" or time.monotonic() > waited_from + 5:
                raise failure  # it died, or never became the server
            time.sleep(0.3)
        raise failure

    def song_count(self) -> int:
        return _int(self.rpc("", ["serverstatus", 0, 0]).get("info total songs"))

    def _clear_stale_scan_flag(self) -> bool:
        database = self.state / "cache" / "library.db"
        if not database.exists():
            return False
        # as the LMS user (the database's owner), with the perl DBI the server itself uses
        script = ('my $d = DBI->connect("dbi:SQLite:dbname=$ARGV[0]", "", "", {RaiseError => 1}); '
                  'print $d->do("UPDATE metainformation SET value = 0 WHERE name = \'isScanning\' AND value != 0") + 0')
        result = subprocess.run(["setpriv", f"--reuid={LMS_USER}", f"--regid={LMS_USER}", "--init-groups",
                                 "perl", "-MDBI", "-e", script, str(database)], capture_output=True, text=True)
        if result.returncode != 0:
            raise LMSError(f"could not clear the stale scan flag: {result.stderr.strip()}")
        return result.stdout.strip() not in ("", "0")

    def stop(self) -> None:
        self.script_run("stop", timeout=60)

    def restart(self) -> float:
        """A real server restart: LMS restores each player's queue from its database (with a new timestamp)."""
        t0 = time.monotonic()
        self._script_start("restart")
        self._track_ids = None
        self.timings["restart"] = time.monotonic() - t0
        return self.timings["restart"]

    def strays(self) -> list[int]:
        """LMS processes on this server's address that the state folder's pid file does not name: left by a
        session that was killed before it could stop its server (or by one that used another state folder).
        Such a copy holds port 3483 on the address, so a new server dies at start ("another copy ... running");
        or, if it still answers JSON-RPC, the test would drive the stray instead."""
        ours = self.pid()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == ours:
                continue
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(a.endswith(b"slimserver.pl") for a in argv) and self.addr.encode() in argv:
                found.append(int(entry.name))
        return found

    def reap_strays(self) -> list[int]:
        """SIGKILLs `strays()` and what they started; returns their pids."""
        strays = self.strays()
        _kill_and_wait([v for pid in strays for v in (pid, *_descendants(pid))])
        return strays

    def wipe(self) -> None:
        """Stops the server and deletes the state folder: the next start scans afresh (new track ids)."""
        self.script_run("wipe", timeout=60)

    def running(self) -> bool:
        return subprocess.run([str(self.script), "status"], env=self._env(), capture_output=True).returncode == 0

    def pid(self) -> int | None:
        try:
            return int((self.state / "lms.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def kill(self) -> None:
        """SIGKILL of the server and everything it started (scanner, transcoders), as a crash would leave it:
        the stale pid file stays (the script's `start` sees the process is gone)."""
        pid = self.pid()
        if pid is None or not Path(f"/proc/{pid}").exists():
            return
        victims = [pid, *_descendants(pid)]
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # the script starts LMS with setsid: its own process group
        if left := _kill_and_wait(victims):
            raise LMSError(f"processes {left} survived SIGKILL")

    def saved_client_pref(self, mac: str, name: str) -> str | None:
        """A player's setting as the server last wrote it to its prefs file (it writes 10 s after a change)."""
        try:
            text = (self.state / "prefs" / "server.prefs").read_text(errors="replace")
        except OSError:
            return None
        section = text.split(f"\n_client:{mac}:\n", 1)
        if len(section) < 2:
            return None
        for line in section[1].splitlines():
            if not line.startswith("  "):
                break  # the next client's section
            key, _, value = line.strip().partition(": ")
            if key == name:
                return value
        return None

    def wait_saved(self, mac: str, name: str, value: str, timeout: float = 15) -> None:
        """Waits until the server has written a player's setting: a killed server restarts with what it
        had written, so a setting changed less than 10 s before a kill comes back as it was before."""
        if not self.wait_for(lambda: self.saved_client_pref(mac, name) == value, timeout=timeout):
            raise LMSError(f"{mac}'s {name} not saved as {value}: {self.saved_client_pref(mac, name)}")

    @contextlib.contextmanager
    def commands_logged(self) -> Iterator[None]:
        """The server logs every command it executes (control.command at INFO), also after a restart
        inside the block: what it was asked to do is then in its log (`jumps_since`). Only where a test
        reads it: a server logging every status poll works harder beside the others."""
        self.logs_commands = True
        try:
            with self.logging("control.command", "INFO"):
                yield
        finally:
            self.logs_commands = False

    @contextlib.contextmanager
    def logging(self, category: str, level: str) -> Iterator[None]:
        """The server's log category `category` at `level` inside the block, as it was after it."""
        before = self.rpc("", ["debug", category, "?"]).get("_value", "WARN")
        self.rpc("", ["debug", category, level])
        try:
            yield
        finally:
            with contextlib.suppress(LMSError, OSError):
                self.rpc("", ["debug", category, before])

    def log_lines_since(self, since: float, containing: tuple[str, ...]) -> list[str]:
        """The server.log lines written after `since` (a `time.time()`) that contain one of `containing`."""
        try:
            text = (self.state / "log" / "server.log").read_text(errors="replace")
        except OSError:
            return []
        found = []
        for line in text.splitlines():
            stamp = re.match(r"^\[(\d\d-\d\d-\d\d \d\d:\d\d:\d\d\.\d+)\]", line)
            if stamp and any(needle in line for needle in containing):
                if datetime.strptime(stamp.group(1), "%y-%m-%d %H:%M:%S.%f").timestamp() >= since:
                    found.append(line)
        return found

    def jumps_since(self, since: float) -> list[str]:
        """The `playlist jump`s the server's log shows executed after `since` (a `time.time()`): the line
        its jump command writes ("Jumping to N") inside `commands_logged`."""
        return [line for line in self.log_lines_since(since, ("Jumping to",)) if "playlistJumpCommand" in line]

    def log(self, lines: int = 200) -> str:
        try:
            return "\n".join((self.state / "log" / "server.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # -- JSON-RPC --

    def rpc(self, player: str, params: list[Any], timeout: float = 10) -> dict[str, Any]:
        """One `slim.request` from 127.0.0.3; returns its `result` (LMS sends numbers as strings)."""
        body = json.dumps({"id": 1, "method": "slim.request", "params": [player or "", [str(p) if isinstance(
            p, (int, float)) else p for p in params]]}).encode()
        request = urllib.request.Request(self.url, data=body, headers={"Content-Type": "application/json"})
        try:
            with self._opener.open(request, timeout=timeout) as response:
                answer = json.loads(response.read())
        except http.client.RemoteDisconnected as error:
            if player:
                raise UnknownPlayer(f"LMS gave no answer to {params} for {player}: not a known player") from error
            raise
        if answer.get("error"):
            raise LMSError(f"{params}: {answer['error']}")
        return answer.get("result") or {}

    def server_status(self) -> dict[str, Any]:
        return self.rpc("", ["serverstatus", 0, 50])

    def players(self) -> list[dict[str, Any]]:
        return self.server_status().get("players_loop", [])

    def clear_queues(self) -> None:
        """Empties the queue of every player the server knows, connected or not: tests share a server, and
        a player coming back with the MAC of one the server still shows playing (within the 300 s before
        it forgets it) is made to play on by itself, 8.3.0 from where it was."""
        for player in self.players():
            with contextlib.suppress(LMSError, OSError):
                self.rpc(player["playerid"], ["playlist", "clear"])

    def connected(self, mac: str) -> bool:
        try:
            return any(p.get("playerid") == mac and _int(p.get("connected")) == 1 for p in self.players())
        except OSError:
            return False

    def wait_player(self, mac: str, timeout: float = 30) -> float:
        """Until LMS lists the player as connected; returns the seconds it took."""
        t0 = time.monotonic()
        if not self.wait_for(lambda: self.connected(mac), timeout):
            raise LMSError(f"player {mac} not connected to LMS within {timeout}s")
        return time.monotonic() - t0

    def wait_disconnected(self, mac: str, timeout: float = 30) -> float:
        t0 = time.monotonic()
        if not self.wait_for(lambda: not self.connected(mac), timeout):
            raise LMSError(f"player {mac} still connected to LMS after {timeout}s")
        return time.monotonic() - t0

    @staticmethod
    def wait_for(condition, timeout: float, interval: float = 0.2) -> bool:  # noqa: ANN001
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(OSError, LMSError):
                if condition():
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(interval)

    def status(self, mac: str) -> dict[str, Any]:
        """`status - 50 tags:adlKuf`: mode, time, duration, playlist_cur_index, playlist_timestamp,
        playlist_tracks, mixer volume, playlist_loop (id, title, url, ...), with numbers as LMS sends them."""
        return self.rpc(mac, ["status", "-", 50, STATUS_TAGS])

    def current_index(self, mac: str) -> int | None:
        value = self.status(mac).get("playlist_cur_index")
        return None if value is None else _int(value)

    # -- the library --

    def track_ids(self, refresh: bool = False) -> dict[str, int]:
        """Every library track's id by its file path (from `titles ... tags:u`)."""
        if self._track_ids is None or refresh:
            result = self.rpc("", ["titles", 0, 10000, "tags:u"], timeout=30)
            self._track_ids = {urllib.parse.unquote(urllib.parse.urlparse(t["url"]).path): _int(t["id"])
                               for t in result.get("titles_loop", []) if str(t.get("url", "")).startswith("file:")}
        return self._track_ids

    def track_id(self, path: Path | str) -> int:
        ids = self.track_ids()
        if str(path) not in ids:
            ids = self.track_ids(refresh=True)
        if str(path) not in ids:
            raise LMSError(f"{path} is not in the LMS library ({len(ids)} tracks)")
        return ids[str(path)]

    def load_tracks(self, mac: str, paths: list[Path | str]) -> list[int]:
        """Clears the player's playlist and adds the files in order (by track id); returns the ids.
        Does not start playback."""
        ids = [self.track_id(getattr(p, "path", p)) for p in paths]
        self.rpc(mac, ["playlist", "clear"])
        for track in ids:
            self.rpc(mac, ["playlistcontrol", "cmd:add", f"track_id:{track}"])
        loop = self.status(mac).get("playlist_loop", [])
        got = [_int(entry.get("id")) for entry in loop]
        if got != ids:
            raise LMSError(f"playlist is {got}, expected {ids}")
        return ids

    def play(self, mac: str, index: int = 0) -> None:
        """Starts the playlist at `index` (from its first sample)."""
        self.rpc(mac, ["playlist", "index", index])

    def pause(self, mac: str) -> None:
        self.rpc(mac, ["pause", 1])

    def unpause(self, mac: str) -> None:
        self.rpc(mac, ["pause", 0])

    def stop_playing(self, mac: str) -> None:
        self.rpc(mac, ["stop"])

    def set_volume(self, mac: str, volume: int) -> None:
        self.rpc(mac, ["mixer", "volume", volume])

    # -- the network --

    def _rules(self) -> list[list[str]]:
        return [["INPUT", "-s", PLAYER_ADDR, "-d", self.addr, "-j", "DROP"],
                ["INPUT", "-s", self.addr, "-d", PLAYER_ADDR, "-j", "DROP"]]

    @contextlib.contextmanager
    def partition(self) -> Iterator[None]:
        """Drops every packet between the player (127.0.0.1) and LMS from the call on; heals on leaving the
        `with` block (also on an exception). The test's own queries (from 127.0.0.3) still pass."""
        if shutil.which("iptables") is None:
            raise LMSError("partition() needs iptables (scripts/lib.sh installs it)")
        self.heal()
        try:
            for rule in self._rules():
                subprocess.run(["iptables", "-w", "-I", *rule], check=True, capture_output=True)
            self._partitioned = True
            yield
        finally:
            self.heal()

    def heal(self) -> None:
        """Removes the partition rules (every copy; harmless when there are none or without iptables)."""
        if shutil.which("iptables") is None:
            return
        for rule in self._rules():
            for _ in range(10):
                if subprocess.run(["iptables", "-w", "-D", *rule], capture_output=True).returncode != 0:
                    break
        self._partitioned = False

    @property
    def partitioned(self) -> bool:
        return self._partitioned


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "(gone)"


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill_and_wait(victims: list[int]) -> list[int]:
    """SIGKILLs each process and waits up to 10 s for them to be gone; returns those still there."""
    for victim in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(v) for v in victims):
        time.sleep(0.05)
    return [v for v in victims if _alive(v)]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
