#!/usr/bin/env python3
"""Sync groups on the real LMS 7.9.1, measured at the outputs (Tests/harness/sync_measure.py):
each pair of players in one LMS sync group plays the "Long FLAC" album (looped) into its own
PulseAudio sink, both recorded in one 4-channel stream, and the offset between them is read to the
sample: at the start, after `--minutes` of play, after a pause and resume, after a skip.

    scripts/sync-check [--minutes 10] [--rounds 1] [--pairs all] [--json FILE] [--binary PATH]
                       [--slimplay-options '-a 40:4'] [--squeezelite-options '...']

Pairs (master first): squeezelite+squeezelite (the reference), squeezelite+slimplay,
slimplay+squeezelite, slimplay+slimplay. The server runs on its own address (127.0.0.9, state in
/tmp/slimplay-lms-sync), so it can run beside the tests' server. A report, not a test.

    scripts/sync-check --group-outage stopped|partition [--away 90] [--lms-version 8.3.0] [--no-group-clock]

Three slimplay players in one group, their sound cards 0, +45 and -45 ppm off
(Tests/harness/sync_group_outage.py), through an outage of the server: each member's offset
from the first, every 10 s from the cut.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from harness.player import binary_path
from harness.real_lms import MusicLibrary, RealLMS
from harness.sync_group_outage import run_group_outage
from harness.sync_measure import run_pair

LMS_SCRIPT = ROOT.parent / "shared" / "lms" / "lms"
PAIRS = {"squeezelite+squeezelite": ("squeezelite", "squeezelite"),
         "squeezelite+slimplay": ("squeezelite", "slimplay"),
         "slimplay+squeezelite": ("slimplay", "squeezelite"),
         "slimplay+slimplay": ("slimplay", "slimplay")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="play before the long reading (0: none)")
    parser.add_argument("--rounds", type=int, default=1, help="times each pair is measured")
    parser.add_argument("--pairs", default="all", help="comma-separated keys of " + ", ".join(PAIRS))
    parser.add_argument("--json", type=Path, help="write every reading here")
    parser.add_argument("--binary", help="the slimplay binary (default: the build's)")
    parser.add_argument("--slimplay-options", default="", help="extra options for slimplay, e.g. '-a 40:4'")
    parser.add_argument("--squeezelite-options", default="", help="extra options for squeezelite")
    parser.add_argument("--out", type=Path, default=Path("/tmp/slimplay-sync-check"), help="work folder")
    parser.add_argument("--group-outage", choices=("stopped", "partition"), help="the three-member group run")
    parser.add_argument("--away", type=float, default=90, help="seconds the server is away (--group-outage)")
    parser.add_argument("--no-group-clock", action="store_true", help="the members with --sync-port 0")
    parser.add_argument("--lms-version", default=None, help="7.9.1 for the pairs, 8.3.0 for --group-outage")
    args = parser.parse_args()
    binary = args.binary or binary_path()
    keys = list(PAIRS) if args.pairs == "all" else args.pairs.split(",")

    library = MusicLibrary().build()
    version = args.lms_version or ("8.3.0" if args.group_outage else "7.9.1")
    lms = RealLMS(LMS_SCRIPT, library.music, Path(f"/tmp/slimplay-lms-sync-{version}"), addr="127.0.0.9",
                  library=library, version=version)
    lms.wipe()
    lms.start()
    if args.group_outage:
        try:
            return group_outage(lms, library, binary, args)
        finally:
            lms.stop()
    results = []
    try:
        for round_number in range(1, args.rounds + 1):
            for key in keys:
                started = time.monotonic()
                result = run_pair(lms, PAIRS[key], library.tracks("Long FLAC"),
                                  args.out / f"{key}-{round_number}", binary, long_minutes=args.minutes,
                                  options={"slimplay": tuple(args.slimplay_options.split()),
                                           "squeezelite": tuple(args.squeezelite_options.split())})
                print(f"[round {round_number}] {result.label} ({time.monotonic() - started:.0f} s)", flush=True)
                for phase in result.phases:
                    print("   ", phase.summary(), flush=True)
                results.append({"round": round_number, "pair": key, "phases": [
                    {"phase": p.name, "settled_ms": p.settled_ms, "spread_ms": p.spread_ms,
                     "largest_before_ms": p.before_ms, "readings": p.readings} for p in result.phases]})
                if args.json:
                    args.json.write_text(json.dumps(results, indent=1))
    finally:
        lms.stop()
    print("\nSettled offset, ms (second player minus master; each round):")
    for key in keys:
        rows = [r for r in results if r["pair"] == key]
        names = [p["phase"] for p in rows[0]["phases"]] if rows else []
        cells = []
        for name in names:
            values = [next(p["settled_ms"] for p in r["phases"] if p["phase"] == name) for r in rows]
            cells.append(f"{name} " + "/".join("-" if v is None else f"{v:+.2f}" for v in values))
        print(f"  {key:24s} " + "; ".join(cells))
    return 0


def group_outage(lms, library, binary: str, args: argparse.Namespace) -> int:  # noqa: ANN001
    clock = not args.no_group_clock
    started = time.monotonic()
    result = run_group_outage(lms, library.tracks("Long FLAC"), args.out / f"group-{args.group_outage}", binary,
                              outage=args.group_outage, away=args.away, clock=clock,
                              copies=2 if args.away <= 120 else 3)
    print(f"LMS {lms.version}, server {args.group_outage} {args.away:g} s, group clock {'on' if clock else 'off'} "
          f"({time.monotonic() - started:.0f} s); offsets from the first member (+45 / -45 ppm), ms:")
    for at, row in result.readings:
        cells = ", ".join("-" if v is None else f"{v:+.3f}" for v in row[1:])
        print(f"  {at:5.0f} s after the cut: {cells}")
    print(f"worst while away: {result.worst_while_away_ms()} ms (cut, end, recorded: {result.recorded} s)")
    if args.json:
        args.json.write_text(json.dumps({"readings": result.readings, "logs": result.logs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
