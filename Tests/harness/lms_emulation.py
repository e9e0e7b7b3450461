"""A small LMS (Logitech Media Server) for the integration tests, on top of `LoopbackServer`.

aioslimproto speaks SlimProto but has no library, no real playlist, no `/stream.mp3`, no downloads and no reconnect
rules. `EmulatedLMS` adds the LMS behaviour a player relies on (see slimproto.md, sections 5, 7, 8, 13 and 14):

* per-player state by MAC (queue, current index, mode, seek offset, elapsed, volume) that outlives SlimProto
  disconnects and server restarts;
* LMS-style library streams: `strm s` with autostart '1', an explicit format, server_ip 0 and
  `GET /stream.<ext>?player=<mac>&index=<i>&offset=<samples> HTTP/1.0`, served by its own HTTP app;
  the next queue entry is sent on STMd (gapless), STMs moves the current index, STMu at the end stops;
* JSON-RPC (`POST /jsonrpc.js`) for `status`, `playlist jump|index`, `time`, `pause`, `play`, `stop`,
  `mixer volume` and a few queries, with LMS's loose types;
* `GET /music/<id>/download` with Range, and LMS's silence for unknown ids;
* optional HTTP Basic auth on every route;
* the reconnect rules: the 0x4000 HELO bit, restart-from-start, paused → stopped, forgetting after a while.

Everything runs on the LoopbackServer's event loop thread; the public methods are thread-safe wrappers.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
import secrets
import struct
import time
import zlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web
from aioslimproto.client import SlimClient
from aioslimproto.models import EventType
from .lms import LoopbackServer, free_port
from .slimproto import mute_resp

log = logging.getLogger("lms_emulation")

LMS_VERSION = "7.9.1"
SERVER_HEADER = f"Logitech Media Server ({LMS_VERSION} - TRUNK)"
CONTENT_TYPES = {"flc": "audio/x-flac", "mp3": "audio/mpeg", "wav": "audio/x-wav", "dsf": "audio/x-dsf",
                 "dff": "audio/x-dff"}
STREAM_CONTENT_TYPES = {"flac": "audio/x-flac", "mp3": "audio/mpeg", "pcm": "audio/x-pcm", "wav": "audio/x-wav",
                        "dsf": "audio/x-dsf", "dff": "audio/x-dff"}
# strm pcm codes (slimproto.md §8)
PCM_SIZE_CODES = {8: b"0", 16: b"1", 24: b"2", 32: b"3"}
PCM_RATE_CODES = {
    11025: b"0", 22050: b"1", 32000: b"2", 44100: b"3", 48000: b"4", 8000: b"5", 12000: b"6", 16000: b"7",
    24000: b"8", 96000: b"9", 88200: b":", 176400: b";", 192000: b"<", 352800: b"=", 384000: b">",
}
# LMS's default status tags when a client gives none (genre left out: the tracks have none)
DEFAULT_TAGS = "ald"
ALL_TAGS = "alduofcxtTIH"
CHUNK = 65536


# ---------------------------------------------------------------------------------------------------------------
# Tracks


@dataclass
class AudioInfo:
    sample_rate: int
    channels: int
    bits: int
    total_samples: int
    data_offset: int = 0  # WAV: first byte of the samples
    data_size: int = 0  # WAV: bytes of samples
    frame_offsets: list[int] = field(default_factory=list)  # MP3: byte offset of each audio frame
    samples_per_frame: int = 0  # MP3


@dataclass
class Track:
    """A library track; the fields LMS reports in `playlist_loop`."""

    id: int
    path: Path
    title: str
    artist: str
    album: str
    duration: float
    type: str  # LMS content type: flc, mp3, wav, dsf, dff
    filesize: int
    url: str
    coverid: str
    tracknum: int
    info: AudioInfo

    @property
    def sample_rate(self) -> int:
        return self.info.sample_rate

    @classmethod
    def from_file(cls, track_id: int, path: Path | str, title: str | None = None, artist: str = "Test Artist",
                  album: str = "Test Album", tracknum: int = 1) -> Track:
        path = Path(path).resolve()
        suffix = path.suffix.lower()
        if suffix == ".flac":
            kind, info = "flc", _probe_flac(path)
        elif suffix == ".mp3":
            kind, info = "mp3", _probe_mp3(path)
        elif suffix == ".wav":
            kind, info = "wav", _probe_wav(path)
        elif suffix in (".dsf", ".dff"):
            kind, info = suffix[1:], _probe_dsd(path)
        else:
            raise ValueError(f"unsupported media file {path}")
        return cls(
            id=track_id, path=path, title=title or path.stem, artist=artist, album=album,
            duration=info.total_samples / info.sample_rate, type=kind, filesize=path.stat().st_size,
            url=path.as_uri(), coverid=f"{zlib.crc32(str(path).encode()):08x}", tracknum=tracknum, info=info,
        )


def _probe_dsd(path: Path) -> AudioInfo:
    """A DSF or DSDIFF file as dsd_files.py writes them: its DSD rate, and its length in bits per
    channel (`total_samples`)."""
    data = path.read_bytes()
    if data[:4] == b"DSD ":
        channels, rate = struct.unpack("<II", data[52:60])
        total = struct.unpack("<Q", data[64:72])[0]
        return AudioInfo(sample_rate=rate, channels=channels, bits=1, total_samples=total)
    if data[:4] == b"FRM8":
        def chunks(start: int, end: int):  # noqa: ANN202
            while start + 12 <= end:
                size = int.from_bytes(data[start + 4:start + 12], "big")
                yield data[start:start + 4], start + 12, size
                start += 12 + size + size % 2

        found = {ident: (body, size) for ident, body, size in chunks(16, len(data))}
        prop, prop_size = found[b"PROP"]
        properties = {ident: body for ident, body, _ in chunks(prop + 4, prop + prop_size)}  # after "SND "
        rate = int.from_bytes(data[properties[b"FS  "]:][:4], "big")
        channels = int.from_bytes(data[properties[b"CHNL"]:][:2], "big")
        total = found[b"DSD "][1] // channels * 8
        return AudioInfo(sample_rate=rate, channels=channels, bits=1, total_samples=total)
    raise ValueError(f"{path}: not a DSF or DSDIFF file")


def _probe_flac(path: Path) -> AudioInfo:
    data = path.read_bytes()[:42]
    if data[:4] != b"fLaC" or (data[4] & 0x7F) != 0:
        raise ValueError(f"{path}: no STREAMINFO")
    bits = int.from_bytes(data[18:26], "big")  # rate 20, channels-1 3, bps-1 5, total samples 36
    return AudioInfo(
        sample_rate=bits >> 44, channels=((bits >> 41) & 0x7) + 1, bits=((bits >> 36) & 0x1F) + 1,
        total_samples=bits & 0xFFFFFFFFF,
    )


def _probe_wav(path: Path) -> AudioInfo:
    data = path.read_bytes()
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ValueError(f"{path}: not a WAV file")
    position, fmt = 12, None
    while position + 8 <= len(data):
        chunk, size = data[position : position + 4], struct.unpack("<I", data[position + 4 : position + 8])[0]
        body = position + 8
        if chunk == b"fmt ":
            fmt = struct.unpack("<HHIIHH", data[body : body + 16])
        elif chunk == b"data" and fmt:
            _, channels, rate, _, block_align, bits = fmt
            size = min(size, len(data) - body)
            return AudioInfo(rate, channels, bits, size // block_align, data_offset=body, data_size=size)
        position = body + size + (size & 1)
    raise ValueError(f"{path}: no fmt/data chunk")


_MP3_BITRATES = {
    1: [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],  # MPEG-1 layer III
    2: [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],  # MPEG-2/2.5 layer III
}
_MP3_RATES = {3: [44100, 48000, 32000], 2: [22050, 24000, 16000], 0: [11025, 12000, 8000]}


def _probe_mp3(path: Path) -> AudioInfo:
    """Walks the layer III frames: their offsets let a seek start at a frame boundary."""
    data = path.read_bytes()
    position = 0
    if data[:3] == b"ID3":
        size = (data[6] & 0x7F) << 21 | (data[7] & 0x7F) << 14 | (data[8] & 0x7F) << 7 | (data[9] & 0x7F)
        position = 10 + size + (10 if data[5] & 0x10 else 0)
    offsets: list[int] = []
    rate = channels = samples_per_frame = 0
    while position + 4 <= len(data):
        b1, b2, b3 = data[position + 1], data[position + 2], data[position + 3]
        version, layer = (b1 >> 3) & 3, (b1 >> 1) & 3
        bitrate_index, rate_index = b2 >> 4, (b2 >> 2) & 3
        if data[position] != 0xFF or b1 & 0xE0 != 0xE0 or version == 1 or layer != 1 or bitrate_index in (0, 15) \
                or rate_index == 3:
            if offsets:
                break  # trailing tag (ID3v1, APE)
            position += 1
            continue
        mpeg1 = version == 3
        bitrate = _MP3_BITRATES[1 if mpeg1 else 2][bitrate_index] * 1000
        rate = _MP3_RATES[version][rate_index]
        samples_per_frame = 1152 if mpeg1 else 576
        length = (144 if mpeg1 else 72) * bitrate // rate + ((b2 >> 1) & 1)
        channels = 1 if b3 >> 6 == 3 else 2
        frame = data[position : position + length]
        if offsets or (b"Xing" not in frame[:64] and b"Info" not in frame[:64]):
            offsets.append(position)  # the Xing/Info frame carries no audio
        position += length
    if not offsets:
        raise ValueError(f"{path}: no MP3 frames")
    return AudioInfo(rate, channels, 16, len(offsets) * samples_per_frame, frame_offsets=offsets,
                     samples_per_frame=samples_per_frame)


# ---------------------------------------------------------------------------------------------------------------
# Per-player state


@dataclass(eq=False)  # compared by identity: two requests for the same entry are still two streams
class Stream:
    """One `strm s` sent: which queue entry, from where (seconds)."""

    index: int
    offset: float


@dataclass
class PlayerState:
    """What LMS keeps about a player, by MAC, across disconnects and server restarts."""

    mac: str
    queue: list[Track] = field(default_factory=list)
    cur_index: int = 0
    mode: str = "stop"  # play | pause | stop
    start_offset: float = 0.0  # seconds into the current track where its stream started (seek)
    playlist_timestamp: float = field(default_factory=time.time)
    elapsed_ms: int = 0  # last STAT elapsed that belongs to the current track
    elapsed_at: float = 0.0  # monotonic time it arrived
    reported_elapsed_ms: int = 0  # raw elapsed of the very last STAT, whatever it belonged to
    volume: int = 50
    power: bool = True
    name: str = ""
    capabilities: list[str] = field(default_factory=list)  # HELO format tokens, in the player's order
    client: SlimClient | None = None
    known: bool = False  # LMS has a client object for this MAC (a HELO was seen and not forgotten since)
    disconnected_at: float | None = None  # monotonic
    # Stream bookkeeping (LMS's song queue in StreamingController).
    streaming: Stream | None = None  # the latest stream requested
    pending: list[Stream] = field(default_factory=list)  # requested but not started (no STMs yet)
    started: bool = False  # the current track reported STMs: elapsed is meaningful
    flushed: bool = False  # strm q sent: STATs until the next STMc describe the dropped stream
    awaiting_stmc: bool = False  # strm s sent, its STMc not yet seen: STMd/STMu are about an older stream
    decoded: bool = False  # STMd seen for `streaming`

    @property
    def connected(self) -> bool:
        return self.client is not None and self.client.connected

    @property
    def streaming_index(self) -> int | None:
        return self.streaming.index if self.streaming else None

    @property
    def current(self) -> Track | None:
        return self.queue[self.cur_index] if 0 <= self.cur_index < len(self.queue) else None

    def elapsed(self) -> float:
        """Seconds into the current stream, extrapolated from the last STAT while playing (as LMS does)."""
        if not self.started:
            return 0.0
        seconds = self.elapsed_ms / 1000
        if self.mode == "play":
            seconds += time.monotonic() - self.elapsed_at
        track = self.current
        if track:
            seconds = min(seconds, max(track.duration - self.start_offset, 0.0))
        return max(seconds, 0.0)

    def time(self) -> float:
        """LMS's `time`: start offset + elapsed; 0 when stopped."""
        return 0.0 if self.mode == "stop" else self.start_offset + self.elapsed()

    def touch_playlist(self) -> None:
        self.playlist_timestamp = max(time.time(), self.playlist_timestamp + 0.001)


