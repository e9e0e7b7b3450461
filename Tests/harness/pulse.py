"""A private PulseAudio daemon with one null sink: a real, paced ALSA path (`-o pulse`) with a
real mixer (the `pulse` control's Master is the sink's volume), recordable from its monitor."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

SINK = "slimtest"


class PulseServer:
    def __init__(self, folder: Path):
        assert shutil.which("pulseaudio") and shutil.which("pactl"), "pulseaudio and pulseaudio-utils are needed"
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.socket_path = folder / "native"
        # HOME and XDG_RUNTIME_DIR keep the daemon and its clients off the user's own sound setup.
        self.env = dict(
            os.environ, PULSE_SERVER=f"unix:{self.socket_path}", HOME=str(folder), XDG_RUNTIME_DIR=str(folder)
        )
        self.daemon: subprocess.Popen | None = None

    def sink_modules(self) -> list[str]:
        """The modules that make the sinks (the daemon's socket is added to them)."""
        return [f"module-null-sink sink_name={SINK} rate=44100"]

    def start(self) -> PulseServer:
        modules = [*self.sink_modules(), f"module-native-protocol-unix socket={self.socket_path} auth-anonymous=1"]
        self.daemon = subprocess.Popen(
            ["pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--disallow-exit", "--use-pid-file=no",
             *[arg for module in modules for arg in ("-L", module)]],
            env=self.env, stdout=subprocess.DEVNULL, stderr=open(self.folder / "pulse.log", "ab"),  # noqa: SIM115
        )
        deadline = time.monotonic() + 10
        while not self.socket_path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.socket_path.exists(), (self.folder / "pulse.log").read_text()
        return self

    def stop(self) -> None:
        if self.daemon and self.daemon.poll() is None:
            self.daemon.terminate()
            self.daemon.wait(5)

    def pactl(self, *args: str) -> str:
        return subprocess.run(["pactl", *args], env=self.env, capture_output=True, text=True, check=True).stdout

    def playback_streams(self) -> int:
        """Clients playing into the sink: an open ALSA `pulse` PCM is one."""
        return len([line for line in self.pactl("list", "short", "sink-inputs").splitlines() if line.strip()])

    def sink_volume(self) -> tuple[int, int]:
        """The sink's raw volume (65536 = 100 %), left and right."""
        text = self.pactl("get-sink-volume", SINK)
        left, right = re.findall(r"(?:front-left|front-right): (\d+) /", text)
        return int(left), int(right)

    def sink_muted(self) -> bool:
        return "yes" in self.pactl("get-sink-mute", SINK)
