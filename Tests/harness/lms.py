"""A loopback-only SlimProto server for the integration tests.

aioslimproto (pinned 3.3.0) is the independent server. It binds SlimProto on 0.0.0.0 and UDP
discovery on every interface from `start()`, so the tests bind its pieces to loopback themselves.
The server runs on its own asyncio loop in a background thread; the tests talk to it through
thread-safe helpers.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aioslimproto import SlimServer
from aioslimproto.client import SlimClient
from aioslimproto.discovery import DiscoveryProtocol
from aioslimproto.models import EventType


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Hello:
    """A HELO as the server received it."""

    raw: bytes
    received_at: float

    @property
    def device_id(self) -> int:
        return self.raw[0]

    @property
    def mac(self) -> str:
        return ":".join(f"{b:02x}" for b in self.raw[2:8])

    @property
    def wlan_channel_list(self) -> int:
        return struct.unpack("!H", self.raw[24:26])[0]

    @property
    def reconnect(self) -> bool:
        return bool(self.wlan_channel_list & 0x4000)

    @property
    def bytes_received(self) -> int:
        hi, lo = struct.unpack("!II", self.raw[26:34])
        return hi << 32 | lo

    @property
    def capabilities(self) -> str:
        return self.raw[36:].decode()


@dataclass
class Stat:
    event: str
    server_timestamp: int
    raw: bytes
    received_at: float


@dataclass
class Recorder:
    """Everything a player sent, in arrival order, shared across server restarts."""

    hellos: list[Hello] = field(default_factory=list)
    stats: list[Stat] = field(default_factory=list)
    disconnects: list[int] = field(default_factory=list)
    metadata: list[bytes] = field(default_factory=list)
    events: list[tuple[float, EventType, str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_event(self, event: Any) -> None:
        with self.lock:
            self.events.append((time.monotonic(), event.type, event.player_id, event.data))

    def events_of(self, kind: EventType) -> list[tuple[float, EventType, str, Any]]:
        with self.lock:
            return [e for e in self.events if e[1] == kind]


_original_helo = SlimClient._process_helo
_original_stat = SlimClient._process_stat
_original_dsco = SlimClient._process_dsco
# Recorders by the server socket's (host, port), so several servers can run in one process.
_recorders: dict[tuple[str, int], Recorder] = {}


def _recorder_of(client: SlimClient) -> Recorder | None:
    sockname = client._writer.get_extra_info("sockname")
    return _recorders.get((sockname[0], sockname[1])) if sockname else None


def _install_recording_hooks() -> None:
    """Record raw HELO and STAT payloads; aioslimproto keeps neither."""
    if getattr(SlimClient, "_slimplay_hooked", False):
        return

    async def process_helo(self: SlimClient, data: bytes) -> None:
        recorder = _recorder_of(self)
        if recorder is not None:
            with recorder.lock:
                recorder.hellos.append(Hello(bytes(data), time.monotonic()))
        await _original_helo(self, data)

    async def process_stat(self: SlimClient, data: bytes) -> None:
        recorder = _recorder_of(self)
        if recorder is not None:
            event = data[:4].decode(errors="replace")
            timestamp = struct.unpack("!I", data[47:51])[0] if len(data) >= 51 else 0
            with recorder.lock:
                recorder.stats.append(Stat(event, timestamp, bytes(data), time.monotonic()))
        await _original_stat(self, data)

    def process_dsco(self: SlimClient, data: bytes) -> None:
        recorder = _recorder_of(self)
        if recorder is not None and data:
            with recorder.lock:
                recorder.disconnects.append(data[0])
        _original_dsco(self, data)

    def process_meta(self: SlimClient, data: bytes) -> None:  # aioslimproto has no META handler
        recorder = _recorder_of(self)
        if recorder is not None:
            with recorder.lock:
                recorder.metadata.append(bytes(data))

    SlimClient._process_dsco = process_dsco
    SlimClient._process_meta = process_meta
    SlimClient._process_helo = process_helo
    SlimClient._process_stat = process_stat
    SlimClient._slimplay_hooked = True


class LoopbackServer:
    """aioslimproto's SlimServer bound to one loopback address, startable and stoppable."""

    def __init__(self, port: int | None = None, host: str = "127.0.0.1", discovery: bool = False):
        _install_recording_hooks()
        self.host = host
        self.port = port or free_port()
        self.discovery = discovery
        self.recorder = Recorder()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.server: SlimServer | None = None
        self._udp: asyncio.BaseTransport | None = None

    def call(self, coroutine_factory: Callable[[], Any], timeout: float = 10) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine_factory(), self._loop).result(timeout)

    def start(self) -> None:
        self.call(self._start)

    async def _start(self) -> None:
        recorder = self.recorder
        server = SlimServer(
            cli_port=None, cli_port_json=None, ip_address=self.host, name="loopback-lms",
            control_port=self.port,
        )

        _recorders[(self.host, self.port)] = recorder
        server._server = await asyncio.start_server(
            server._create_client, self.host, self.port, reuse_address=True
        )
        server.subscribe(recorder.add_event)
        if self.discovery:
            loop = asyncio.get_running_loop()
            self._udp, _ = await loop.create_datagram_endpoint(
                lambda: _LoopbackDiscovery(self.host, self.port, None, None, "loopback-lms", "test-uuid"),
                local_addr=(self.host, self.port),
            )
        self.server = server

    def stop(self) -> None:
        self.call(self._stop)

    async def _stop(self) -> None:
        if self._udp:
            self._udp.close()
            self._udp = None
        if self.server:
            # Stop accepting first: a player reconnecting within aioslimproto's own stop() would
            # otherwise land on a half-closed server and stay attached to it.
            listener = self.server._server
            if listener:
                listener.close()
            for client in list(self.server._players.values()):
                client.disconnect()
            for client in list(self.server._players.values()):
                client._writer.transport.abort()
            await asyncio.sleep(0.1)
            if listener:
                await listener.wait_closed()
            self.server = None

    def close(self) -> None:
        try:
            self.stop()
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)

    def player(self, player_id: str | None = None) -> SlimClient | None:
        def find() -> SlimClient | None:
            if not self.server:
                return None
            players = [p for p in self.server.players if p.connected]
            if player_id:
                players = [p for p in players if p.player_id == player_id]
            return players[0] if players else None

        return self.call(self._as_coroutine(find))

    def send_frame(self, player: SlimClient, command: bytes, payload: bytes) -> None:
        self.call(lambda: player.send_frame(command, payload))

    @staticmethod
    def _as_coroutine(function: Callable[[], Any]) -> Callable[[], Any]:
        async def run() -> Any:
            return function()

        return run

    def wait_for(self, predicate: Callable[[], Any], timeout: float, step: float = 0.05) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(step)
        return predicate()


class _LoopbackDiscovery(DiscoveryProtocol):
    """aioslimproto's discovery responder without its multicast membership (not on loopback)."""

    def connection_made(self, transport) -> None:  # noqa: ANN001
        self.transport = transport
