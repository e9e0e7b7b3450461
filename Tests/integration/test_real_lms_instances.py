"""Several players on one machine, as squeezelite users run one per DAC or room: each started with
its defaults (no state or cache folder given, one HOME), only its name and MAC its own.

Each keeps its own state and cache (a folder per player under the state folder): restarted while
the real LMS is away, each resumes its own queue where it was, and LMS is told so when it returns.
A second process for a player already running is refused with a clear message. Each keeps its own
pins and offline library too: the queue a listener builds from one goes on the server as that
player's, beside the other's."""

from __future__ import annotations

import contextlib
import json
import re
import time
import urllib.request

import pytest
from harness.media import Capture
from harness.player import state_folder
from harness.real_lms import LMSError
from test_real_lms_library import api_post, assert_the_whole_sequence, wait_for_lms_at_the_heard_position
from test_real_lms_offline import Queue, cached_count, compare_whole_queue, wait_for_resync
from test_real_lms_pins import album_id, ctl, pins, wait_until

pytestmark = pytest.mark.real_lms

MACS = ["02:11:22:33:44:a1", "02:11:22:33:44:a2", "02:11:22:33:44:a3"]
# State one player could not keep (two sharing a folder renamed each other's files away), or any error
# but the lost connection the outage itself causes.
TROUBLE = re.compile(r"^\[[^]]+\] (error|critical) (?!slimproto: connection to the server failed)|cannot (save|rename|write)",
                     re.MULTILINE)


class Room:
    def __init__(self, real_lms, start_player, home, number: int, queue: Queue):  # noqa: ANN001
        self.real_lms, self.start_player, self.queue = real_lms, start_player, queue
        self.mac, self.name = MACS[number], f"room-{number + 1}"
        self.env = {"HOME": str(home), "XDG_STATE_HOME": "", "STATE_DIRECTORY": ""}
        self.folder = state_folder(home / ".local" / "state" / "slimplay", self.mac)
        self.lives: list = []

    def start(self, wait: bool = True):  # noqa: ANN201
        player = self.start_player(
            "-s", self.real_lms.addr, "-m", self.mac, "-n", self.name, "-o", "-", "-a", "16",
            "--lms-port", str(self.real_lms.http_port), "-d", "cache=info", "-d", "stream=info",
            name=f"{self.name}-{len(self.lives)}", capture=True, env=self.env, defaults=True)
        self.player, self.capture = player, Capture(player.process.stdout, seconds_for=self.queue.seconds_for)
        self.lives.append(player)
        if wait:
            self.real_lms.wait_player(self.mac, timeout=20)
            self.real_lms.set_volume(self.mac, 100)
        return player

    def logs(self) -> str:
        return "\n".join(f"--- {life.log_path.name}\n{life.log()}" for life in self.lives)

    def api_port(self) -> int:
        """The port this life of the player found for its API (left at the default address)."""
        assert self.player.wait_for_log("API on http://", 10), self.logs()
        return int(re.findall(r"API on http://127\.0\.0\.1:(\d+)/", self.player.log())[0])

    def library(self, query: str = "") -> dict | None:
        with contextlib.suppress(OSError, ValueError):
            with urllib.request.urlopen(f"http://127.0.0.1:{self.api_port()}/api/library{query}", timeout=5) as reply:
                return json.loads(reply.read())
        return None


