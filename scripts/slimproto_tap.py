"""A relay between players and a real LMS that notes when SlimProto frames pass.

The bench cannot hook into LMS, so the players connect to this relay (`listen` address) and it
forwards every connection to LMS unchanged: SlimProto (3483), parsed on the way to note each
player's HELO, the STAT events it sends and the `strm` commands it receives; and LMS's HTTP port
(9000), copied as is, so that streams with `server_ip` 0, JSON-RPC and downloads take the same
path. The relay runs on its own asyncio loop in a thread of the bench process; its CPU is not a
player's.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class TapEvent:
    at: float  # time.monotonic()
    mac: str
    kind: str  # "HELO", "STAT", "strm", "audg", ...
    detail: str  # STAT event code, strm command character


class SlimProtoTap:
    def __init__(self, listen: str, server: str, ports: tuple[int, ...] = (3483, 9000)):
        self.listen = listen
        self.server = server
        self.ports = ports
        self.events: list[TapEvent] = []
        self.lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        self._servers: list[asyncio.AbstractServer] = []
        self._thread = threading.Thread(target=self.loop.run_forever, name="slimproto-tap", daemon=True)

    def start(self) -> SlimProtoTap:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self.loop).result(10)
        return self

    def close(self) -> None:
        async def stop() -> None:
            for server in self._servers:
                server.close()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    async def _listen(self) -> None:
        for port in self.ports:
            handler = self._slimproto if port == 3483 else self._plain
            self._servers.append(await asyncio.start_server(
                lambda r, w, port=port, handler=handler: handler(r, w, port), self.listen, port, reuse_address=True))

    # -- queries (any thread) --

    def first(self, mac: str, kind: str, detail: str | None = None, since: float = 0) -> TapEvent | None:
        with self.lock:
            return next((e for e in self.events if e.mac == mac and e.kind == kind and e.at >= since
                         and (detail is None or e.detail == detail)), None)

    def all(self, mac: str, kind: str, detail: str | None = None, since: float = 0) -> list[TapEvent]:
        with self.lock:
            return [e for e in self.events if e.mac == mac and e.kind == kind and e.at >= since
                    and (detail is None or e.detail == detail)]

    def wait(self, mac: str, kind: str, detail: str | None = None, since: float = 0,
             timeout: float = 15) -> TapEvent | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if event := self.first(mac, kind, detail, since):
                return event
            time.sleep(0.01)
        return None

    # -- relaying --

    def _note(self, mac: str, kind: str, detail: str = "") -> None:
        with self.lock:
            self.events.append(TapEvent(time.monotonic(), mac, kind, detail))

    async def _connect(self, port: int, writer: asyncio.StreamWriter):
        """The connection to LMS for a player's connection; None (and the player's closed) when LMS refuses."""
        try:
            upstream = await asyncio.open_connection(self.server, port)
        except OSError:
            writer.close()
            return None
        for w in (writer, upstream[1]):
            sock = w.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return upstream

    async def _plain(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int) -> None:
        if upstream := await self._connect(port, writer):
            await asyncio.gather(self._copy(reader, upstream[1]), self._copy(upstream[0], writer))

    async def _slimproto(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int) -> None:
        if not (upstream := await self._connect(port, writer)):
            return
        up_reader, up_writer = upstream
        connection = {"mac": "?"}

        def from_player(buffer: bytearray) -> None:
            # opcode (4), length (4, big-endian), payload
            while len(buffer) >= 8:
                length = int.from_bytes(buffer[4:8], "big")
                if len(buffer) < 8 + length:
                    return
                opcode, payload = bytes(buffer[:4]), bytes(buffer[8 : 8 + length])
                del buffer[: 8 + length]
                if opcode == b"HELO" and len(payload) >= 8:
                    connection["mac"] = ":".join(f"{b:02x}" for b in payload[2:8])
                    self._note(connection["mac"], "HELO")
                elif opcode == b"STAT" and len(payload) >= 4:
                    self._note(connection["mac"], "STAT", payload[:4].decode("latin-1"))
                else:
                    self._note(connection["mac"], opcode.decode("latin-1"))

        def from_server(buffer: bytearray) -> None:
            # length (2, big-endian, counts the opcode), opcode (4), payload
            while len(buffer) >= 2:
                length = int.from_bytes(buffer[:2], "big")
                if len(buffer) < 2 + length:
                    return
                opcode, payload = bytes(buffer[2:6]), bytes(buffer[6 : 2 + length])
                del buffer[: 2 + length]
                if opcode == b"strm" and payload:
                    if payload[:1] != b"t":  # heartbeats: thousands of them, not worth a note
                        self._note(connection["mac"], "strm", payload[:1].decode("latin-1"))
                elif opcode != b"audg":
                    self._note(connection["mac"], opcode.decode("latin-1"))

        await asyncio.gather(self._copy(reader, up_writer, from_player), self._copy(up_reader, writer, from_server))

    @staticmethod
    async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, parse=None) -> None:  # noqa: ANN001
        buffer = bytearray()
        try:
            while data := await reader.read(1 << 16):
                if parse is not None:
                    buffer += data
                    parse(buffer)
                writer.write(data)
                await writer.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            try:
                writer.close()
            except OSError:
                pass
