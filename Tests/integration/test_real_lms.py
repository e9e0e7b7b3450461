"""slimplay against the real LMS 7.9.1 (../shared/lms): the peer the player exists for. See real_lms.py."""

import time

import pytest
from media import Capture
from real_lms import LMSError

pytestmark = pytest.mark.real_lms

MAC = "02:11:22:33:44:90"
BYTES_PER_SECOND = 44100 * 4  # `-a 16`: 16-bit stereo


def start(real_lms, start_player, tmp_path, *extra):
    """slimplay on the real LMS, raw PCM on stdout read at real time; returns once LMS lists it."""
    player = start_player(
        "-s", real_lms.addr, "-m", MAC, "-o", "-", "-a", "16", "-n", "realtest",
        "--cache-dir", str(tmp_path / "cache"), "-d", "cache=info", "-d", "lms=info",
        "--lms-port", str(real_lms.http_port), *extra, capture=True)
    capture = Capture(player.process.stdout, bytes_per_second=BYTES_PER_SECOND)
    try:
        real_lms.wait_player(MAC, timeout=20)
    except LMSError as error:
        pytest.fail(f"{error}\n{player.log()}")
    real_lms.set_volume(MAC, 100)  # LMS remembers a player's volume: 100 leaves the samples bit-exact
    return player, capture


def first_difference(got: bytes, expected: bytes) -> int | None:
    """The first byte offset where the two differ (or where the shorter one ends); None when equal."""
    if got == expected:
        return None
    step = 65536
    for block in range(0, min(len(got), len(expected)), step):
        if got[block:block + step] != expected[block:block + step]:
            return next(i for i in range(block, block + step) if got[i:i + 1] != expected[i:i + 1])
    return min(len(got), len(expected))


def test_three_flac_tracks_play_bit_exact_and_lms_follows_the_queue(real_lms, start_player, tmp_path):
    tracks = real_lms.library.tracks("FLAC 16-44")[:3]
    reference = b"".join(track.reference() for track in tracks)
    player, capture = start(real_lms, start_player, tmp_path)
    real_lms.load_tracks(MAC, tracks)
    real_lms.play(MAC, 0)

    # LMS's view while the queue plays: the index it shows, by how much audio had come out
    seen: list[tuple[float, int | None, str | None]] = []
    deadline = time.monotonic() + len(reference) / BYTES_PER_SECOND + 30
    while len(capture.bytes()) < len(reference) and time.monotonic() < deadline and player.alive:
        status = real_lms.status(MAC)
        index = status.get("playlist_cur_index")
        seen.append((len(capture.bytes()) / BYTES_PER_SECOND, None if index is None else int(index),
                     status.get("mode")))
        time.sleep(0.5)
    got = capture.wait_for_length(len(reference), timeout=5)
    time.sleep(1.0)  # anything after the last frame would show now
    got = capture.bytes()
    final = real_lms.status(MAC)

    mismatch = first_difference(got, reference)
    print(f"captured {len(got)} bytes, reference {len(reference)} ({len(reference) / BYTES_PER_SECOND:.2f} s), "
          f"first difference at byte {mismatch}")
    print("LMS index by seconds played:", [(round(t, 1), i, m) for t, i, m in seen[::4]])
    print("LMS at the end:", {k: final.get(k) for k in ("mode", "playlist_cur_index", "time")})
    assert len(got) == len(reference), player.log()
    assert mismatch is None, f"samples differ from the reference decode from byte {mismatch}"

    indexes = [index for _, index, _ in seen if index is not None]
    assert indexes == sorted(indexes), f"LMS's index went back: {seen}"
    assert indexes and indexes[0] == 0, seen
    assert 2 in indexes, f"LMS's status never showed the last track while it played: {seen}"
    assert [m for _, _, m in seen if m is not None].count("play") >= len(seen) // 2, seen
