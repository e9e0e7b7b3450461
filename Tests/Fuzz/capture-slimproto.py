#!/usr/bin/env python3
"""Seeds for FuzzServerFrames from a real server: relays one player's SlimProto connection (and
the HTTP port its streams come from) between LISTEN and SERVER, and writes what the server sent.

    capture-slimproto.py LISTEN_ADDR SERVER_ADDR OUT_DIR [SECONDS]

Point a player at LISTEN_ADDR (`slimplay -s LISTEN_ADDR`), drive it through the server for the
given time (60 s by default), and OUT_DIR gets `session` (the whole server-to-player stream) and
one file per distinct server frame (`strm-s-1`, `audg-1`, ...). Each seed starts with the byte the
harness reads as the size of the pieces the stream arrives in.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path

SLIMPROTO_PORT = 3483
HTTP_PORT = 9000


def pump(source: socket.socket, target: socket.socket, keep: bytearray | None) -> None:
    while True:
        try:
            data = source.recv(65536)
        except OSError:
            data = b""
        if not data:
            break
        if keep is not None:
            keep.extend(data)
        try:
            target.sendall(data)
        except OSError:
            break
    for end in (source, target):
        try:
            end.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def relay(listen: str, server: str, port: int, keep: bytearray | None) -> None:
    """Forwards every connection to `listen:port` to `server:port`; keeps the server's bytes."""
    acceptor = socket.socket()
    acceptor.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    acceptor.bind((listen, port))
    acceptor.listen(8)
    while True:
        client, _ = acceptor.accept()
        upstream = socket.create_connection((server, port))
        threading.Thread(target=pump, args=(upstream, client, keep), daemon=True).start()
        threading.Thread(target=pump, args=(client, upstream, None), daemon=True).start()


def frames(stream: bytes) -> list[bytes]:
    """Server frames: a 2-byte big-endian length (command and payload), then the 4-byte command."""
    found, offset = [], 0
    while offset + 6 <= len(stream):
        length = int.from_bytes(stream[offset:offset + 2], "big")
        if length < 4 or offset + 2 + length > len(stream):
            break
        found.append(stream[offset:offset + 2 + length])
        offset += 2 + length
    return found


def main() -> None:
    listen, server, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 60
    slimproto = bytearray()
    threading.Thread(target=relay, args=(listen, server, SLIMPROTO_PORT, slimproto), daemon=True).start()
    threading.Thread(target=relay, args=(listen, server, HTTP_PORT, None), daemon=True).start()
    time.sleep(seconds)
    out.mkdir(parents=True, exist_ok=True)
    stream = bytes(slimproto)
    (out / "session").write_bytes(b"\x0f" + stream)
    counts: dict[str, int] = {}
    seen: set[bytes] = set()
    for frame in frames(stream):
        if frame in seen:
            continue
        seen.add(frame)
        name = frame[2:6].decode("latin-1")
        if name == "strm" and len(frame) > 6:
            name += "-" + chr(frame[6])
        counts[name] = counts.get(name, 0) + 1
        (out / f"{name}-{counts[name]}").write_bytes(b"\x00" + frame)
    print(f"{len(stream)} bytes, {len(seen)} distinct frames: "
          + ", ".join(f"{name} {count}" for name, count in sorted(counts.items())))


if __name__ == "__main__":
    main()
