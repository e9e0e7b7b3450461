"""The order in which lld should lay out slimplay's functions (`--symbol-ordering-file`), from
which functions ran: under callgrind (every function, the runtime's too, but in slow motion) and in
a build instrumented with -profile-generate (Swift functions only, at full speed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def link_order(binary: Path, start: dict[str, int], playing: dict[str, int], profiled_start: dict[str, int],
               profiled_playing: dict[str, int], steady: dict[str, int] | None = None) -> tuple[list[str], int, int]:
    """The names to write, with how many run while playing and how many only at start-up.
    `start`/`playing`: callgrind call counts (playing ones less what start-up alone calls);
    `profiled_*`: the instrumented build's entry counts, every function it can count included;
    `steady`: callgrind call counts of the release build on the real path once settled (after it
    dropped its start-up code): these come first of all, as they are what stays resident."""
    defined = set(subprocess.run(["nm", "--defined-only", "--format=just-symbols", str(binary)],
                                 capture_output=True, text=True, check=True).stdout.split())
    shared = names_in_shared_sections(binary)
    steady = steady or {}
    # What runs while playing (called more often than start-up alone calls it), most called
    # first, then start-up: the kernel maps code in 64 KB blocks, so code that runs together
    # should lie together. Callgrind counts every function, the runtime's too, but in slow
    # motion; the instrumented build sees the paths taken at full speed (Swift functions
    # only, with their partial-apply thunks and merged copies).
    hot = sorted((n for n, c in steady.items() if c > 0 and n in defined), key=lambda n: (-steady[n], n))
    hot += sorted((n for n, c in playing.items() if c > 0 and n in defined and steady.get(n, 0) <= 0),
                  key=lambda n: (-playing[n], n))
    chosen = set(hot)

    def add(names: list[str]) -> None:
        for name in names:
            if name in defined and name not in chosen:
                hot.append(name)
                chosen.add(name)

    def with_thunks(names: list[str]) -> list[str]:
        """The names with their partial-apply thunks and merged copies."""
        return [variant for n in names for variant in (n, n + "TA", n + "Tm", n + "TATm")]

    add(with_thunks(sorted((n for n, c in profiled_playing.items() if c > 0),
                           key=lambda n: (-profiled_playing[n], n))))
    # Neither source sees every helper the compiler makes (outlined copies, value witnesses,
    # specialisations, witness thunks) when the fast path takes it: a helper called directly
    # from code that runs is taken to run too. The instrumented build says for certain which
    # of its own functions never ran; those are not followed.
    if profiled_playing:
        never = {n for n in set(profiled_start) | set(profiled_playing)
                 if profiled_start.get(n, 0) + max(profiled_playing.get(n, 0), 0) == 0}
        callees = direct_callees(binary)
        frontier = list(hot)
        for _ in range(3):
            found = [c for n in frontier for c in sorted(callees.get(n, ()))
                     if c not in chosen and c not in never and c not in shared and c not in start]
            add(found)
            frontier = found
    cold = sorted(n for n in set(start) | set(playing) if n in defined and n not in chosen)
    listed = chosen | set(cold)
    cold += [n for n in with_thunks(sorted(n for n, c in profiled_start.items() if c > 0))
             if n in defined and n not in listed]
    # A name that is also defined in an object's one big `.text` (a Swift runtime library, or
    # a local name many objects share) would pull that whole section to its place: those
    # names come last, so the big sections follow the ordered functions instead of splitting
    # them.
    names = list(dict.fromkeys([n for n in hot + cold if n not in shared] + [n for n in hot + cold if n in shared]))
    return names, len(hot), len(cold)


def names_in_shared_sections(binary: Path) -> set[str]:
    """Function names defined, in any of the objects linked into `binary`, in a section holding
    more than one function (a plain `.text`): the linker can only move such a section whole."""
    build = binary.resolve().parent
    inputs = [Path(line.strip().strip('"')) for line in
              (build / f"{binary.name}.product" / "Objects.LinkFileList").read_text().splitlines() if line.strip()]
    swiftc = shutil.which("swiftc")
    if swiftc:
        inputs += sorted((Path(swiftc).resolve().parents[1] / "lib" / "swift_static" / "linux").glob("*.a"))
    names: set[str] = set()
    for path in inputs:
        if not path.exists():
            continue
        text = subprocess.run(["readelf", "-W", "-S", "-s", str(path)], capture_output=True, text=True,
                              errors="replace").stdout
        plain: set[str] = set()  # indices of plain .text sections in the current member
        for line in text.splitlines():
            fields = line.split()
            if line.startswith("File: "):
                plain = set()
            elif line.lstrip().startswith("[") and len(fields) > 2 and "]" in line:
                index, _, rest = line.lstrip()[1:].partition("]")
                section = rest.split()
                if section and section[0] == ".text":
                    plain.add(index.strip())
            elif len(fields) == 8 and fields[3] == "FUNC" and fields[6] in plain:
                names.add(fields[7])
    return names


def direct_callees(binary: Path) -> dict[str, set[str]]:
    """For each function in `binary`, the functions it calls, jumps to or takes the address of."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "--no-addresses", "-j", ".text", str(binary)],
                          capture_output=True, text=True, errors="replace", check=True).stdout
    callees: dict[str, set[str]] = {}
    current: set[str] = set()
    for line in text.splitlines():
        if line.startswith("<") and line.endswith(">:"):
            current = callees.setdefault(line[1:-2], set())
        elif "<" in line and ("call" in line or "jmp" in line or "lea" in line):
            target = line[line.rindex("<") + 1:line.rindex(">")] if line.rstrip().endswith(">") else ""
            if target and "+0x" not in target and "@plt" not in target:
                current.add(target)
    return callees
