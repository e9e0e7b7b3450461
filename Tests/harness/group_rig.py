"""A rig for sync groups on `-o -`, measured to the frame.

Each member's standard output goes to a paced reader (fakes/paced_reader.c): a sound card reading
16 frames at a time at its own clock, a chosen number of parts per million off, that logs how much
it has played when. Each capture is aligned with the album's reference, frame by frame, so that the
corrections a member made (silence inserted, frames skipped) are found and counted; from the two,
the album frame each member was playing at any instant, and so the members' offsets, are read back.
"""

from __future__ import annotations

import contextlib
import random
import re
import socket
import struct
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from .media import Capture
from .real_lms import LMSError, UnknownPlayer

READER_SOURCE = Path(__file__).parent / "fakes" / "paced_reader.c"
BYTES_PER_FRAME = 4  # `-a 16`, stereo
READ_FRAMES = 16
GROUP_ADDRESS = "239.255.83.80"


def reader_binary(folder: Path) -> Path:
    binary = folder / "paced_reader"
    if not binary.exists():
        subprocess.run(["gcc", "-O2", "-o", str(binary), str(READER_SOURCE)], check=True)
    return binary


def group_macs(count: int) -> list[str]:
    """MACs for one test's group (the first will be LMS's master), drawn at random: tests on other
    servers run beside this one, and their groups share the LAN's multicast group."""
    prefix = [0x02, 0x5C, random.randrange(256), random.randrange(256), random.randrange(256)]
    return [":".join(f"{b:02x}" for b in [*prefix, 0x10 + index]) for index in range(count)]


@dataclass
class Member:
    mac: str
    player: object
    reader: subprocess.Popen
    capture: Capture
    timing: Path
    folder: Path
    ppm: float
    args: tuple[str, ...] = ()
    name: str = ""

    def log(self) -> str:
        return self.player.log()

    def timeline(self) -> np.ndarray:
        """Rows of (CLOCK_MONOTONIC ns, bytes the reader had played)."""
        rows = [line.split() for line in self.timing.read_text().splitlines() if line.count(" ") == 1]
        return np.array([[int(a), int(b)] for a, b in rows], dtype=np.int64).reshape(-1, 2)

    def frames_played(self, instant_ns: int, timeline: np.ndarray) -> float:
        if len(timeline) == 0 or instant_ns < timeline[0, 0]:
            return 0.0
        return float(np.interp(instant_ns, timeline[:, 0], timeline[:, 1])) / BYTES_PER_FRAME


def launch_members(real_lms, start_player, tmp_path: Path, queue, ppms: list[float], macs: list[str],
                   extra: tuple[str, ...] = (), lms_sync: bool = True) -> list[Member]:  # noqa: ANN001
    """Starts one player per ppm into its paced reader, waits for LMS to see them all, and syncs them
    to the first; without `lms_sync`, LMS's own sync check (its skips and pauses) is off."""
    reader = reader_binary(tmp_path)
    members = []
    rate = queue.rates[0]
    for number, (mac, ppm) in enumerate(zip(macs, ppms)):
        with contextlib.suppress(LMSError, OSError):
            real_lms.rpc(mac, ["sync", "-"])
        folder = tmp_path / f"member-{number}"
        folder.mkdir()
        args = ("-s", real_lms.addr, "-m", mac, "-o", "-", "-a", queue.sample_format, "-n", f"group-{number}",
                "--state-dir", str(folder / "state"), "--cache-dir", str(folder / "cache"), "--prefetch", "15",
                "--lms-port", str(real_lms.http_port), "-d", "stream=info", "-d", "lms=info", "-d", "group=info",
                *extra)
        members.append(_start(start_player, reader, args, f"member-{number}", mac, folder, ppm, rate, "timing.txt"))
    for member in members:
        try:
            real_lms.wait_player(member.mac, timeout=20)
        except LMSError as error:
            pytest.fail(f"{error}\n{member.log()}")
        real_lms.set_volume(member.mac, 100)
        if not lms_sync:
            real_lms.rpc(member.mac, ["playerpref", "maintainSync", "0"])
    for member in members[1:]:
        # `<player> sync <other>` brings the other into the player's group; its first stays master.
        real_lms.rpc(members[0].mac, ["sync", member.mac])
    # The server may still hold groups of earlier tests' players.
    groups = real_lms.rpc(members[0].mac, ["syncgroups", "?"]).get("syncgroups_loop", [])
    assert any(set(macs) <= set(group["sync_members"].split(",")) for group in groups), groups
    return members


