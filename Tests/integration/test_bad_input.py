"""A server that sends garbage gets clear log lines and a reconnect, never a crash."""

import socket
import struct
import threading
import time

MAC = "02:11:22:33:44:58"


class ScriptedServer:
    """Accepts connections; for each, reads the HELO and sends the next scripted reply."""

    def __init__(self, replies: list[bytes]):
        self.replies = replies
        self.hellos: list[bytes] = []
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.listener.settimeout(30)
        for reply in self.replies:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                header = conn.recv(8)
                if len(header) == 8 and header[:4] == b"HELO":
                    length = struct.unpack("!I", header[4:])[0]
                    payload = b""
                    while len(payload) < length:
                        payload += conn.recv(length - len(payload))
                    self.hellos.append(payload)
                try:
                    for i in range(0, len(reply), 7):  # in small TCP segments
                        conn.sendall(reply[i : i + 7])
                        time.sleep(0.001)
                except OSError:
                    pass  # the player already hung up on the garbage
                # Wait for the player to give up on this connection.
                try:
                    while conn.recv(4096):
                        pass
                except OSError:
                    pass

    def close(self) -> None:
        self.listener.close()


def frame(command: bytes, payload: bytes) -> bytes:
    return struct.pack("!H", 4 + len(payload)) + command + payload


def test_garbage_oversize_and_truncated_frames(start_player):
    strm_t = frame(b"strm", b"t0m????\x00\x00\x00\x00\x00\x00\x00" + struct.pack("!IHI", 7, 0, 0))
    replies = [
        # random bytes: the command is not ASCII
        bytes([0x00, 0x10, 0xFF, 0xFE, 0x01, 0x80]) + bytes(range(200, 255)),
        # a length far beyond any real frame
        b"\xff\xf0strm" + b"\x00" * 64,
        # a length too short to hold a command
        b"\x00\x02ab",
        # a well-framed strm that is truncated: logged and skipped, then the stream is in step
        frame(b"strm", b"s1f") + strm_t + b"\x00\x30strm",  # and finally a truncated frame, then close
    ]
    server = ScriptedServer(replies)
    player = start_player("-s", f"127.0.0.1:{server.port}", "-m", MAC, "-o", "null", "--server-timeout", "2")
    server.thread.join(40)
    server.close()
    log = player.log()
    assert player.alive, log
    assert len(server.hellos) == len(replies), log
    assert all(h[24:26] == b"\x40\x00" for h in server.hellos[1:]), "reconnects carry 0x4000"
    assert "invalid command bytes" in log
    assert "exceeds the limit" in log
    assert "too short for a command" in log
    assert "malformed 'strm' frame ignored: strm truncated" in log
    assert log.count("connection to the server closed") >= len(replies) - 1
