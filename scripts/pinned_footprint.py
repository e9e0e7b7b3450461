"""Pinned music's cost: slimplay idle with a cache holding several GB of pinned music and thousands of
tracks, against the same player with an empty cache, in the same run; and how long its library API
takes to answer over that cache.

The cache is made as the player writes it: sparse files named by their content keys (FNV-1a 64 of
server, URL and size), an index.json of their sizes, checksums and times, a records.jsonl with each
file's track, and a pins.json naming the pinned albums. Sparse files cost no disk; the player only checks their sizes at start, as it does for
real files.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import time
import urllib.request
from pathlib import Path

from footprint import cpu_seconds, proc_status
from harness.lms import LoopbackServer, free_port

SERVER = "bench-lms:9000"  # the server the cache's keys were made for
MAC = "02:00:00:00:00:5e"


def fnv1a(text: str) -> str:
    value = 0xCBF29CE484222325
    for byte in text.encode():
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def make_cache(folder: Path, tracks: int, pinned_tracks: int, pinned_bytes: int, other_bytes: int = 100_000) -> dict:
    """`tracks` cached files in albums of 10, the first `pinned_tracks` of them pinned (album by album)
    and `pinned_bytes` in all; the rest `other_bytes` each."""
    folder.mkdir(parents=True, exist_ok=True)
    pinned_size = pinned_bytes // max(1, pinned_tracks)
    entries, records, albums = [], [], {}
    for number in range(tracks):
        album = number // 10
        size = pinned_size if number < pinned_tracks else other_bytes
        url = f"file:///music/artist-{album % 97}/album-{album}/{number % 10 + 1:02d}.flac"
        key = fnv1a(f"{SERVER}\n{url}\n{size}")
        path = folder / f"{key}.audio"
        with open(path, "wb") as handle:
            handle.truncate(size)
        track = {"playlist index": number % 10, "id": number + 1, "title": f"Track {number % 10 + 1} of {album}",
                 "artist": f"Artist {album % 97}", "album": f"Album {album}", "album_id": album + 1,
                 "tracknum": number % 10 + 1, "duration": 240, "url": url, "type": "flc", "filesize": size,
                 "coverid": f"c{album}", "remote": 0}
        entries.append({"key": key, "size": size, "checksum": "0123456789abcdef",
                        "modified": int(path.stat().st_mtime * 1000), "used": number})
        records.append(json.dumps({"key": key, "url": url, "type": "flc", "server": SERVER, "track": track}))
        if number < pinned_tracks:
            albums.setdefault(album, []).append(track)
    # One entry a line, as the player writes it.
    lines = ",\n".join(json.dumps(entry, separators=(",", ":")) for entry in entries)
    (folder / "index.json").write_text('{"version":2,"entries":[\n' + lines + "\n]}\n")
    (folder / "records.jsonl").write_text("".join(line + "\n" for line in records))
    pins = [{"kind": "album", "id": album + 1, "title": f"Album {album}", "server": SERVER, "tracks": listed}
            for album, listed in albums.items()]
    pin_lines = ",\n".join(json.dumps(pin, separators=(",", ":")) for pin in pins)
    (folder / "pins.json").write_text('{"version":1,"pins":[\n' + pin_lines + "\n]}\n")
    keep_covers(folder.parent / (folder.name + "-state"), {f"c{album}" for album in albums})
    return {"tracks": tracks, "pinned_tracks": pinned_tracks, "pinned_bytes": pinned_size * pinned_tracks,
            "albums": len({n // 10 for n in range(tracks)})}


def keep_covers(state: Path, covers: set[str]) -> None:
    """The pinned albums' covers as the player keeps them once fetched (named for the server it asks,
    127.0.0.1:9000 here): an idle player with everything fetched."""
    folder = state / "artwork"
    folder.mkdir(parents=True, exist_ok=True)
    for cover in covers:
        name = fnv1a("127.0.0.1:9000\ncover:" + cover + "\n-1")
        (folder / f"{name}.img").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(56))


def get(port: int, path: str) -> tuple[float, int]:
    started = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as reply:
        body = reply.read()
    return time.monotonic() - started, len(body)


def measure(slimplay: str, cache: Path, server: LoopbackServer, settle: float, window: float,
            library: bool) -> dict:
    port = free_port()
    state = cache.parent / (cache.name + "-state")
    command = [slimplay, "--state-dir", str(state), "--cache-dir", str(cache), "-s", f"127.0.0.1:{server.port}",
               "-m", MAC, "-o", "null", "--control", f"127.0.0.1:{port}", "--pin-size", "8000"]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        if not server.wait_for(lambda: server.player(MAC), timeout=20):
            raise RuntimeError("slimplay did not register")
        time.sleep(settle)
        # Both players do the same once before they idle: the library asked for (the empty player's
        # answer is empty), then the code release that follows such work, 2 s and 10 s after it. So
        # the two are compared in the same steady state, whichever one-off work each did at start.
        get(port, "/api/library")
        time.sleep(12)
        start = cpu_seconds(process.pid)
        time.sleep(window)
        cpu = cpu_seconds(process.pid) - start
        status = proc_status(process.pid)
        result = {"rss_kb": int(status["VmRSS"].split()[0]), "rss_anon_kb": int(status["RssAnon"].split()[0]),
                  "cpu_percent": 100 * cpu / window}
        if library:
            # The page's requests: every album, a search, one album; each 20 times.
            for name, path in (("albums", "/api/library"), ("search", "/api/library?q=artist%2042"),
                               ("album", "/api/library?album=a43")):
                times = [get(port, path) for _ in range(20)]
                result[f"library_{name}_ms"] = {"median": 1000 * statistics.median(t for t, _ in times),
                                                "max": 1000 * max(t for t, _ in times), "bytes": times[0][1]}
            # Idle again after browsing: what the library's answers left behind.
            time.sleep(settle)
            status = proc_status(process.pid)
            result["after_library_rss_kb"] = int(status["VmRSS"].split()[0])
            result["after_library_rss_anon_kb"] = int(status["RssAnon"].split()[0])
        return result
    finally:
        process.terminate()
        process.wait(5)
        server.wait_for(lambda: server.player(MAC) is None, timeout=5)


def run(slimplay: str, work: Path, runs: int = 3, tracks: int = 5000, pinned_tracks: int = 1500,
        pinned_gb: float = 5.0, settle: float = 3, window: float = 10) -> dict:
    empty, full = work / "empty-cache", work / "pinned-cache"
    made = make_cache(full, tracks, pinned_tracks, int(pinned_gb * (1 << 30)))
    empty.mkdir(parents=True, exist_ok=True)
    server = LoopbackServer()
    server.start()
    results: dict = {"cache": made, "empty": [], "pinned": []}
    try:
        for _ in range(runs):
            results["empty"].append(measure(slimplay, empty, server, settle, window, library=False))
            results["pinned"].append(measure(slimplay, full, server, settle, window, library=True))
    finally:
        server.stop()
    return results


def summary(results: dict) -> list[str]:
    def median(kind: str, key: str) -> float:
        return statistics.median(run[key] for run in results[kind])

    made = results["cache"]
    lines = [f"cache: {made['tracks']} tracks in {made['albums']} albums, {made['pinned_tracks']} pinned "
             f"({made['pinned_bytes'] / (1 << 30):.2f} GB)",
             f"{'':24}{'empty cache':>14}{'pinned':>14}{'ratio':>8}"]
    for key, label in (("rss_kb", "VmRSS (kB)"), ("rss_anon_kb", "RssAnon (kB)"), ("cpu_percent", "CPU idle (%)")):
        empty, pinned = median("empty", key), median("pinned", key)
        ratio = pinned / empty if empty else float("nan")
        lines.append(f"{label:24}{empty:>14.3f}{pinned:>14.3f}{ratio:>8.3f}")
    for key, label in (("after_library_rss_kb", "VmRSS after browsing"),
                       ("after_library_rss_anon_kb", "RssAnon after browsing")):
        lines.append(f"{label + ' (kB)':24}{'':>14}{median('pinned', key):>14.3f}"
                     f"{median('pinned', key) / median('empty', 'rss_kb' if 'Vm' in label else 'rss_anon_kb'):>8.3f}")
    for name in ("albums", "search", "album"):
        runs = [run[f"library_{name}_ms"] for run in results["pinned"]]
        lines.append(f"GET library ({name}): median {statistics.median(r['median'] for r in runs):.1f} ms, "
                     f"max {max(r['max'] for r in runs):.1f} ms, {runs[0]['bytes']} bytes")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slimplay", required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/slimplay-pinned-bench"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tracks", type=int, default=5000)
    parser.add_argument("--pinned-tracks", type=int, default=1500)
    parser.add_argument("--pinned-gb", type=float, default=5.0)
    parser.add_argument("--window", type=float, default=10)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    subprocess.run(["rm", "-rf", str(args.work)], check=True)
    results = run(args.slimplay, args.work, args.runs, args.tracks, args.pinned_tracks, args.pinned_gb,
                  window=args.window)
    print("\n".join(summary(results)))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
