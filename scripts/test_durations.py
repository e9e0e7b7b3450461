"""Prints the slowest tests and the seconds per test file from pytest's JUnit reports (scripts/test's phases).

    python3 scripts/test_durations.py REPORT.xml ...
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path

SLOWEST = 15


def cases(report: Path) -> list[tuple[str, str, float]]:
    """(file, test, seconds) of every test case in a report (setup, call and teardown together)."""
    try:
        root = ElementTree.parse(report).getroot()
    except (OSError, ElementTree.ParseError):
        return []
    machine = "arm64 " if report.stem.startswith("arm64") else ""  # the arm64 check's run of the same files
    found = []
    for case in root.iter("testcase"):
        module = case.get("classname", "").split(".")[0]
        found.append((f"{machine}{module}.py", case.get("name", "?"), float(case.get("time", 0) or 0)))
    return found


def main(paths: list[str]) -> None:
    every = [case for path in paths for case in cases(Path(path))]
    if not every:
        return
    print(f"\n{SLOWEST} slowest tests")
    for file, name, seconds in sorted(every, key=lambda case: -case[2])[:SLOWEST]:
        print(f"{seconds:8.1f} s  {file}::{name}")
    per_file: dict[str, float] = defaultdict(float)
    for file, _, seconds in every:
        per_file[file] += seconds
    print("\nseconds per file (summed over the workers that ran it)")
    for file, seconds in sorted(per_file.items(), key=lambda item: -item[1]):
        print(f"{seconds:8.1f} s  {file}")
    print(f"{sum(per_file.values()):8.1f} s  {len(every)} tests in all")


if __name__ == "__main__":
    main(sys.argv[1:])
