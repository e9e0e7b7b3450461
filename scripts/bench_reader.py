"""The sound card stand-in for `scripts/bench`: reads a player's raw PCM from stdin.

    bench_reader.py --rate BYTES_PER_SECOND --report FILE   reads at real time, like a DAC
    bench_reader.py --rate 0 --report FILE                  reads as fast as it can
    bench_reader.py ... --capture FILE                      also keeps what it read, from the first
                                                            non-zero byte on

It notes when the first and the last non-zero byte arrived (CLOCK_MONOTONIC,
the same clock as Python's time.monotonic() in the bench) and how many bytes lay between them,
and writes that as JSON when its input ends (the player exited) or on SIGTERM. A separate
process, so its CPU time is not the player's. Silence (zero bytes) does not count as audio:
squeezelite writes silence to stdout whenever it has nothing to play.

A paced reader that finds nothing to read when the next bytes are due is a sound card running
dry: each such wait longer than 20 ms is a stall, noted with its length and the byte offset
where it happened (slimplay writes nothing when its buffer is empty; squeezelite writes zeros,
which the bench finds in the capture instead).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=0, help="bytes per second; 0 = unpaced")
    parser.add_argument("--report", required=True)
    parser.add_argument("--capture", help="file for the bytes read, from the first non-zero byte on")
    args = parser.parse_args()
    capture = open(args.capture, "wb") if args.capture else None

    state = {
        "bytes": 0, "first_byte_at": None, "first_nonzero_at": None, "last_nonzero_at": None,
        "first_nonzero_offset": None, "last_nonzero_end": None, "stalls": [],
    }

    def report(*_: object) -> None:
        if capture:
            capture.close()
        with open(args.report + ".tmp", "w") as out:
            json.dump(state, out)
        os.replace(args.report + ".tmp", args.report)
        os._exit(0)

    signal.signal(signal.SIGTERM, report)
    size = 4096 if args.rate else 1 << 16
    started = None
    total = 0
    read = os.read
    monotonic = time.monotonic
    while True:
        chunk = read(0, size)
        if not chunk:
            break
        now = monotonic()
        if started is not None and args.rate:
            late = now - (started + total / args.rate)
            if late > 0.02 and state["first_nonzero_at"] is not None:
                state["stalls"].append([total, round(late, 4)])
        if started is None:
            started = now
            state["first_byte_at"] = now
        stripped = chunk.lstrip(b"\0")
        if stripped:
            if state["first_nonzero_at"] is None:
                state["first_nonzero_at"] = now
                state["first_nonzero_offset"] = total + len(chunk) - len(stripped)
            state["last_nonzero_at"] = now
            state["last_nonzero_end"] = total + len(chunk.rstrip(b"\0"))
        if capture and state["first_nonzero_at"] is not None:
            if state["first_nonzero_offset"] < total:
                capture.write(chunk)
            else:  # from the start of the frame (8 bytes divide every frame size) of the first non-zero byte
                aligned = state["first_nonzero_offset"] // 8 * 8
                state["capture_offset"] = aligned
                local = aligned - total
                capture.write(chunk[local:] if local >= 0 else bytes(-local) + chunk)
        total += len(chunk)
        state["bytes"] = total
        if args.rate:
            ahead = total / args.rate - (now - started)
            if ahead > 0:
                time.sleep(ahead)
            elif ahead < -0.05:
                # Nothing came for a while: a sound card does not catch up afterwards.
                started = now - total / args.rate
    report()


if __name__ == "__main__":
    sys.exit(main())