@dataclass
class DownloadRequest:
    track_id: str  # as it appeared in the path
    range: str | None  # the Range header
    method: str
    at: float  # monotonic
    status: int | None = None  # None while held open (unknown id) or cut before answering


@dataclass
class StreamRequest:
    mac: str
    index: int
    offset: int  # samples
    ext: str
    headers: dict[str, str]
    at: float


# ---------------------------------------------------------------------------------------------------------------
# SlimClient hooks: aioslimproto has no place for them, so (like lms.py's recorder) they wrap the class methods
# and find the emulator by the server socket a client arrived on.

_emulators: dict[tuple[str, int], EmulatedLMS] = {}


def _emulator_of(client: SlimClient) -> EmulatedLMS | None:
    sockname = client._writer.get_extra_info("sockname")
    return _emulators.get((sockname[0], sockname[1])) if sockname else None


def _install_hooks() -> None:
    if getattr(SlimClient, "_lms_emulation_hooked", False):
        return
    # Wraps whatever is installed now (lms.py's recording hooks, which LoopbackServer installs first).
    previous_helo, previous_stat, previous_dsco = SlimClient._process_helo, SlimClient._process_stat, \
        SlimClient._process_dsco

    async def process_helo(self: SlimClient, data: bytes) -> None:
        emulator = _emulator_of(self)
        if emulator:
            emulator._guarded(emulator._before_helo, self, data)
        await previous_helo(self, data)
        if emulator:
            try:
                await emulator._after_helo(self, data)
            except Exception:
                log.exception("HELO handling failed")

    async def process_stat(self: SlimClient, data: bytes) -> None:
        emulator = _emulator_of(self)
        if emulator:
            emulator._guarded(emulator._on_stat, self, data)
        await previous_stat(self, data)

    def process_dsco(self: SlimClient, data: bytes) -> None:
        emulator = _emulator_of(self)
        if emulator and data:
            emulator._guarded(emulator._on_dsco, self, data[0])
        previous_dsco(self, data)

    SlimClient._process_helo = process_helo
    SlimClient._process_stat = process_stat
    SlimClient._process_dsco = process_dsco
    SlimClient._lms_emulation_hooked = True


