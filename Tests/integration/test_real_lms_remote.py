"""`-i`: a Squeezebox-style remote through LIRC. A lircd of our own (a Unix socket speaking lircd's
protocol, found by liblirc_client through LIRC_SOCKET_PATH) sends button presses while the real LMS
plays an album: volume up, next, pause (one through a lircrc entry, two by LIRC's button names)
reach LMS as the remote's codes and take effect there. Debian's squeezelite does the same with the
same lircrc and presses."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from harness.media import Capture
from harness.real_lms import LMSError
from test_differential import SQUEEZELITE, SqueezeliteProcess

pytestmark = [pytest.mark.real_lms,
              pytest.mark.skipif(not os.path.exists(SQUEEZELITE), reason="squeezelite not installed")]

MACS = {"slimplay": "02:11:22:33:44:c1", "squeezelite": "02:11:22:33:44:c2"}
LIRCRC = """begin
    prog = squeezelite
    button = KEY_PLAYPAUSE
    config = pause
end
"""


class FakeLircd:
    """lircd's socket: each connected client gets every line sent."""

    def __init__(self, path: Path):
        self.path = path
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(4)
        self.clients: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            self.clients.append(client)

    def press(self, button: str, code: int) -> None:
        """One press (repeat count 00), as lircd reports a remote's button."""
        for client in list(self.clients):
            client.sendall(f"{code:016x} 00 {button} slimplay-test\n".encode())

    def close(self) -> None:
        self.server.close()
        for client in self.clients:
            client.close()


def drive(real_lms, kind: str, tmp_path: Path, start_player) -> dict[str, object]:  # noqa: ANN001
    """Plays the album on `kind` with -i and presses volume up, next and pause; what LMS showed after each."""
    mac = MACS[kind]
    lircd = FakeLircd(tmp_path / f"lircd-{kind}")
    lircrc = tmp_path / "lircrc"
    lircrc.write_text(LIRCRC)
    env = {"LIRC_SOCKET_PATH": str(lircd.path)}
    # Standard output read at a sound card's pace (squeezelite's `-o null` is ALSA's null device, which
    # takes everything at once).
    args = ["-s", real_lms.addr, "-m", mac, "-n", f"remote-{kind}", "-o", "-", "-a", "16", "-i", str(lircrc),
            "-d", "all=info"]
    with contextlib.suppress(LMSError, OSError):
        real_lms.rpc(mac, ["playlist", "clear"])
    if kind == "squeezelite":
        player = SqueezeliteProcess(args, tmp_path / f"{kind}.log", stdout=subprocess.PIPE, env=env)
    else:
        player = start_player(*args, "--lms-port", str(real_lms.http_port), name=kind, env=env, capture=True)
    Capture(player.process.stdout, bytes_per_second=44100 * 4)
    try:
        real_lms.wait_player(mac, timeout=20)
        assert real_lms.wait_for(lambda: lircd.clients, timeout=10), f"{kind} never connected to lircd\n{player.log()}"
        real_lms.rpc(mac, ["power", 1])
        real_lms.set_volume(mac, 50)
        real_lms.load_tracks(mac, real_lms.library.tracks("FLAC 16-44")[:4])
        real_lms.play(mac, 0)
        assert real_lms.wait_for(lambda: real_lms.status(mac).get("mode") == "play", timeout=10), player.log()
        seen: dict[str, object] = {}
        # Each press once LMS is back in its home mode (a volume press opens a mode of its own for a
        # few seconds, where the other buttons mean something else): next, pause, then volume up.
        time.sleep(2)
        lircd.press("KEY_NEXT", 1)
        real_lms.wait_for(lambda: int(real_lms.status(mac).get("playlist_cur_index", 0)) == 1, timeout=5)
        seen["index"] = int(real_lms.status(mac).get("playlist_cur_index", 0))
        time.sleep(2)
        lircd.press("KEY_PLAYPAUSE", 2)
        real_lms.wait_for(lambda: real_lms.status(mac).get("mode") == "pause", timeout=5)
        seen["mode"] = real_lms.status(mac).get("mode")
        time.sleep(2)
        lircd.press("KEY_VOLUMEUP", 3)
        real_lms.wait_for(lambda: int(real_lms.status(mac).get("mixer volume", 0)) > 50, timeout=5)
        seen["volume"] = int(real_lms.status(mac).get("mixer volume", 0))
        return seen
    finally:
        player.stop()
        lircd.close()
        with contextlib.suppress(LMSError, OSError):
            real_lms.rpc(mac, ["playlist", "clear"])


def test_remote_presses_through_lirc_control_the_player_on_lms_as_on_squeezelite(real_lms, start_player, tmp_path):
    seen = {kind: drive(real_lms, kind, tmp_path, start_player) for kind in ("slimplay", "squeezelite")}
    print(seen)
    for kind, after in seen.items():
        assert after["volume"] > 50, (kind, after)
        assert after["index"] == 1, (kind, after)
        assert after["mode"] == "pause", (kind, after)
    assert seen["slimplay"] == seen["squeezelite"]
