"""The local control API and `slimplay ctl`, online (through LMS) and offline (local playback)."""

import json
import socket
import struct
import subprocess
import time
import urllib.error
import urllib.request

from harness.player import binary_path, state_folder
from test_offline import BYTES_PER_SECOND, MAC, assert_pauses_and_resumes, cached_count, queue_media, start, wait_for_log
from harness.lms import free_port


def ctl(port, *args, token=None):
    command = [binary_path(), "ctl", *args, "--api", f"127.0.0.1:{port}"]
    if token:
        command += ["--token", token]
    return subprocess.run(command, capture_output=True, text=True, timeout=10)


def api(port, method, path, body=None, token=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=json.dumps(body).encode() if body is not None else None)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_status_and_commands_online_go_through_the_server(lms_factory, start_player, media, tmp_path):
    lms = lms_factory(volume=100)
    files = queue_media(media, "control", seconds=(12, 4))
    lms.load(MAC, files)
    port = free_port()
    player, capture = start(lms, start_player, tmp_path, "--control", f"127.0.0.1:{port}")
    lms.play(MAC, 0)
    assert lms.wait_for(lambda: cached_count(tmp_path) == 2, timeout=10), player.log()
    assert lms.wait_for(lambda: "STMs" in lms.stat_events(), timeout=5)
    time.sleep(2.0)  # a status poll after STMs
    result = ctl(port, "status", "--json")
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    print(status)
    server = lms.status_of(MAC)
    assert status["state"] == "online"
    assert status["now_playing"]["title"] == server["playlist_loop"][0]["title"] == "control-0"
    assert [t["title"] for t in status["queue"]] == ["control-0", "control-1"]
    assert all(t["cached"] for t in status["queue"])
    assert abs(status["position"] - float(server["time"])) < 1.0
    assert status["volume"] == 100
    human = ctl(port, "status").stdout
    assert "online, playing" in human and "control-0" in human and "[cached]" in human

    assert ctl(port, "pause").returncode == 0
    assert lms.wait_for(lambda: lms.status_of(MAC)["mode"] == "pause", timeout=3)
    assert ctl(port, "play").returncode == 0
    assert lms.wait_for(lambda: lms.status_of(MAC)["mode"] == "play", timeout=3)
    assert ctl(port, "volume", "40").returncode == 0
    assert lms.wait_for(lambda: int(lms.status_of(MAC)["mixer volume"]) == 40, timeout=3)
    assert ctl(port, "next").returncode == 0
    assert lms.wait_for(lambda: int(lms.status_of(MAC)["playlist_cur_index"]) == 1, timeout=5)


