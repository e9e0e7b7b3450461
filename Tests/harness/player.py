"""Runs the real slimplay binary as a child process and keeps its log."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def state_folder(state_dir: Path, mac: str) -> Path:
    """The player's own folder in a state folder (each player keeps its state in one named by its MAC)."""
    return state_dir / mac.lower().replace(":", "-")


def cache_entries(cache: Path) -> list[dict]:
    """The cache's complete files as its index lists them (key, size, checksum, times), each with what
    its newest line of records.jsonl says it is (url, type, server, track); [] while the index cannot
    be read."""
    import json

    try:
        entries = json.loads((cache / "index.json").read_text())["entries"]
    except (OSError, ValueError, KeyError):
        return []
    records = {}
    try:
        for line in (cache / "records.jsonl").read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line torn by a crash: the player skips it too
            records[record.get("key")] = record
    except OSError:
        pass
    return [{**records.get(entry["key"], {}), **entry} for entry in entries]


def binary_path() -> str:
    path = os.environ.get("SLIMPLAY_BIN")
    if path:
        return path
    root = Path(__file__).resolve().parents[2]
    for candidate in (root / ".build/release/slimplay", root / ".build/debug/slimplay"):
        if candidate.exists():
            return str(candidate)
    raise RuntimeError("slimplay binary not found: build it or set SLIMPLAY_BIN")


class PlayerProcess:
    def __init__(self, args: list[str], log_path: Path, stdout=subprocess.DEVNULL,  # noqa: ANN001
                 env: dict[str, str] | None = None):
        """`env`: variables set for this process on top of the test's own."""
        self.args = [binary_path(), *args]
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115
        self.process = subprocess.Popen(
            self.args, stdin=subprocess.DEVNULL, stdout=stdout, stderr=self._log,
            env={**os.environ, **env} if env else None,
        )

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def wait_for_log(self, text: str, timeout: float, after: int = 0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log()[after:]:
                return True
            time.sleep(0.05)
        return False

    def stop(self, timeout: float = 5) -> int:
        if self.alive:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        return self.process.returncode
