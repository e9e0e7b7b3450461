"""Pins on the real LMS: an album and a saved playlist pinned with `slimplay ctl` are downloaded whole,
byte for byte the server's files, kept out of the cache's eviction (the cache here is capped at 1 MB, far
below them), counted against `--pin-size`, and still there after the player restarts; unpinned, their
files are ordinary cache entries again and leave a cache that is over its cap."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest
from harness.lms import free_port
from harness.player import binary_path, cache_entries
from harness.real_lms import LMSError

MAC = "02:11:22:33:44:a1"


def ctl(port: int, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([binary_path(), "ctl", *args, "--api", f"127.0.0.1:{port}"], capture_output=True,
                          text=True, timeout=20)


def pins(port: int) -> list[dict]:
    result = ctl(port, "pins", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["pins"]


def wait_until(condition, timeout: float, what: str):  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(0.25)
    pytest.fail(f"not within {timeout} s: {what}")


def cached_files(cache: Path) -> dict[str, bytes]:
    """What the cache holds, by the source file's path (from each entry's track record)."""
    files = {}
    for entry in cache_entries(cache):
        url = entry.get("track", {}).get("url", entry.get("url", ""))
        with contextlib.suppress(OSError):
            files[urllib.parse.unquote(urllib.parse.urlparse(url).path)] = (cache / f"{entry['key']}.audio").read_bytes()
    return files


def saved_playlist(real_lms, name: str, paths: list[Path]) -> int:
    """A saved playlist on the server. LMS saves playlists only into its playlist folder, which it takes
    in at start: the folder is set and the server restarted first, once a session."""
    folder = real_lms.state.parent / (real_lms.state.name + "-playlists")
    if not folder.exists() or real_lms.rpc("", ["pref", "playlistdir", "?"]).get("_p2") != str(folder):
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(["chown", "squeezeboxserver", str(folder)], check=True)
        real_lms.rpc("", ["pref", "playlistdir", str(folder)])
        real_lms.restart()
    for playlist in real_lms.rpc("", ["playlists", 0, 1000]).get("playlists_loop", []):
        if playlist.get("playlist") == name:
            real_lms.rpc("", ["playlists", "delete", f"playlist_id:{playlist['id']}"])
    playlist_id = int(real_lms.rpc("", ["playlists", "new", f"name:{name}"])["playlist_id"])
    for path in paths:
        real_lms.rpc("", ["playlists", "edit", "cmd:add", f"playlist_id:{playlist_id}", f"url:{path.as_uri()}"])
    tracks = real_lms.rpc("", ["playlists", "tracks", 0, 100, f"playlist_id:{playlist_id}", "tags:u"])
    assert [urllib.parse.unquote(urllib.parse.urlparse(t["url"]).path) for t in
            tracks.get("playlisttracks_loop", [])] == [str(p) for p in paths]
    return playlist_id


def album_id(real_lms, path: Path) -> int:
    track = real_lms.rpc("", ["titles", 0, 1, f"track_id:{real_lms.track_id(path)}", "tags:e"])["titles_loop"][0]
    return int(track["album_id"])


def start(real_lms, start_player, tmp_path: Path, port: int, *extra: str):
    with contextlib.suppress(LMSError, OSError):
        real_lms.rpc(MAC, ["playlist", "clear"])
    player = start_player("-s", real_lms.addr, "-m", MAC, "-o", "null", "-n", "pins-test", "--control",
                          f"127.0.0.1:{port}", "--cache-dir", str(tmp_path / "cache"), "--lms-port",
                          str(real_lms.http_port), "-d", "cache=info", *extra)
    real_lms.wait_player(MAC, timeout=20)
    return player


@pytest.mark.lms_versions("8.3.0", "7.9.1")
def test_a_pinned_album_and_playlist_are_kept_whole_through_a_restart_and_released_when_unpinned(
        real_lms, start_player, tmp_path):
    library = real_lms.library
    album = library.tracks("FLAC 16-44")
    listed = [library.tracks("MP3 CBR")[1].path, library.tracks("FLAC 24-96")[0].path]
    playlist_id = saved_playlist(real_lms, "Road", listed)
    port = free_port()
    cache = tmp_path / "cache"
    player = start(real_lms, start_player, tmp_path, port, "--cache-size", "1", "--pin-size", "200")

    album_number = album_id(real_lms, album[0].path)
    pinned = ctl(port, "pin", "album", str(album_number))
    assert pinned.returncode == 0, pinned.stderr
    assert pinned.stdout.startswith(f"album {album_number} 'FLAC 16-44': "), pinned.stdout
    by_name = ctl(port, "pin", "playlist", "road")
    assert by_name.returncode == 0, by_name.stderr
    assert f"playlist {playlist_id} 'Road'" in by_name.stdout

    wait_until(lambda: len(pins(port)) == 2 and all(pin["complete"] for pin in pins(port)), 60,
               f"both pins downloaded: {pins(port)}")
    files = cached_files(cache)
    wanted = [track.path for track in album] + listed
    for path in wanted:
        assert files.get(str(path)) == path.read_bytes(), f"{path.name}: not the server's file"
    total = sum(path.stat().st_size for path in wanted)
    assert total > 4 << 20  # four times the cache's own cap: kept because pinned
    listing = ctl(port, "pins")
    assert listing.returncode == 0 and "playlist" in listing.stdout and f"{len(album)}/{len(album)} tracks" in listing.stdout

    # Restarted: the pins and their files are still there; nothing is fetched again.
    player.stop()
    player = start(real_lms, start_player, tmp_path, port, "--cache-size", "1", "--pin-size", "200")
    assert [(pin["kind"], pin["complete"]) for pin in pins(port)] == [("album", True), ("playlist", True)]
    time.sleep(2)
    assert "download: track" not in player.log()
    assert set(cached_files(cache)) >= {str(path) for path in wanted}

    # Unpinned, the album's files are ordinary cache entries: what exceeds the cache's 1 MB leaves, the
    # least recently used first.
    unpinned = ctl(port, "unpin", "album", str(album_number))
    assert unpinned.returncode == 0, unpinned.stderr
    assert [pin["kind"] for pin in pins(port)] == ["playlist"]
    left = cached_files(cache)
    album_left = [track for track in album if str(track.path) in left]
    assert 0 < len(album) - len(album_left)
    assert sum(track.path.stat().st_size for track in album_left) <= 1 << 20
    assert all(left.get(str(path)) == path.read_bytes() for path in listed)


def test_the_pin_cap_holds_and_says_what_did_not_fit(real_lms, start_player, tmp_path):
    album = real_lms.library.tracks("FLAC 16-44")
    sizes = [track.path.stat().st_size for track in album]
    cap_mb = (sizes[0] + sizes[1]) // (1 << 20) + 1  # room for the first two tracks, not for all four
    assert sum(sizes) > cap_mb << 20
    port = free_port()
    player = start(real_lms, start_player, tmp_path, port, "--pin-size", str(cap_mb))
    assert ctl(port, "pin", "album", str(album_id(real_lms, album[0].path))).returncode == 0
    assert player.wait_for_log("under the pin cap (--pin-size)", 60), player.log()
    progress = pins(port)[0]
    assert not progress["complete"]
    assert 0 < progress["cached_bytes"] <= cap_mb << 20


def test_pinning_needs_the_server_and_says_so(real_lms, start_player, tmp_path):
    port = free_port()
    start(real_lms, start_player, tmp_path, port)
    # Nothing plays: there is no album to take.
    refused = ctl(port, "pin", "album")
    assert refused.returncode != 0 and "nothing playing" in refused.stderr
    unknown = ctl(port, "pin", "playlist", "No such list")
    assert unknown.returncode != 0 and "no playlist 'No such list'" in unknown.stderr
    with real_lms.partition():
        wait_until(lambda: "the server is away" in ctl(port, "pin", "album", "1").stderr, 30,
                   "pinning refused while the server is away")


def test_the_page_pins_the_album_heard_and_a_queue_entry_then_unpins(real_lms, start_player, tmp_path):
    from selenium.webdriver.common.by import By
    from test_page_browser import chromium
    from test_page_browser import wait as wait_in_page

    album = real_lms.library.tracks("FLAC 16-44")
    port = free_port()
    start(real_lms, start_player, tmp_path, port)
    real_lms.load_tracks(MAC, [track.path for track in album[:3]])
    real_lms.play(MAC)
    driver = chromium()
    try:
        driver.get(f"http://127.0.0.1:{port}/")
        pins_text = lambda: driver.find_element(By.ID, "pins").text  # noqa: E731
        pin_album = driver.find_element(By.ID, "pin-album")
        assert wait_in_page(lambda: pin_album.is_displayed(), 20), "no pin button for the album heard"
        pin_album.click()
        assert wait_in_page(lambda: f"FLAC 16-44 (album) {len(album)}/{len(album)} tracks" in pins_text(), 60), pins_text()
        assert wait_in_page(lambda: not pin_album.is_displayed(), 5), "the album is pinned: its button goes"
        # The queue's second entry, pinned on its own.
        second = lambda: driver.find_elements(By.CSS_SELECTOR, "#queue li")[1]  # noqa: E731
        wait_in_page(lambda: second().find_element(By.TAG_NAME, "button"), 10).click()
        assert wait_in_page(lambda: f"{album[1].title} (track) 1/1 tracks" in pins_text(), 30), pins_text()
        unpin = [item for item in driver.find_elements(By.CSS_SELECTOR, "#pins li") if "(album)" in item.text][0]
        unpin.find_element(By.TAG_NAME, "button").click()
        assert wait_in_page(lambda: "(album)" not in pins_text() and "(track)" in pins_text(), 10), pins_text()
        driver.save_screenshot(str(tmp_path / "pins.png"))
    finally:
        driver.quit()
    assert [(pin["kind"], pin["title"]) for pin in pins(port)] == [("track", album[1].title)]