def test_commands_offline_act_on_local_playback(lms_factory, start_player, media, tmp_path):
    lms = lms_factory(volume=100)
    files = queue_media(media, "control-off", seconds=(12, 12))
    port = free_port()
    lms.load(MAC, files)
    player, capture = start(lms, start_player, tmp_path, "--control", f"127.0.0.1:{port}")
    lms.stream_rate = 120_000
    lms.play(MAC, 0)
    assert lms.wait_for(lambda: cached_count(tmp_path) == 2, timeout=20), player.log()
    time.sleep(1.5)
    lms.stop()
    assert wait_for_log(player, "continues from the cache", timeout=10), player.log()
    status = json.loads(ctl(port, "status", "--json").stdout)
    assert status["state"] == "offline" and status["playing"]

    assert_pauses_and_resumes(
        capture, lambda: ctl(port, "pause").check_returncode(), lambda: ctl(port, "toggle").check_returncode())

    # Next: the capture goes on with the second track's first samples.
    second = media.flac_reference(files[1])
    before = len(capture.bytes())
    assert ctl(port, "next").returncode == 0
    assert lms.wait_for(lambda: capture.bytes().find(second[:BYTES_PER_SECOND // 2], before) >= 0, timeout=5), \
        player.log()
    assert lms.wait_for(
        lambda: json.loads(ctl(port, "status", "--json").stdout).get("now_playing", {}).get("index") == 1, timeout=4)
    # Seek: the capture goes on from 5 s into the second track.
    before = len(capture.bytes())
    assert ctl(port, "seek", "5").returncode == 0
    at_5s = second[5 * BYTES_PER_SECOND: 5 * BYTES_PER_SECOND + BYTES_PER_SECOND // 2]
    assert lms.wait_for(lambda: capture.bytes().find(at_5s, before) >= 0, timeout=5), player.log()
    # Volume: the samples get quieter than the unity-gain reference.
    assert ctl(port, "volume", "20").returncode == 0
    time.sleep(1.0)
    tail = capture.bytes()[-BYTES_PER_SECOND // 4 // 4 * 4:]
    peak = max(abs(v) for v in struct.unpack(f"<{len(tail) // 2}h", tail))
    print(f"peak at volume 20: {peak}")
    assert 0 < peak < 2000
    assert json.loads(ctl(port, "status", "--json").stdout)["volume"] == 20


def test_bad_requests_get_clear_errors_and_a_token_guards_the_api(lms_factory, start_player, media, tmp_path):
    lms = lms_factory(volume=100)
    port = free_port()
    player, capture = start(lms, start_player, tmp_path, "--control", f"127.0.0.1:{port}", "--control-token", "s3")
    assert api(port, "GET", "/api/status")[0] == 401
    assert api(port, "GET", "/api/status", token="s3")[0] == 200
    code, body = api(port, "POST", "/api/volume", {"value": 200}, token="s3")
    assert code == 400 and "volume" in body["error"]
    code, body = api(port, "POST", "/api/seek", {"seconds": "soon"}, token="s3")
    assert code == 400 and "seconds" in body["error"]
    code, body = api(port, "POST", "/api/dance", {}, token="s3")
    assert code == 404 and "dance" in body["error"]
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/pause", method="POST", data=b"{not json")
    request.add_header("Authorization", "Bearer s3")
    try:
        urllib.request.urlopen(request, timeout=5)
        raise AssertionError("garbage body accepted")
    except urllib.error.HTTPError as error:
        assert error.code == 400
    assert player.alive, "the player survives bad requests"
    result = ctl(port, "status", token="wrong")
    assert result.returncode != 0 and "token" in result.stderr


def test_the_page_and_its_live_events(lms_factory, start_player, media, tmp_path):
    lms = lms_factory(volume=100)
    files = queue_media(media, "page", seconds=(8, 4))
    lms.load(MAC, files)
    port = free_port()
    player, capture = start(lms, start_player, tmp_path, "--control", f"127.0.0.1:{port}")
    lms.play(MAC, 0)
    assert lms.wait_for(lambda: "STMs" in lms.stat_events(), timeout=5)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as reply:
        page = reply.read().decode()
        assert reply.headers["Content-Type"].startswith("text/html")
    assert "EventSource" in page and "/api/events" in page and "http" not in page.split("<script>")[0].lower().replace(
        'http-equiv', '')
    # One connection: the page and the status kept alive, then the page asked with `Connection:
    # close`, answered so and closed at once (not at the 10 s limit on an idle connection).
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        reader = connection.makefile("rb")
        for path, close in (("/", False), ("/api/status", False), ("/", True)):
            ask = "Connection: close\r\n" if close else ""
            connection.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{ask}\r\n".encode())
            status_line = reader.readline()
            headers = {}
            while line := reader.readline().decode().strip():
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = reader.read(int(headers["content-length"]))
            assert status_line.startswith(b"HTTP/1.1 200") and len(body) == int(headers["content-length"]), path
            assert (headers.get("connection") == "close") == close, (path, close, headers)
        asked = time.monotonic()
        assert reader.read(1) == b"", "the connection stays open after Connection: close"
        assert time.monotonic() - asked < 3
    events = urllib.request.urlopen(f"http://127.0.0.1:{port}/api/events", timeout=10)
    assert events.headers["Content-Type"] == "text/event-stream"
    seen = []
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        line = events.readline().decode().strip()
        if line.startswith("data: "):
            status = json.loads(line[6:])
            seen.append((time.monotonic(), status))
            if status.get("now_playing", {}).get("title") == "page-0" and len(seen) >= 3:
                break
    events.close()
    assert seen and seen[-1][1]["now_playing"]["title"] == "page-0", seen
    # No placeholder ever: every event that names a track names a real one.
    titles = {s.get("now_playing", {}).get("title") for _, s in seen} - {None}
    assert titles <= {"page-0", "page-1"}
    # The position alone goes out at most about once a second.
    gaps = [b[0] - a[0] for a, b in zip(seen, seen[1:])]
    print("event gaps", [round(g, 2) for g in gaps])
    assert all(g >= 0.7 for g in gaps[1:])


def test_artwork_comes_from_the_server_is_cached_and_waits_at_most_3_s(lms_factory, start_player, media, tmp_path):
    lms = lms_factory(volume=100)
    files = queue_media(media, "art", seconds=(10, 4))
    lms.load(MAC, files)
    port = free_port()
    player, capture = start(lms, start_player, tmp_path, "--control", f"127.0.0.1:{port}")
    lms.play(MAC, 0)
    assert lms.wait_for(lambda: "STMs" in lms.stat_events(), timeout=5)
    time.sleep(1.0)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/artwork/current", timeout=5) as reply:
        image = reply.read()
        assert reply.headers["Content-Type"] == "image/jpeg"
    assert image[:3] == b"\xff\xd8\xff"
    # Both covers are prefetched into the state folder, so offline playback has art too.
    assert lms.wait_for(lambda: len(list((state_folder(tmp_path / "state", MAC) / "artwork").glob("*.img"))) == 2, timeout=6), \
        player.log()
    # A damaged cover file is dropped and fetched again.
    for path in (state_folder(tmp_path / "state", MAC) / "artwork").glob("*.img"):
        path.write_bytes(b"garbage")
    requests = len(lms.artwork_requests)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/artwork/current", timeout=5) as reply:
        assert reply.read()[:3] == b"\xff\xd8\xff"
    assert len(lms.artwork_requests) > requests
    # With the artwork server stalled, the answer still comes within 3 s (without the image).
    for path in (state_folder(tmp_path / "state", MAC) / "artwork").glob("*.img"):
        path.unlink()
    lms.artwork_delay = 10
    asked = time.monotonic()
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/artwork/current", timeout=8)
        raise AssertionError("a stalled cover was served")
    except urllib.error.HTTPError as error:
        assert error.code == 404
    took = time.monotonic() - asked
    print(f"answer without the stalled cover after {took:.2f} s")
    assert took <= 3.5
    # The text does not wait for the art longer than 3 s.
    assert lms.wait_for(lambda: json.loads(ctl(port, "status", "--json").stdout).get("now_playing", {}).get("title")
                        == "art-0", timeout=4)


class Events:
    """Reads the page's server-sent events on a thread, each with its arrival time."""

    def __init__(self, port):
        import threading

        self.items = []
        self.stream = urllib.request.urlopen(f"http://127.0.0.1:{port}/api/events", timeout=30)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            for raw in self.stream:
                line = raw.decode().strip()
                if line.startswith("data: "):
                    self.items.append((time.monotonic(), json.loads(line[6:])))
        except (OSError, ValueError):
            pass

    def now_playing(self):
        return [(at, s["now_playing"]) for at, s in self.items if "now_playing" in s]


def test_a_track_change_is_one_update_with_its_cover(lms_factory, start_player, media, tmp_path):
    lms = lms_factory(volume=100)
    files = queue_media(media, "meta", seconds=(4, 4))
    lms.load(MAC, files)
    port = free_port()
    player, capture = start(lms, start_player, tmp_path, "--control", f"127.0.0.1:{port}")
    events = Events(port)
    lms.play(MAC, 0)
    assert lms.wait_for(lambda: lms.stat_events(("STMs",)).count("STMs") == 2, timeout=10), player.log()
    assert lms.wait_for(lambda: any(n["title"] == "meta-1" for _, n in events.now_playing()), timeout=5)
    shown = [n for _, n in events.now_playing()]
    titles = [n["title"] for n in shown]
    print("titles in order", titles)
    assert set(titles) <= {"meta-0", "meta-1"}, "only real titles, never a placeholder"
    first_of_second = next(n for n in shown if n["title"] == "meta-1")
    assert first_of_second.get("artwork"), "the new track's first update carries its cover"
    # One switch: once the second track shows, the first never comes back.
    assert titles[titles.index("meta-1"):] == ["meta-1"] * (len(titles) - titles.index("meta-1"))
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{first_of_second['artwork']}", timeout=5) as reply:
        assert reply.read()[:3] == b"\xff\xd8\xff"


def test_with_the_artwork_server_stalled_the_text_arrives_within_3_s(lms_factory, start_player, media, tmp_path):
    lms = lms_factory(volume=100)
    lms.artwork_delay = 30
    files = queue_media(media, "stalled", seconds=(8,))
    lms.load(MAC, files)
    port = free_port()
    player, capture = start(lms, start_player, tmp_path, "--control", f"127.0.0.1:{port}")
    events = Events(port)
    lms.play(MAC, 0)
    assert lms.wait_for(lambda: "STMs" in lms.stat_events(), timeout=5)
    started = time.monotonic()
    assert lms.wait_for(lambda: events.now_playing(), timeout=6), "no now-playing update at all"
    at, now = events.now_playing()[0]
    print(f"title after {at - started:.2f} s, artwork {now.get('artwork')}")
    assert now["title"] == "stalled-0" and not now.get("artwork")
    assert at - started <= 3.6


def test_seek_and_previous_online_and_the_saved_track_after_a_restart(lms_factory, start_player, media, tmp_path):
    lms = lms_factory(volume=100)
    files = queue_media(media, "more", seconds=(12, 12))
    lms.load(MAC, files)
    port = free_port()
    player, capture = start(lms, start_player, tmp_path, "--control", f"127.0.0.1:{port}")
    lms.play(MAC, 1)
    assert lms.wait_for(lambda: "STMs" in lms.stat_events(), timeout=5)
    assert ctl(port, "seek", "6").returncode == 0
    assert lms.wait_for(lambda: 5.5 <= float(lms.status_of(MAC)["time"]) <= 8, timeout=4), lms.status_of(MAC)
    assert ctl(port, "previous").returncode == 0
    assert lms.wait_for(lambda: int(lms.status_of(MAC)["playlist_cur_index"]) == 0, timeout=4)
    assert lms.wait_for(
        lambda: json.loads(ctl(port, "status", "--json").stdout).get("now_playing", {}).get("title") == "more-0",
        timeout=5)
    # A restarted player with no server shows the last track at once (the saved snapshot).
    lms.stop()
    player.stop()
    again = start_player("-s", f"127.0.0.1:{lms.port}", "-m", MAC, "-o", "null", "--control", f"127.0.0.1:{port}",
                         "--cache-dir", str(tmp_path / "cache"), name="again")
    shown = None
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and shown is None:
        result = ctl(port, "status", "--json")
        if result.returncode == 0:
            shown = json.loads(result.stdout).get("now_playing")
        time.sleep(0.1)
    assert shown and shown["title"] == "more-0", again.log()