@pytest.mark.timeout(400)
@pytest.mark.slow(seconds=110)
def test_three_players_on_one_machine_each_resume_their_own_queue(real_lms, start_player, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    album = real_lms.library.tracks("FLAC 16-44")
    rooms = [Room(real_lms, start_player, home, n, Queue(album[n:n + 5])) for n in range(3)]
    for room in rooms:
        with contextlib.suppress(LMSError, OSError):
            real_lms.rpc(room.mac, ["playlist", "clear"])
        room.start()
    for room in rooms:
        real_lms.load_tracks(room.mac, room.queue.tracks)
        real_lms.play(room.mac, 0)
    deadline = time.monotonic() + 60
    while not all(room.queue.seconds_for(len(room.capture.bytes())) >= 9 and cached_count(room.folder) >= 3
                  for room in rooms):
        assert time.monotonic() < deadline, "\n".join(room.logs() for room in rooms)
        time.sleep(0.1)

    real_lms.stop()
    time.sleep(3)
    offsets = []
    for room in rooms:
        room.player.stop()  # SIGTERM: the heard position is saved
        room.capture.thread.join(5)
        first = room.capture.bytes()
        saved = json.loads((room.folder / "playback.json").read_text())
        offset = (sum(len(r) for r in room.queue.references[:saved["index"]])
                  + int(saved["position"] * 44100 + 0.5) * 4)
        print(f"{room.name}: saved track {saved['index'] + 1} at {saved['position']} s")
        assert room.queue.reference.startswith(first), room.logs()
        assert 0 <= len(first) - offset <= room.queue.bytes_per_second // 10, (len(first), offset, room.logs())
        offsets.append(offset)
    # Each saved what it played itself: the three queues begin on different tracks.
    assert len({(r.queue.tracks[0].path, o) for r, o in zip(rooms, offsets)}) == 3

    # A second process for a player that runs is refused, and says why.
    for room in rooms:
        room.start(wait=False)
    # The duplicate comes once the running player holds its state folder (it logs its start after
    # taking it): two processes started together race for it, and either may be the one refused.
    held_by = time.monotonic() + 10
    while f"player {rooms[0].mac}" not in rooms[0].player.log() and time.monotonic() < held_by:
        time.sleep(0.05)
    duplicate = start_player("-s", real_lms.addr, "-m", rooms[0].mac, "-o", "null", name="duplicate",
                             env=rooms[0].env, defaults=True)
    assert duplicate.process.wait(10) != 0
    assert "in use by another slimplay" in duplicate.log() and "give each player its own -m" in duplicate.log()
    for room in rooms:
        assert room.player.wait_for_log("resuming track", timeout=15), room.logs()
    time.sleep(8)
    real_lms.start()
    back = time.monotonic()
    for room, offset in zip(rooms, offsets):
        resync = wait_for_resync(real_lms, room.player, room.capture, room.queue, back, offset=offset, mac=room.mac)
        print(f"{room.name}: LMS showed track {resync.index + 1} {resync.matched_after:.2f} s after the reconnect")
    # Left at the default address, each found a port of its own for its API.
    ports = [re.findall(r"API on http://127\.0\.0\.1:(\d+)/", room.player.log()) for room in rooms]
    assert all(len(found) == 1 for found in ports) and len({found[0] for found in ports}) == 3, ports
    for room, offset in zip(rooms, offsets):
        compare_whole_queue(room.player, room.capture, room.queue, timeout=60, offset=offset)
        trouble = [line for life in room.lives for line in life.log().splitlines() if TROUBLE.search(line)]
        assert not trouble, room.logs()
    assert sorted(p.name for p in (home / ".local" / "state" / "slimplay").iterdir() if p.is_dir()) == \
        sorted(room.folder.name for room in rooms)


@pytest.mark.timeout(400)
@pytest.mark.slow(seconds=100)
def test_two_players_on_one_machine_keep_their_own_pins_library_and_queue(real_lms, start_player, tmp_path):
    """Two players on one machine, started with their defaults, each pin albums of their own with
    `slimplay ctl` (at the API port each found). Both are restarted with the server stopped: each library
    lists its own pins and nothing of the other's, and each plays a queue built from it. When the server
    returns, each puts its own queue on it under its own MAC, LMS shows each at its heard track and time,
    and each capture is its sequence's reference decode, whole, to the last frame."""
    home = tmp_path / "home"
    home.mkdir()
    library = real_lms.library
    albums = [[library.tracks("FLAC Ten"), library.tracks("FLAC 16-44")], [library.tracks("MP3 CBR")]]
    sequences = [Queue([*albums[0][0], *albums[0][1][:3]]), Queue(albums[1][0])]
    rooms = [Room(real_lms, start_player, home, n, sequences[n]) for n in range(2)]
    for room in rooms:
        with contextlib.suppress(LMSError, OSError):
            real_lms.rpc(room.mac, ["playlist", "clear"])
        room.start()
    for room, pinned in zip(rooms, albums):
        for album in pinned:
            assert ctl(room.api_port(), "pin", "album", str(album_id(real_lms, album[0].path))).returncode == 0
    for room, pinned in zip(rooms, albums):
        port = room.api_port()
        wait_until(lambda port=port: all(pin["complete"] for pin in pins(port)), 60, "the pins downloaded")
        assert sorted(pin["tracks"] for pin in pins(port)) == sorted(len(album) for album in pinned)
    for room in rooms:
        room.player.stop()
    real_lms.stop()

    for room in rooms:
        room.start(wait=False)
    for room, pinned in zip(rooms, albums):
        listed = wait_until(lambda room=room: room.library(), 10, "the library")["albums"]
        assert sorted(album["title"] for album in listed) == sorted(album[0].album for album in pinned), listed
    for room in rooms:
        keys = {}
        for album in room.library()["albums"]:
            keys |= {track["id"]: track["key"] for track in room.library(f"?album={album['id']}")["tracks"]}
        queue = [keys[real_lms.track_id(track.path)] for track in room.queue.tracks]
        assert api_post(room.api_port(), "/api/queue/play", {"tracks": queue}) == 200
    for room in rooms:
        room.capture.wait_for_length(room.queue.bytes_per_second, timeout=15)

    real_lms.start()
    for room in rooms:
        real_lms.wait_player(room.mac, timeout=30)
        count = len(room.queue.tracks)
        assert room.player.wait_for_log(f"putting the listener's queue ({count} tracks) on the server", 30), room.logs()
    for room in rooms:
        status, shown, index, seconds = wait_for_lms_at_the_heard_position(
            real_lms, room.player, room.capture, room.queue, mac=room.mac)
        print(f"{room.name}: LMS at track {shown[0] + 1} {shown[1]:.3f} s, heard {seconds:.3f} s")
        ids = [int(entry["id"]) for entry in status.get("playlist_loop", [])]
        assert ids == [real_lms.track_id(track.path) for track in room.queue.tracks][index:index + len(ids)]
        assert int(status.get("playlist_tracks")) == len(room.queue.tracks)
    for room in rooms:
        assert_the_whole_sequence(room.player, room.capture, room.queue)
        trouble = [line for life in room.lives for line in life.log().splitlines() if TROUBLE.search(line)]
        assert not trouble, room.logs()