def _start(start_player, reader: Path, args: tuple[str, ...], name: str, mac: str, folder: Path, ppm: float,
           rate: int, timing_name: str) -> Member:  # noqa: ANN001
    player = start_player(*args, name=name, capture=True)
    timing = folder / timing_name
    paced = subprocess.Popen([str(reader), str(rate), str(ppm), str(READ_FRAMES * BYTES_PER_FRAME), str(timing)],
                             stdin=player.process.stdout, stdout=subprocess.PIPE)
    player.process.stdout.close()  # the reader holds it now
    return Member(mac, player, paced, Capture(paced.stdout), timing, folder, ppm, args, name)


def kill_and_restart(member: Member, start_player, tmp_path: Path, queue, downtime: float) -> Member:  # noqa: ANN001
    """SIGKILLs the member's player (its reader sees the end), waits, and starts it again as it was, into
    a reader of its own: the same card, a new capture."""
    member.player.process.kill()
    member.player.process.wait(timeout=10)
    with contextlib.suppress(subprocess.TimeoutExpired):
        member.reader.wait(timeout=10)
    time.sleep(downtime)
    return _start(start_player, reader_binary(tmp_path), member.args, member.name + "-again", member.mac,
                  member.folder, member.ppm, queue.rates[0], "timing-again.txt")


def captured(member: Member) -> int:
    """Bytes captured so far (without copying them)."""
    return len(member.capture.data)


def wait_for_group_resync(real_lms, members: list[Member], queue) -> tuple[float, float]:  # noqa: ANN001
    """(the instant every member was back, seconds until LMS showed the heard track at the heard time,
    the first member's)."""
    deadline = time.monotonic() + 30
    while not all(real_lms.connected(m.mac) for m in members):
        if time.monotonic() > deadline:
            pytest.fail("a member did not reconnect within 30 s\n" + "\n".join(m.log() for m in members))
        time.sleep(0.05)
    back = time.monotonic()
    last = None
    while time.monotonic() < back + 10:
        try:
            status = real_lms.status(members[0].mac)
        except (UnknownPlayer, OSError):
            time.sleep(0.05)
            continue
        index, seconds = queue.position(captured(members[0]))
        server_index, server_time = status.get("playlist_cur_index"), float(status.get("time") or 0)
        last = (server_index, server_time, index, seconds)
        if server_index is not None and int(server_index) == index and abs(server_time - seconds) <= 0.25:
            return back, time.monotonic() - back
        time.sleep(0.1)
    pytest.fail(f"LMS never showed the heard position (index, time, heard index, heard s): {last}\n"
                + "\n".join(m.log() for m in members))


def stop_readers(members: list[Member]) -> None:
    for member in members:
        member.player.stop()
        with contextlib.suppress(subprocess.TimeoutExpired):
            member.reader.wait(timeout=10)


# -- The captures against the reference --------------------------------------------------------


@dataclass
class Edit:
    """Where a capture leaves the reference: `frames` of silence inserted, or of the reference skipped."""
    capture_frame: int
    reference_frame: int
    kind: str  # "silence" or "skip"
    frames: int


@dataclass
class Alignment:
    edits: list[Edit] = field(default_factory=list)
    capture_end: int = 0
    reference_end: int = 0

    def album_frame(self, capture_frame: float) -> float:
        """The reference frame a listener heard at capture frame `capture_frame` (inside inserted
        silence: the frame it paused before)."""
        position = capture_frame
        for edit in self.edits:
            if edit.capture_frame >= capture_frame:
                break
            if edit.kind == "silence":
                position -= min(edit.frames, capture_frame - edit.capture_frame)
            else:
                position += edit.frames
        return position

    @property
    def inserted(self) -> int:
        return sum(edit.frames for edit in self.edits if edit.kind == "silence")

    @property
    def skipped(self) -> int:
        return sum(edit.frames for edit in self.edits if edit.kind == "skip")


def as_frames(data: bytes) -> np.ndarray:
    usable = len(data) // BYTES_PER_FRAME * BYTES_PER_FRAME
    return np.frombuffer(data[:usable], dtype="<u4")


def _find(window: np.ndarray, within: np.ndarray) -> int | None:
    """The first offset in `within` at which `window` occurs."""
    if len(within) < len(window):
        return None
    candidates = np.flatnonzero(within[: len(within) - len(window) + 1] == window[0])
    for start in candidates:
        if np.array_equal(within[start:start + len(window)], window):
            return int(start)
    return None