# ---------------------------------------------------------------------------------------------------------------


class EmulatedLMS(LoopbackServer):
    """An LMS-like server: SlimProto (aioslimproto) on `port`, HTTP (JSON-RPC, streams, downloads) on `http_port`.

    Both listen on 127.0.0.1 and keep their ports across `stop()`/`start()`/`restart()`.
    """

    def __init__(self, port: int | None = None, http_port: int | None = None, *, user: str | None = None,
                 password: str | None = None, forget_seconds: float = 300.0, volume: int = 50,
                 string_numbers: bool = False, wav_format: str | None = None):
        """
        - user/password: HTTP Basic auth on every route (LMS's "password protection").
        - forget_seconds: how long a disconnected player is remembered (LMS: 300 s).
        - volume: the volume a new player starts with.
        - string_numbers: report more numbers as strings (`time`, `duration`, `id`…), to check lenient clients.
        - wav_format: 'flc' (transcode) or 'pcm' (raw samples) for WAV tracks; default: LMS's rule, the first of
          the two in the player's HELO format list.
        """
        super().__init__(port)
        _install_hooks()
        self.http_port = http_port or free_port()
        self.user, self.password = user, password
        self.forget_seconds = forget_seconds
        self.default_volume = volume
        self.string_numbers = string_numbers
        self.wav_format = wav_format
        # Throttles in bytes/s (None = as fast as possible); read per chunk, so a test may change them mid-transfer.
        self.download_rate: float | None = None
        self.stream_rate: float | None = None
        # Bumped by end_streams(): every transfer begun before it ends at its next chunk, cleanly.
        self.stream_generation = 0
        self.library: dict[int, Track] = {}
        self.artwork_requests: list[tuple[str, str]] = []
        self.artwork_delay: float = 0.0
        # Track ids whose downloads fail with 503 (a test's way to keep a track out of a cache).
        self.refused_download_ids: set[int] = set()
        self.players: dict[str, PlayerState] = {}
        self.downloads: list[DownloadRequest] = []
        self.stream_requests: list[StreamRequest] = []
        self.commands: list[tuple[str, list[Any]]] = []  # every CLI command (JSON-RPC or jsonrpc()), in order
        self.unknown_commands: list[tuple[str, list[Any]]] = []
        # LMS puts per-stream credentials into the strm request when auth is on (slimproto.md §8.1).
        self._stream_credentials = f"squeezebox{secrets.randbelow(1000):03d}:{secrets.token_hex(5)}"
        self._runner: web.AppRunner | None = None
        self._http_tasks: dict[asyncio.Task, asyncio.Transport | None] = {}
        self._held: set[asyncio.Task] = set()
        self._tasks: set[asyncio.Task] = set()
        self._next_id = 1
        _emulators[(self.host, self.port)] = self

    # --- lifecycle ------------------------------------------------------------------------------------------

    async def _start(self) -> None:
        await super()._start()
        self.server.subscribe(self._on_disconnect_event, EventType.PLAYER_DISCONNECTED)
        await self._start_http()

    async def _stop(self) -> None:
        # A dying server loses both sides at the same instant: drop every SlimProto and HTTP
        # connection in this one step, so nothing a player sends as its streams break (a decode
        # error, say) can still be answered over SlimProto.
        if self.server:
            listener = self.server._server
            if listener:
                listener.close()
            for client in list(self.server._players.values()):
                client._writer.transport.abort()
        for transport in list(self._http_tasks.values()):
            if transport is not None:
                transport.abort()
        await self._stop_http()
        await super()._stop()
        now = time.monotonic()
        for state in self.players.values():
            if state.client is not None:
                state.client = None
                state.disconnected_at = now

    def restart(self, forget: bool = False, down_seconds: float = 0.0) -> None:
        """Stops both servers and starts them again on the same ports.

        forget=False keeps every player's state (a short outage); forget=True makes every player "a new, stopped
        client" on its next HELO, with its stored playlist (and current index) kept.
        """
        self.stop()
        if forget:
            self.call(self._as_coroutine(lambda: [self._forget(s) for s in self.players.values()]))
        if down_seconds:
            time.sleep(down_seconds)
        self.start()

    def close(self) -> None:
        try:
            super().close()
        finally:
            _emulators.pop((self.host, self.port), None)

    # --- public helpers (thread-safe) -----------------------------------------------------------------------

    def add_track(self, path: Path | str, title: str | None = None, artist: str = "Test Artist",
                  album: str = "Test Album") -> Track:
        """Adds a file to the library (one id per file, like a scan) and returns its track."""
        resolved = Path(path).resolve()
        for track in self.library.values():
            if track.path == resolved:
                return track
        track = Track.from_file(self._next_id, resolved, title, artist, album, tracknum=self._next_id)
        self.library[track.id] = track
        self._next_id += 1
        return track

    def load(self, mac: str, tracks: Iterable[Track | Path | str], index: int = 0, play: bool = False) -> None:
        """Replaces the player's queue (stopping playback); paths are added to the library first."""
        items = [t if isinstance(t, Track) else self.add_track(t) for t in tracks]

        async def run() -> None:
            state = self._state(mac)
            if state.mode != "stop":
                await self._stop_playback(state)
            state.queue = items
            state.cur_index = index
            state.start_offset = 0.0
            state.touch_playlist()
            if play:
                await self._play(state, index)

        self.call(run)

    def edit(self, mac: str, op: str, index: int, tracks: Iterable[Track | Path | str] = ()) -> None:
        """Edits the queue: op 'insert' (tracks before `index`), 'delete' (the entry at `index`) or 'replace'
        (the entry at `index` by the one track given). Indices of the current and prefetched entries follow."""
        items = [t if isinstance(t, Track) else self.add_track(t) for t in tracks]

        async def run() -> None:
            state = self._state(mac)
            if op == "insert":
                state.queue[index:index] = items
                shift = lambda i: i + len(items) if i >= index else i  # noqa: E731
            elif op == "delete":
                del state.queue[index]
                shift = lambda i: i - 1 if i > index else i  # noqa: E731
            elif op == "replace":
                (state.queue[index],) = items
                shift = lambda i: i  # noqa: E731
            else:
                raise ValueError(op)
            deleted_current = op == "delete" and index == state.cur_index
            state.cur_index = shift(state.cur_index)
            streams = set(state.pending) | ({state.streaming} if state.streaming else set())
            for stream in streams:
                stream.index = shift(stream.index)
            state.touch_playlist()
            if deleted_current and state.mode != "stop":
                # LMS moves on to what is now at that position
                if state.cur_index < len(state.queue):
                    await self._play(state, state.cur_index)
                else:
                    await self._stop_playback(state)
            state.cur_index = min(state.cur_index, max(len(state.queue) - 1, 0))

        self.call(run)

    def play(self, mac: str, index: int, offset_seconds: float = 0.0) -> None:
        """strm q, then an LMS-style strm s for queue entry `index` from `offset_seconds`."""
        self.call(lambda: self._play(self._state(mac), index, offset_seconds))

    def pause(self, mac: str, paused: bool = True) -> None:
        self.call(lambda: self._pause(self._state(mac), paused))

    def stop_player(self, mac: str) -> None:
        self.call(lambda: self._stop_playback(self._state(mac)))

    def set_volume(self, mac: str, volume: int) -> None:
        self.call(lambda: self._set_volume(self._state(mac), volume))

    def status_of(self, mac: str, start: int | str = 0, count: int = 999, tags: str = ALL_TAGS) -> dict[str, Any]:
        """What JSON-RPC `status <start> <count> tags:<tags>` returns (the whole queue, all tags by default)."""
        return self.jsonrpc(mac, ["status", start, count, f"tags:{tags}"])

    def jsonrpc(self, mac: str, command: list[Any]) -> dict[str, Any]:
        """Runs a CLI command as `/jsonrpc.js` would and returns its `result`."""
        return self.call(lambda: self._command(mac, list(command)))

    def state(self, mac: str) -> PlayerState | None:
        """The live state object (read it, do not change it from the test thread)."""
        return self.players.get(mac.lower())

    def client(self, mac: str) -> SlimClient | None:
        """The connected SlimClient of `mac`, if any."""
        state = self.state(mac)
        return state.client if state and state.connected else None

    def stat_events(self, kinds: tuple[str, ...] = ("STMs", "STMd", "STMu", "STMn", "STMo", "STMf", "STMc"),
                    since: int = 0) -> list[str]:
        with self.recorder.lock:
            return [s.event for s in self.recorder.stats[since:] if s.event in kinds]

    def held_downloads(self) -> int:
        """Requests for unknown ids still held open (the client has not gone away yet)."""
        return sum(1 for task in self._held if not task.done())

    # --- SlimProto side ---------------------------------------------------------------------------------------

    def _spawn(self, coroutine: Any) -> None:
        """Runs a reaction to a player message in the background; SlimProto handlers must not block."""
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)

        def done(finished: asyncio.Task) -> None:
            self._tasks.discard(finished)
            if not finished.cancelled() and finished.exception():
                log.error("background task failed", exc_info=finished.exception())

        task.add_done_callback(done)

    def _guarded(self, function: Any, *args: Any) -> None:
        try:
            function(*args)
        except Exception:
            log.exception("%s failed", function.__name__)

    def _state(self, mac: str) -> PlayerState:
        mac = mac.lower()
        state = self.players.get(mac)
        if state is None:
            state = self.players[mac] = PlayerState(mac, volume=self.default_volume)
        self._expire(state)
        return state

    def _expire(self, state: PlayerState) -> None:
        """Forgets a player disconnected for longer than forget_seconds (LMS deletes the client)."""
        if state.client is not None and not state.client.connected:
            state.client = None
            state.disconnected_at = state.disconnected_at or time.monotonic()
        if state.known and state.client is None and state.disconnected_at is not None \
                and time.monotonic() - state.disconnected_at >= self.forget_seconds:
            log.info("forgetting %s after %.1f s", state.mac, time.monotonic() - state.disconnected_at)
            self._forget(state)

    def _forget(self, state: PlayerState) -> None:
        """A new, stopped client next time; the stored playlist and current index survive."""
        state.known = False
        state.mode = "stop"
        self._reset_streams(state)
        state.start_offset = 0.0

    @staticmethod
    def _reset_streams(state: PlayerState) -> None:
        state.streaming = None
        state.pending = []
        state.started = False
        state.decoded = False
        state.awaiting_stmc = False
        state.elapsed_ms = 0

    def _on_disconnect_event(self, event: Any) -> None:
        state = self.players.get(event.player_id)
        # The event names the MAC only: a new connection may already have replaced the one that closed.
        if state and state.client is not None and not state.client.connected:
            state.client = None
            state.disconnected_at = time.monotonic()

    def _before_helo(self, client: SlimClient, data: bytes) -> None:
        # aioslimproto's HELO handler sends aude and audg from these: give it LMS's remembered power and volume
        # (its own defaults, power off, would switch a reconnecting player's output off).
        mac = ":".join(f"{b:02x}" for b in data[2:8])
        state = self._state(mac)
        if state.client is not None and state.client is not client and state.client.connected:
            # LMS closes the old socket of a MAC that says HELO again (aioslimproto would drop the new one)
            state.client.disconnect()
        client._powered = state.power
        client.volume_control.volume = state.volume
        client.display_control.disabled = True  # LMS sends no display frames to a SqueezePlay-type player
        mute_resp(self, client)

    async def _after_helo(self, client: SlimClient, data: bytes) -> None:
        if not client.connected:
            return
        mac = client.player_id
        state = self._state(mac)
        reconnect = bool(struct.unpack("!H", data[24:26])[0] & 0x4000) if len(data) >= 26 else False
        state.capabilities = [token for token in data[36:].decode(errors="replace").split(",") if "=" not in token]
        was_known = state.known
        state.client = client
        state.disconnected_at = None
        state.known = True
        log.info("HELO %s reconnect=%s known=%s mode=%s", mac, reconnect, was_known, state.mode)
        if not was_known:
            # a new client (or one forgotten): stopped; LMS makes sure with strm q
            state.mode = "stop"
            self._reset_streams(state)
            await self._send_q(state)
        elif reconnect:
            # the player kept its stream and buffers: leave it alone
            if state.mode == "stop":
                await self._send_q(state)
        elif state.mode == "play":
            await self._play(state, state.cur_index, 0.0)  # restart the current song from its start
        else:
            await self._stop_playback(state, force=True)

    def _on_stat(self, client: SlimClient, data: bytes) -> None:
        state = self.players.get(client.player_id)
        if state is None or state.client is not client or len(data) < 4:
            return
        event = data[:4].decode(errors="replace")
        elapsed_ms = struct.unpack("!I", data[43:47])[0] if len(data) >= 47 else 0
        state.reported_elapsed_ms = elapsed_ms
        if event == "STMc":
            state.awaiting_stmc = False
            state.flushed = False
            return
        if state.flushed:
            return  # the stream we dropped is still talking
        if event == "STMs":
            if state.pending:
                stream = state.pending.pop(0)
                state.cur_index, state.start_offset = stream.index, stream.offset
            state.started = True
            if state.mode != "pause":
                state.mode = "play"
        if state.started:
            state.elapsed_ms, state.elapsed_at = elapsed_ms, time.monotonic()
        if state.awaiting_stmc:
            return  # STMd/STMu before the newest stream connected describe an older one
        if event == "STMd" and state.streaming and not state.decoded:
            state.decoded = True
            following = state.streaming.index + 1
            if state.mode in ("play", "pause") and following < len(state.queue):
                self._spawn(self._send_stream(state, Stream(following, 0.0)))
        elif event == "STMu" and not state.pending and state.mode != "stop":
            state.mode = "stop"
            self._reset_streams(state)
        elif event == "STMl" and state.mode == "play":
            self._spawn(self._send_strm(state, b"u"))
        elif event == "STMn" and state.streaming:
            # LMS skips a track the player cannot decode
            following = state.streaming.index + 1
            log.warning("%s: decode error on queue entry %d", state.mac, state.streaming.index)
            if state.mode == "play" and following < len(state.queue):
                self._spawn(self._play(state, following))
            else:
                self._spawn(self._stop_playback(state))

    def _on_dsco(self, client: SlimClient, reason: int) -> None:
        state = self.players.get(client.player_id)
        if state is None or state.client is not client or state.flushed:
            return
        # StreamingController::_AutoStart: the stream ended before its track started (short data, or a
        # prefetched next track) — tell the player to start it when it gets there.
        if reason == 0 and state.mode == "play" and state.streaming in state.pending:
            self._spawn(self._send_strm(state, b"u"))

    async def _send_strm(self, state: PlayerState, command: bytes) -> bool:
        if not state.connected:
            return False
        await state.client._send_strm(command, autostart=b"0", flags=0)
        return True

    async def _send_q(self, state: PlayerState) -> None:
        if state.connected:
            state.flushed = True  # before the send: STATs handled while it drains are already stale
            await self._send_strm(state, b"q")

    def _stream_format(self, state: PlayerState, track: Track) -> tuple[bytes, str]:
        """(strm format bytes, stream extension) for a track, as LMS would pick them for this player."""
        if track.type == "flc":
            return b"f????", "flac"
        if track.type == "mp3":
            return b"m????", "mp3"
        if track.type in ("dsf", "dff"):
            return b"d????", track.type  # sent as it is
        # LMS takes the first format in the player's list it can convert WAV to: flc (transcode) or pcm.
        preferred = [token for token in state.capabilities if token in ("flc", "pcm")]
        choice = self.wav_format or (preferred[0] if preferred else "flc")
        if choice == "pcm":
            info = track.info
            return b"p" + PCM_SIZE_CODES[info.bits] + PCM_RATE_CODES[info.sample_rate] + \
                str(info.channels).encode() + b"1", "pcm"
        return b"f????", "flac"

    async def _send_stream(self, state: PlayerState, stream: Stream, autostart: bytes = b"1") -> bool:
        """An LMS library `strm s` (slimproto.md §8.1) for `stream`; no strm q (that is the caller's)."""
        if not state.connected or not 0 <= stream.index < len(state.queue):
            return False
        track = state.queue[stream.index]
        codec, ext = self._stream_format(state, track)
        samples = round(stream.offset * track.sample_rate)
        request = f"GET /stream.{ext}?player={state.mac}&index={stream.index}&offset={samples} HTTP/1.0\r\n"
        if self.user is not None:
            request += f"Authorization: Basic {base64.b64encode(self._stream_credentials.encode()).decode()}\r\n"
        request += "\r\n"
        output_threshold = 1 if track.type == "mp3" else 20 if track.sample_rate > 48000 else 0
        state.streaming = stream
        state.pending.append(stream)
        state.decoded = False
        state.awaiting_stmc = True
        await state.client._send_strm(
            b"s", autostart=autostart, codec_details=codec, threshold=255, spdif=b"0", trans_duration=10,
            trans_type=b"0", flags=0, output_threshold=output_threshold, replay_gain=0,
            server_port=self.http_port, server_ip=0, httpreq=request.encode(),
        )
        return True

    async def _play(self, state: PlayerState, index: int, offset: float = 0.0, paused: bool = False) -> None:
        """Jump: strm q, then strm s for `index` from `offset` s. Paused: autostart '0', wait for unpause."""
        if not state.queue:
            return
        index = max(0, min(index, len(state.queue) - 1))
        offset = max(0.0, offset)
        state.cur_index, state.start_offset = index, offset
        self._reset_streams(state)
        if not state.connected:
            state.mode = "stop"
            return
        state.mode = "pause" if paused else "play"
        await self._send_q(state)
        if not state.client.powered:
            await state.client.power(True)
            state.power = True
        await self._send_stream(state, Stream(index, offset), autostart=b"0" if paused else b"1")

    async def _pause(self, state: PlayerState, paused: bool) -> None:
        if paused and state.mode == "play":
            if state.started:  # freeze the clock where it is now
                state.elapsed_ms, state.elapsed_at = round(state.elapsed() * 1000), time.monotonic()
            state.mode = "pause"
            await self._send_strm(state, b"p")
        elif not paused and state.mode == "pause":
            state.elapsed_at = time.monotonic()
            state.mode = "play"
            await self._send_strm(state, b"u")

    async def _stop_playback(self, state: PlayerState, force: bool = False) -> None:
        was_stopped = state.mode == "stop"
        state.mode = "stop"
        self._reset_streams(state)
        state.start_offset = 0.0
        if not was_stopped or force:
            await self._send_q(state)

    async def _set_volume(self, state: PlayerState, volume: int) -> None:
        state.volume = max(0, min(100, int(volume)))
        if state.connected:
            await state.client.volume_set(state.volume)

    # --- CLI / JSON-RPC --------------------------------------------------------------------------------------

    async def _command(self, mac: str, command: list[Any]) -> dict[str, Any]:
        mac = (mac or "").lower()
        self.commands.append((mac, command))
        name = str(command[0]).lower() if command else ""
        if name == "serverstatus":
            return self._serverstatus()
        if name == "version":
            return {"_version": LMS_VERSION}
        if not mac or (mac not in self.players):
            return self._unknown(mac, command)
        state = self._state(mac)
        positional = [a for a in command[1:] if not (isinstance(a, str) and ":" in a)]
        tagged = dict(a.split(":", 1) for a in command[1:] if isinstance(a, str) and ":" in a)
        arg = lambda i: positional[i] if i < len(positional) else None  # noqa: E731
        if name == "status":
            return self._status(state, arg(0), arg(1), tagged.get("tags"))
        if name == "playlist" and str(arg(0)) in ("jump", "index"):
            return await self._jump(state, positional[1:])
        if name == "time":
            return await self._time(state, arg(0))
        if name == "pause":
            value = arg(0)
            await self._pause(state, state.mode != "pause" if value is None else _number(value) != 0)
            return {}
        if name == "play":
            if state.mode == "pause":
                await self._pause(state, False)
            elif state.mode == "stop":
                await self._play(state, state.cur_index)
            return {}
        if name == "stop":
            await self._stop_playback(state)
            return {}
        if name == "mode" and arg(0) == "?":
            return {"_mode": state.mode}
        if name == "mixer" and str(arg(0)) == "volume":
            value = str(arg(1))
            if value == "?":
                return {"_volume": state.volume}
            if value.startswith(("+", "-")):
                await self._set_volume(state, state.volume + _number(value))
            else:
                await self._set_volume(state, _number(value))
            return {}
        if name == "power" and arg(0) is not None:
            if str(arg(0)) == "?":
                return {"_power": int(state.power)}
            state.power = _number(arg(0)) != 0
            if not state.power:
                await self._stop_playback(state)
            if state.connected:
                await state.client.power(state.power)
            return {}
        return self._unknown(mac, command)

    def _unknown(self, mac: str, command: list[Any]) -> dict[str, Any]:
        log.warning("unsupported command for %r: %r", mac, command)
        self.unknown_commands.append((mac, command))
        return {}

    async def _jump(self, state: PlayerState, args: list[Any]) -> dict[str, Any]:
        """`playlist jump|index <i> [fadeIn] [noplay] [{"timeOffset": t}]`."""
        seek = next((a for a in args if isinstance(a, dict)), {})
        plain = [a for a in args if not isinstance(a, dict)]
        if not plain or not state.queue:
            return {}
        target = str(plain[0])
        if target == "?":
            return {"_index": state.cur_index}
        count = len(state.queue)
        index = state.cur_index + int(_number(target)) if target.startswith(("+", "-")) else int(_number(target))
        index %= count
        noplay = len(plain) > 2 and _number(plain[2]) == 1
        offset = float(_number(seek.get("timeOffset", 0)) or 0)
        if noplay and state.mode == "stop":
            state.cur_index, state.start_offset = index, 0.0
            return {}
        await self._play(state, index, offset)
        return {}

    async def _time(self, state: PlayerState, value: Any) -> dict[str, Any]:
        if value is None or str(value) == "?":
            return {"_time": state.time()}
        track = state.current
        if state.mode == "stop" or track is None:
            return {}
        text = str(value)
        target = state.time() + _number(text) if text.startswith(("+", "-")) else _number(text)
        if target >= track.duration:
            # past the end: on to the next track, as LMS does
            if state.cur_index + 1 < len(state.queue):
                await self._play(state, state.cur_index + 1)
            else:
                await self._stop_playback(state)
            return {}
        await self._play(state, state.cur_index, max(0.0, float(target)), paused=state.mode == "pause")
        return {}

    def _status(self, state: PlayerState, start: Any, count: Any, tags: str | None) -> dict[str, Any]:
        """Queries.pm statusQuery, the parts a player needs."""
        wrap = (lambda v: str(v)) if self.string_numbers else (lambda v: v)  # noqa: E731
        result: dict[str, Any] = {
            "player_name": state.name or state.mac,
            "player_connected": int(state.connected),
            "power": int(state.power),
            "signalstrength": 0,
            "mode": state.mode,
            "rate": 1,
            "can_seek": 1,
            "mixer volume": wrap(state.volume),
            "playlist repeat": 0,
            "playlist shuffle": 0,
            "playlist mode": "off",
            "seq_no": 0,
            "digital_volume_control": 1,
            "playlist_timestamp": state.playlist_timestamp,
            "playlist_tracks": wrap(len(state.queue)),
        }
        if state.connected:
            state.name = state.client.name  # the SETD name arrives after the HELO
            result["player_name"] = state.name
            peer = state.client._writer.get_extra_info("peername")
            result["player_ip"] = f"{peer[0]}:{peer[1]}" if peer else ""
        if not state.queue:
            return result
        result["time"] = wrap(state.time())
        result["duration"] = wrap(state.current.duration)
        result["playlist_cur_index"] = str(state.cur_index)  # LMS sends this one as a string
        if start is None:
            return result  # plain `status`: no playlist_loop
        first = state.cur_index if str(start) == "-" else int(_number(start))
        amount = 1 if count is None else int(_number(count))
        letters = (DEFAULT_TAGS if tags is None else tags).replace(",", "")
        loop = [self._loop_item(state.queue[i], i, letters, wrap)
                for i in range(max(first, 0), min(first + amount, len(state.queue)))]
        if loop:
            result["playlist_loop"] = loop
        return result

    @staticmethod
    def _loop_item(track: Track, index: int, letters: str, wrap: Any) -> dict[str, Any]:
        item: dict[str, Any] = {"playlist index": index, "id": wrap(track.id), "title": track.title}
        fields = {
            "a": ("artist", track.artist), "l": ("album", track.album), "d": ("duration", wrap(track.duration)),
            "u": ("url", track.url), "o": ("type", track.type), "f": ("filesize", wrap(track.filesize)),
            "c": ("coverid", track.coverid), "x": ("remote", 0), "t": ("tracknum", str(track.tracknum)),
            "T": ("samplerate", str(track.sample_rate)), "I": ("samplesize", str(track.info.bits)),
            "H": ("channels", str(track.info.channels)),
        }
        for letter in letters:
            if letter in fields:
                key, value = fields[letter]
                item[key] = value
        return item

    def _serverstatus(self) -> dict[str, Any]:
        players = []
        for state in self.players.values():
            if state.known:
                players.append({
                    "playerid": state.mac, "name": state.name or state.mac, "model": "squeezelite",
                    "connected": int(state.connected), "isplaying": int(state.mode == "play"),
                    "power": int(state.power),
                })
        return {"version": LMS_VERSION, "uuid": "emulated-lms", "lastscan": str(int(time.time())),
                "player count": len(players), "players_loop": players}

    # --- HTTP side -------------------------------------------------------------------------------------------

    async def _start_http(self) -> None:
        @web.middleware
        async def track_and_authorize(request: web.Request, handler: Any) -> web.StreamResponse:
            # Tracked so stop() can cut in-flight streams and downloads like a dying server would.
            task = asyncio.current_task()
            self._http_tasks[task] = request.transport
            try:
                if self.user is not None and not self._authorized(request):
                    return web.Response(status=401, text="Authorization required\n",
                                        headers={"WWW-Authenticate": 'Basic realm="LMS"', "Connection": "close"})
                return await handler(request)
            finally:
                self._http_tasks.pop(task, None)

        app = web.Application(middlewares=[track_and_authorize])
        app.router.add_post("/jsonrpc.js", self._handle_jsonrpc)
        app.router.add_get("/music/{id}/download", self._handle_download)
        app.router.add_get("/music/{coverid}/{name}", self._handle_cover)
        app.router.add_get("/stream.{ext}", self._handle_stream)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.2)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.http_port, reuse_address=True)
        await site.start()

    async def _stop_http(self) -> None:
        if self._runner is None:
            return
        runner, self._runner = self._runner, None
        for site in list(runner.sites):
            await site.stop()  # stop listening first
        for task, transport in list(self._http_tasks.items()):
            if transport is not None:
                transport.abort()  # the connection drops at once, as when the server process dies
            task.cancel()
        await asyncio.sleep(0)
        await runner.cleanup()

    def _authorized(self, request: web.Request) -> bool:
        header = request.headers.get("Authorization", "")
        if not header.lower().startswith("basic "):
            return False
        try:
            credentials = base64.b64decode(header[6:].strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return False
        if credentials == f"{self.user}:{self.password}":
            return True
        return request.path.startswith("/stream.") and credentials == self._stream_credentials

    async def _handle_jsonrpc(self, request: web.Request) -> web.StreamResponse:
        try:
            body = json.loads(await request.read())
            mac, command = body["params"]
            if not isinstance(command, list) or not command or not isinstance(mac, str):
                raise ValueError("bad params")
        except (ValueError, KeyError, TypeError):
            log.warning("garbage JSON-RPC request")
            return web.Response(status=400, text="Bad request\n", headers={"Connection": "close"})
        try:
            result = await self._command(mac, command)
        except (ValueError, TypeError, IndexError):
            log.warning("bad arguments in %r", command)  # LMS just drops the connection
            return web.Response(status=400, text="Bad request\n", headers={"Connection": "close"})
        # LMS echoes the request, with the numbers it was given turned into strings
        echo = [mac, [a if isinstance(a, (dict, str)) else json.dumps(a) for a in command]]
        reply = {"id": body.get("id"), "method": body.get("method"), "params": echo, "result": result}
        return web.json_response(reply, headers={"Server": SERVER_HEADER})

    async def _handle_cover(self, request: web.Request) -> web.StreamResponse:
        """`/music/<coverid>/cover_WxH.jpg`: a JPEG in a colour taken from the cover id (Pillow comes with
        aioslimproto). `artwork_delay` holds the answer back, as a slow server would."""
        coverid, name = request.match_info["coverid"], request.match_info["name"]
        self.artwork_requests.append((coverid, name))
        track = next((t for t in self.library.values() if t.coverid == coverid), None)
        if track is None or not name.startswith("cover"):
            return web.Response(status=404)
        if self.artwork_delay:
            await asyncio.sleep(self.artwork_delay)
        import io

        from PIL import Image

        colour = tuple(int(coverid[i:i + 2], 16) for i in (0, 2, 4))
        buffer = io.BytesIO()
        Image.new("RGB", (300, 300), colour).save(buffer, "JPEG")
        return web.Response(body=buffer.getvalue(), content_type="image/jpeg")

    async def _handle_download(self, request: web.Request) -> web.StreamResponse:
        raw_id = request.match_info["id"]
        record = DownloadRequest(raw_id, request.headers.get("Range"), request.method, time.monotonic())
        self.downloads.append(record)
        track = self.library.get(int(raw_id)) if raw_id.isdigit() else None
        if track is not None and track.id in self.refused_download_ids:
            return web.Response(status=503, headers={"Connection": "close"})
        if track is None:
            # LMS never answers an unknown id: hold the connection until the client gives up
            task = asyncio.current_task()
            self._held.add(task)
            try:
                while request.transport is not None and not request.transport.is_closing():
                    await asyncio.sleep(0.1)
            finally:
                self._held.discard(task)
            return web.Response(status=404)  # nobody is left to read it
        size = track.filesize
        start, end, status = 0, size - 1, 200
        parsed = _parse_range(record.range, size) if record.range else False
        if parsed is None:
            record.status = 416
            return web.Response(status=416, headers={"Content-Range": f"bytes */{size}", "Connection": "close"})
        if parsed:
            start, end, status = *parsed, 206
        headers = {
            "Server": SERVER_HEADER, "Connection": "close", "Content-Type": CONTENT_TYPES[track.type],
            "Content-Disposition": f'attachment; filename="{track.path.name}"', "TransferMode.Dlna.Org": "Streaming",
        }
        if status == 206:
            headers["Content-Range"] = f"bytes {start}-{end}/{size}"
        response = web.StreamResponse(status=status, headers=headers)
        response.content_length = end - start + 1
        response.force_close()
        record.status = status
        await response.prepare(request)
        if request.method != "HEAD":
            await self._send(response, _file_chunks(track.path, start, end + 1), lambda: self.download_rate)
        return response

    async def _handle_stream(self, request: web.Request) -> web.StreamResponse:
        ext = request.match_info["ext"]
        query = request.query
        mac = query.get("player", "").lower()
        try:
            index, offset = int(query.get("index", "0")), int(query.get("offset", "0"))
        except ValueError:
            return web.Response(status=400)
        self.stream_requests.append(StreamRequest(mac, index, offset, ext, dict(request.headers), time.monotonic()))
        state = self.players.get(mac)
        track = state.queue[index] if state and 0 <= index < len(state.queue) else None
        source = _stream_source(track, ext, offset) if track else None
        if source is None:
            log.warning("no stream for %s", request.path_qs)
            return web.Response(status=404, headers={"Connection": "close"})
        # LMS's reply: no Content-Length, the body ends when the connection closes
        response = web.StreamResponse(headers={
            "Server": SERVER_HEADER, "Connection": "close", "Content-Type": STREAM_CONTENT_TYPES[ext],
        })
        response.force_close()
        await response.prepare(request)
        await self._send(response, source, lambda: self.stream_rate, self.stream_generation)
        return response

    def end_streams(self) -> None:
        """Ends the audio streams under way as if the files ended there (LMS's HTTP side closing
        before its SlimProto side does, as when it shuts down); later streams are not affected."""
        self.stream_generation += 1

    async def _send(self, response: web.StreamResponse, chunks: AsyncIterator[bytes], rate: Any,
                    generation: int | None = None) -> None:
        """Writes chunks, at most `rate()` bytes/s when set; stops quietly when the client goes away,
        and early (but cleanly) once `stream_generation` moves past `generation`."""
        async with contextlib.aclosing(chunks):
            try:
                async for chunk in chunks:
                    while chunk:
                        if generation is not None and self.stream_generation != generation:
                            chunk = b""
                            break
                        limit = rate()
                        piece = chunk if not limit else chunk[: max(1, int(limit / 20))]
                        chunk = chunk[len(piece):]
                        await response.write(piece)
                        if limit:
                            await asyncio.sleep(len(piece) / limit)
                await response.write_eof()
            except (ConnectionError, RuntimeError) as error:
                log.info("transfer cut: %s", error)


def _number(value: Any) -> float | int:
    """LMS's loose numbers: 3, 3.5, "3", "+1", "-0.5"."""
    if isinstance(value, (int, float)):
        return value
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        return float(text)


def _parse_range(header: str, size: int) -> tuple[int, int] | None | bool:
    """`bytes=N-`, `bytes=N-M`, `bytes=-N` → (first, last) inclusive; None when unsatisfiable; False for forms
    this server does not support (several ranges, other units), which get the whole file like HTTP allows."""
    spec = header.strip()
    if not spec.startswith("bytes=") or "," in spec:
        return False
    first, _, last = spec[6:].partition("-")
    try:
        if not first:
            length = int(last)
            return (max(size - length, 0), size - 1) if length > 0 else None
        start = int(first)
        end = min(int(last), size - 1) if last else size - 1
    except ValueError:
        return False
    return (start, end) if start <= end and start < size else None


async def _file_chunks(path: Path, start: int, end: int) -> AsyncIterator[bytes]:
    with open(path, "rb") as file:
        file.seek(start)
        remaining = end - start
        while remaining > 0:
            chunk = file.read(min(CHUNK, remaining))
            if not chunk:
                return
            remaining -= len(chunk)
            yield chunk


async def _process_chunks(*args: str) -> AsyncIterator[bytes]:
    process = await asyncio.create_subprocess_exec(
        *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    try:
        while chunk := await process.stdout.read(CHUNK):
            yield chunk
        await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def _stream_source(track: Track, ext: str, offset: int) -> AsyncIterator[bytes] | None:
    """The body of `/stream.<ext>` for a track from sample `offset` (server-side seek, as LMS transcodes)."""
    info = track.info
    trim = ["trim", f"{offset}s"] if offset > 0 else []
    if ext == "flac" and track.type == "flc":
        if offset == 0:
            return _file_chunks(track.path, 0, track.filesize)
        return _process_chunks("sox", str(track.path), "-t", "flac", "-", *trim)
    if ext == "flac" and track.type == "wav":
        return _process_chunks("sox", str(track.path), "-t", "flac", "-", *trim)
    if ext == "pcm" and track.type == "wav":
        frame_bytes = info.channels * info.bits // 8
        start = info.data_offset + min(offset, info.total_samples) * frame_bytes
        return _file_chunks(track.path, start, info.data_offset + info.data_size)
    if ext == "wav" and track.type == "wav" and offset == 0:
        return _file_chunks(track.path, 0, track.filesize)
    if ext in ("dsf", "dff") and track.type == ext and offset == 0:
        return _file_chunks(track.path, 0, track.filesize)
    if ext == "mp3" and track.type == "mp3":
        frame = min(offset // info.samples_per_frame, len(info.frame_offsets) - 1) if offset else 0
        start = info.frame_offsets[frame] if offset else 0  # unseeked: the whole file, tags and all
        return _file_chunks(track.path, start, track.filesize)
    return None
