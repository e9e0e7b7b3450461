"""Idle footprint: slimplay and squeezelite, each connected to the same loopback server.

Prints a table (median of the runs) and writes JSON. Both players are measured in one run,
alternating, so the machine's noise touches both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

from harness.lms import LoopbackServer

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def proc_status(pid: int) -> dict[str, str]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def cpu_seconds(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text()
    after_name = stat[stat.rindex(")") + 2 :].split()
    utime, stime = int(after_name[11]), int(after_name[12])
    return (utime + stime) / CLOCK_TICKS


def measure(command: list[str], mac: str, server: LoopbackServer, settle: float, window: float) -> dict:
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not server.wait_for(lambda: server.player(mac), timeout=10):
            raise RuntimeError(f"{command[0]} did not register")
        time.sleep(settle)
        start = cpu_seconds(process.pid)
        time.sleep(window)
        cpu = cpu_seconds(process.pid) - start
        status = proc_status(process.pid)
        return {
            "rss_kb": int(status["VmRSS"].split()[0]),
            "rss_anon_kb": int(status["RssAnon"].split()[0]),
            "threads": int(status["Threads"]),
            "cpu_percent": 100 * cpu / window,
        }
    finally:
        process.terminate()
        process.wait(5)
        server.wait_for(lambda: server.player(mac) is None, timeout=5)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--slimplay", required=True)
    parser.add_argument("--squeezelite", default="/usr/bin/squeezelite")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--settle", type=float, default=3)
    parser.add_argument("--window", type=float, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    # squeezelite keeps its output open and writes silence while stopped; `-o -` into a discarding
    # reader or ALSA's unpaced null PCM makes that a busy loop. Idle means output closed: `-C 1`.
    # As root, squeezelite mlockall()s every mapped page (195 MB for Debian's build): measure both
    # players as an ordinary user would run them.
    prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] if os.geteuid() == 0 else []
    server = LoopbackServer()
    server.start()
    players = {
        "slimplay": lambda port: [*prefix, args.slimplay, "--state-dir", "/tmp/slimplay-footprint", "-s", f"127.0.0.1:{port}", "-m", "02:00:00:00:00:01", "-o", "null"],
        "squeezelite": lambda port: [*prefix, args.squeezelite, "-s", f"127.0.0.1:{port}", "-m", "02:00:00:00:00:02", "-o", "null", "-C", "1"],
    }
    macs = {"slimplay": "02:00:00:00:00:01", "squeezelite": "02:00:00:00:00:02"}
    results: dict[str, list[dict]] = {name: [] for name in players}
    try:
        for _ in range(args.runs):
            for name, command in players.items():
                results[name].append(measure(command(server.port), macs[name], server, args.settle, args.window))
    finally:
        server.close()

    medians = {
        name: {key: statistics.median(run[key] for run in runs) for key in runs[0]} for name, runs in results.items()
    }
    print(f"idle, connected to a loopback server; median of {args.runs} runs, {args.window:.0f} s CPU window")
    print(f"{'metric':<14}{'slimplay':>12}{'squeezelite':>14}{'ratio':>8}")
    for key, label in [("rss_kb", "VmRSS KB"), ("rss_anon_kb", "RssAnon KB"), ("threads", "threads"), ("cpu_percent", "CPU %")]:
        a, b = medians["slimplay"][key], medians["squeezelite"][key]
        ratio = f"{a / b:.2f}" if b else "-"
        print(f"{label:<14}{a:>12.2f}{b:>14.2f}{ratio:>8}")
    if args.json:
        args.json.write_text(json.dumps({"runs": results, "median": medians}, indent=2))


if __name__ == "__main__":
    main()