def align(capture: np.ndarray, reference: np.ndarray, expected: list[int] | None = None, largest: int = 4410,
          window: int = 256) -> Alignment:
    """Walks the capture along the reference; every departure must be silence inserted (zeros, after
    which the reference goes on where it was) or frames skipped, else the walk fails. `expected`: the
    corrections the player logged, in order (positive: frames of silence, negative: frames skipped),
    tried first at each departure; without one that explains it, the smallest shift (at most
    `largest`) that does is taken (the tones repeat within a track, so a larger one is ambiguous)."""
    result = Alignment()
    hints = list(expected or [])
    i = j = 0
    while i < len(capture) and j < len(reference):
        n = min(len(capture) - i, len(reference) - j, 1 << 18)
        differing = np.flatnonzero(capture[i:i + n] != reference[j:j + n])
        if differing.size == 0:
            i, j = i + n, j + n
            continue
        i, j = i + int(differing[0]), j + int(differing[0])
        size = min(window, len(reference) - j, len(capture) - i)
        hinted = next((k for k, hint in enumerate(hints) if _explains(capture, reference, i, j, hint, size)), None)
        if hinted is not None:
            hint = hints[hinted]
            del hints[:hinted + 1]
            if hint > 0:
                result.edits.append(Edit(i, j, "silence", hint))
                i += hint
            else:
                result.edits.append(Edit(i, j, "skip", -hint))
                j += -hint
            continue
        inserted = _find(reference[j:j + size], capture[i:i + largest + size])
        skipped = _find(capture[i:i + size], reference[j:j + largest + size])
        if inserted is not None and (skipped is None or inserted <= skipped) and not capture[i:i + inserted].any():
            result.edits.append(Edit(i, j, "silence", inserted))
            i += inserted
        elif skipped is not None:
            result.edits.append(Edit(i, j, "skip", skipped))
            j += skipped
        else:
            raise AssertionError(f"capture frame {i} (reference frame {j}) is neither silence inserted nor "
                                 f"frames skipped: {capture[i:i + 4]} against {reference[j:j + 4]}")
    result.capture_end, result.reference_end = i, j
    return result


def _explains(capture: np.ndarray, reference: np.ndarray, i: int, j: int, correction: int, size: int) -> bool:
    """Whether `correction` frames (silence if positive, skipped if negative) at capture frame `i`,
    reference frame `j`, bring the two together again."""
    if correction > 0:
        after = capture[i + correction:i + correction + size]
        return (not capture[i:i + correction].any() and len(after) == size
                and np.array_equal(after, reference[j:j + size]))
    after = reference[j - correction:j - correction + size]
    return len(after) == size and np.array_equal(capture[i:i + size], after)


CORRECTION = re.compile(r"group: (\d+) frames \(\d+ µs\) (ahead of|behind) |"
                        r"sync: the server asks (to skip|for) (\d+) ms")


def logged_corrections(log: str, rate: int) -> list[int]:
    """The corrections a player logged, in order: its group clock's (frames) and the server's (ms,
    which the player turns into frames at the track's rate)."""
    found = []
    for frames, way, server_way, ms in CORRECTION.findall(log):
        if frames:
            found.append(int(frames) if way == "ahead of" else -int(frames))
        else:
            amount = int(ms) * rate // 1000
            found.append(-amount if server_way == "to skip" else amount)
    return found


def underruns(member: Member, rate: int, longer_than: float = 0.05) -> list[tuple[int, float]]:
    """(instant, seconds) of each time the reader waited for data longer than `longer_than` (its last
    row, written when its player stopped, is not a wait for audio)."""
    timeline = member.timeline()[:-1]
    found = []
    for (t0, b0), (t1, b1) in zip(timeline[:-1], timeline[1:]):
        late = (t1 - t0) / 1e9 - (b1 - b0) / rate
        if late > longer_than:
            found.append((int(t0), late))
    return found


# -- Datagrams from elsewhere on the LAN --------------------------------------------------------


def group_datagram(sender: str, group: str, boot: int, sequence: int, queue_index: int, track_id: int,
                   rate: int, frame: int, heard_at: int) -> bytes:
    """A play point as the protocol lays it out (Docs/SYNC.md), unsigned."""
    def mac(text: str) -> bytes:  # noqa: E306
        return bytes(int(part, 16) for part in text.split(":"))
    return (b"SPGS" + bytes([1, 1, 0, 0]) + mac(sender) + mac(group) + struct.pack(">IQ", boot, sequence)
            + struct.pack(">IiIQQQB", queue_index, track_id, rate, 0, frame, heard_at, 0))


def send_to_group(datagrams: list[bytes], source: str, port: int = 3484) -> None:
    """Sends datagrams to the group from `source` (a loopback address of its own: another host)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((source, 0))
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
        for datagram in datagrams:
            sock.sendto(datagram, (GROUP_ADDRESS, port))


@contextlib.contextmanager
def recording_group(port: int = 3484):
    """Records the group's datagrams (what a host on the LAN can overhear), for replaying them."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((GROUP_ADDRESS, port))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                    socket.inet_aton(GROUP_ADDRESS) + socket.inet_aton("127.0.0.1"))
    sock.settimeout(0.2)
    heard: list[bytes] = []

    def take() -> list[bytes]:
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            with contextlib.suppress(TimeoutError, socket.timeout):
                heard.append(sock.recv(2048))
        return heard

    try:
        yield take
    finally:
        sock.close()
