"""Test media made by real encoders at test time, and a loopback HTTP server for them."""

from __future__ import annotations

import functools
import http.server
import subprocess
import threading
from pathlib import Path


def run(*args: str) -> None:
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


class Media:
    """Makes each file once per session: a WAV master, then encodings and reference decodes."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def path(self, name: str) -> Path:
        return self.folder / name

    def tone(self, name: str, seconds: float = 3, rate: int = 44100, bits: int = 16, channels: int = 2,
             freq: str = "440") -> Path:
        """A WAV with a tone plus a little noise (so compressors cannot cheat)."""
        target = self.path(name)
        if not target.exists():
            run("sox", "-n", "-r", str(rate), "-b", str(bits), "-c", str(channels), str(target),
                "synth", str(seconds), "sine", freq, "whitenoise", "vol", "0.5", "remix", "-",
                *(["channels", str(channels)] if channels > 1 else []))
        return target

    def flac(self, wav: Path) -> Path:
        target = wav.with_suffix(".flac")
        if not target.exists():
            run("flac", "-s", "-f", "-o", str(target), str(wav))
        return target

    def raw_reference(self, wav: Path) -> bytes:
        """Signed little-endian interleaved samples of the master, at its own width."""
        target = wav.with_suffix(".ref.raw")
        if not target.exists():
            run("sox", str(wav), "-t", "raw", "-e", "signed-integer", "-L", str(target))
        return target.read_bytes()

    def mp3(self, wav: Path) -> Path:
        target = wav.with_suffix(".mp3")
        if not target.exists():
            run("lame", "--quiet", "-b", "320", str(wav), str(target))
        return target

    def opus(self, wav: Path) -> Path:
        target = wav.with_suffix(".opus")
        if not target.exists():
            run("opusenc", "--quiet", "--bitrate", "128", str(wav), str(target))
        return target

    def vorbis(self, wav: Path) -> Path:
        target = wav.with_suffix(".ogg")
        if not target.exists():
            run("oggenc", "--quiet", "-o", str(target), str(wav))
        return target

    def vorbis_reference(self, ogg_file: Path) -> bytes:
        target = ogg_file.with_suffix(".oggref.raw")
        if not target.exists():
            run("oggdec", "--quiet", "-R", "-o", str(target), str(ogg_file))
        return target.read_bytes()

    def mp3_reference(self, mp3_file: Path) -> bytes:
        target = mp3_file.with_suffix(".mp3ref.raw")
        if not target.exists():
            with open(target, "wb") as out:
                subprocess.run(["mpg123", "-q", "-s", str(mp3_file)], check=True, stdout=out)
        return target.read_bytes()

    def opus_reference(self, opus_file: Path) -> bytes:
        wav = opus_file.with_suffix(".opusref.wav")
        raw = opus_file.with_suffix(".opusref.raw")
        if not raw.exists():
            run("opusdec", "--quiet", "--no-dither", str(opus_file), str(wav))
            run("sox", str(wav), "-t", "raw", "-e", "signed-integer", "-b", "16", "-L", str(raw))
        return raw.read_bytes()

    def flac_reference(self, flac: Path) -> bytes:
        target = flac.with_suffix(".flacref.raw")
        if not target.exists():
            run("flac", "-s", "-f", "-d", "--force-raw-format", "--endian=little", "--sign=signed",
                "-o", str(target), str(flac))
        return target.read_bytes()


class MediaServer:
    """Serves a folder over HTTP/1.0 on loopback (one thread per request)."""

    def __init__(self, folder: Path):
        # LMS serves every library track as /stream.mp3?player=<mac>; tests point it at a file.
        self.aliases: dict[str, str] = {}
        handler = functools.partial(_QuietHandler, directory=str(folder), aliases=self.aliases)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, aliases: dict[str, str], **kwargs):  # noqa: ANN002, ANN003
        self.aliases = aliases
        super().__init__(*args, **kwargs)

    def log_message(self, *args) -> None:  # noqa: ANN002
        pass

    def translate_path(self, path: str) -> str:
        route = path.split("?", 1)[0]
        return super().translate_path("/" + self.aliases[route] if route in self.aliases else path)

    def guess_type(self, path):  # noqa: ANN001, ANN201
        for suffix, mime in ((".flac", "audio/flac"), (".mp3", "audio/mpeg"), (".opus", "audio/opus"), (".ogg", "audio/ogg"),
                             (".wav", "audio/wav"), (".aif", "audio/aiff")):
            if str(path).endswith(suffix):
                return mime
        return super().guess_type(path)


class Capture:
    """Reads a player's stdout (raw PCM) on a thread, as fast as it comes."""

    def __init__(self, stream, bytes_per_second: float | None = None, seconds_for=None):  # noqa: ANN001
        """With `bytes_per_second`, reads no faster than real time (like a sound card); with
        `seconds_for(total_bytes)` instead, the same for audio whose rate changes along the way."""
        self.stream = stream
        self.rate = bytes_per_second
        self.seconds_for = seconds_for or ((lambda total: total / bytes_per_second) if bytes_per_second else None)
        self.started = None
        # (monotonic time it began, seconds) of each wait for data past 50 ms: a gap to a sound card.
        self.late: list[tuple[float, float]] = []
        self.data = bytearray()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        import time

        size = 4096 if self.seconds_for else 65536
        while True:
            chunk = self.stream.read1(size) if hasattr(self.stream, "read1") else self.stream.read(size)
            if not chunk:
                return
            with self.lock:
                self.data.extend(chunk)
                total = len(self.data)
            if self.seconds_for:
                if self.started is None:
                    self.started = time.monotonic()
                ahead = self.seconds_for(total) - (time.monotonic() - self.started)
                if ahead > 0:
                    time.sleep(ahead)
                elif ahead < -0.05:
                    # Nothing came for a while (paused): a sound card does not catch up.
                    self.late.append((time.monotonic() + ahead, -ahead))
                    self.started = time.monotonic() - self.seconds_for(total)

    def wait_for_length(self, length: int, timeout: float) -> bytes:
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(self.bytes()) < length:
            time.sleep(0.02)
        time.sleep(0.1)  # anything beyond the expected length would show now
        return self.bytes()

    def wait_until_quiet(self, quiet: float = 0.3, timeout: float = 5.0) -> bytes:
        """What the player wrote, once nothing more has come for `quiet` seconds: STMu leaves once the
        last frame is written to the pipe, which this reader may not have read yet (seen on a loaded
        machine: a comparison right after STMu took a capture short of its end)."""
        import time

        deadline = time.monotonic() + timeout
        length, since = len(self.bytes()), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.02)
            now = len(self.bytes())
            if now != length:
                length, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                break
        return self.bytes()

    def bytes(self) -> bytes:
        with self.lock:
            return bytes(self.data)

    def gaps(self, since: float, until: float, longer_than: float) -> list[tuple[float, float]]:
        """(monotonic start, seconds) of the gaps longer than `longer_than` that began between `since`
        and `until`, with one still going on (audio overdue now) counted as long as it has lasted."""
        import time

        with self.lock:
            total = len(self.data)
            late = list(self.late)
        started = self.started
        if started is not None and self.seconds_for:
            due = started + self.seconds_for(total)
            if time.monotonic() - due > 0.05:
                late.append((due, time.monotonic() - due))
        return [(at, seconds) for at, seconds in late if since <= at <= until and seconds > longer_than]
