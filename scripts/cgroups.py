"""A control group per player for the bench: exact CPU time of every thread it ever ran (threads that
ended included), and a CPU quota or a memory limit when asked.

cgroup v1 (`/sys/fs/cgroup/{cpu,cpuacct,memory}/...`, this machine kind) or v2 (`cpu.max`,
`memory.max`, `cpu.stat`). Needs root. A player joins its group before it runs (`join` as the
`preexec_fn` of its process), so every page and cycle it uses is counted there.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PARENT = "slimplay-bench"
PERIOD_US = 100_000


def is_v2() -> bool:
    return (ROOT / "cgroup.controllers").exists()


class Cgroup:
    def __init__(self, name: str):
        if is_v2():
            parent = ROOT / PARENT
            parent.mkdir(exist_ok=True)
            with contextlib.suppress(OSError):
                (parent / "cgroup.subtree_control").write_text("+cpu +memory")
            self.dirs = {"v2": parent / name}
        else:
            self.dirs = {c: ROOT / c / PARENT / name for c in ("cpu", "cpuacct", "memory")}
        for path in self.dirs.values():
            self._empty(path)
            path.mkdir(parents=True, exist_ok=True)

    def _file(self, controller: str, v1: str, v2: str) -> Path:
        return self.dirs["v2"] / v2 if "v2" in self.dirs else self.dirs[controller] / v1

    # -- setting up --

    def set_cpu_quota(self, fraction: float | None) -> None:
        """`fraction` of one core per 100 ms period; None: no limit."""
        if "v2" in self.dirs:
            value = "max" if fraction is None else str(max(1000, int(fraction * PERIOD_US)))
            (self.dirs["v2"] / "cpu.max").write_text(f"{value} {PERIOD_US}")
        else:
            (self.dirs["cpu"] / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            quota = -1 if fraction is None else max(1000, int(fraction * PERIOD_US))
            (self.dirs["cpu"] / "cpu.cfs_quota_us").write_text(str(quota))

    def set_memory_limit(self, limit: int | None) -> None:
        if "v2" in self.dirs:
            (self.dirs["v2"] / "memory.max").write_text("max" if limit is None else str(int(limit)))
        else:
            value = "-1" if limit is None else str(int(limit) // 4096 * 4096)
            (self.dirs["memory"] / "memory.limit_in_bytes").write_text(value)

    def join(self) -> None:
        """Moves the calling process into the group (also in a child between fork and exec)."""
        pid = str(os.getpid())
        for path in self.dirs.values():
            (path / "cgroup.procs").write_text(pid)

    # -- reading --

    def cpu_seconds(self) -> float:
        """Every task's CPU time since the group was made, exact (ns)."""
        if "v2" in self.dirs:
            for line in (self.dirs["v2"] / "cpu.stat").read_text().splitlines():
                if line.startswith("usage_usec"):
                    return int(line.split()[1]) / 1e6
            return 0.0
        return int((self.dirs["cpuacct"] / "cpuacct.usage").read_text()) / 1e9

    def throttled_seconds(self) -> float:
        for line in self._file("cpu", "cpu.stat", "cpu.stat").read_text().splitlines():
            name, value = line.split()
            if name == "throttled_time":
                return int(value) / 1e9
            if name == "throttled_usec":
                return int(value) / 1e6
        return 0.0

    def oom_kills(self) -> int:
        path = self._file("memory", "memory.oom_control", "memory.events")
        for line in path.read_text().splitlines():
            name, value = line.split()
            if name == "oom_kill":
                return int(value)
        return 0

    def memory_peak(self) -> int:
        """The group's peak charge, page cache included (bytes)."""
        path = self._file("memory", "memory.max_usage_in_bytes", "memory.peak")
        with contextlib.suppress(OSError, ValueError):
            return int(path.read_text())
        return 0

    # -- removing --

    def remove(self) -> None:
        for path in self.dirs.values():
            self._empty(path)

    @staticmethod
    def _empty(path: Path) -> None:
        if not path.exists():
            return
        for _ in range(50):
            try:
                pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
            except OSError:
                pids = []
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            try:
                path.rmdir()
                return
            except OSError:
                time.sleep(0.1)
