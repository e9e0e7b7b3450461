"""The offline library on the real LMS: an album of ten tracks and a saved playlist are pinned while the
server runs; the server stops and the player restarts without it; from the page in headless Chromium (a
phone's viewport) the album is found by search and played, and a track of the playlist is queued after
it. The server then returns: the listener's queue goes on it and LMS shows the heard track and time. What the
player wrote equals the reference decode of exactly that sequence, whole and gapless, to the last frame:
nothing dropped or repeated at the return."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest
from harness.lms import free_port
from harness.media import Capture
from test_real_lms_offline import Queue
from test_real_lms_pins import MAC, ctl, pins, saved_playlist, start, wait_until

# Alone, after the others: each stops and starts its server and drives a browser while a capture runs in
# real time, and beside the sync groups' rows that load made LMS answer late and correct a group by
# hundreds of milliseconds (two whole runs).
pytestmark = pytest.mark.serial


@pytest.mark.slow(seconds=120)
@pytest.mark.timeout(300)
def test_pinned_music_found_played_and_queued_from_the_page_with_the_server_gone(real_lms, start_player, tmp_path):
    from selenium.webdriver.common.by import By
    from test_page_browser import chromium
    from test_page_browser import wait as wait_in_page

    library = real_lms.library
    album = library.tracks("FLAC Ten")
    listed = [library.tracks("MP3 CBR")[1], library.tracks("FLAC 24-96")[0]]
    queued = listed[0]
    playlist_id = saved_playlist(real_lms, "Road", [track.path for track in listed])
    port = free_port()
    player = start(real_lms, start_player, tmp_path, port)
    real_lms.set_volume(MAC, 100)  # bit-exact samples once the server is back and sets the volume
    album_id = real_lms.rpc("", ["titles", 0, 1, f"track_id:{real_lms.track_id(album[0].path)}", "tags:e"])
    assert ctl(port, "pin", "album", str(album_id["titles_loop"][0]["album_id"])).returncode == 0
    assert ctl(port, "pin", "playlist", str(playlist_id)).returncode == 0
    wait_until(lambda: all(pin["complete"] for pin in pins(port)), 60, "the pins downloaded")
    assert [(pin["kind"], pin["tracks"]) for pin in pins(port)] == [("album", 10), ("playlist", 2)]
    player.stop()

    real_lms.stop()
    sequence = Queue([*album, queued])
    player = start_player("-s", real_lms.addr, "-m", MAC, "-o", "-", "-a", "16", "-n", "library-test", "--control",
                          f"127.0.0.1:{port}", "--cache-dir", str(tmp_path / "cache"), "-d", "cache=info",
                          name="offline", capture=True)
    capture = Capture(player.process.stdout, seconds_for=sequence.seconds_for)
    driver = chromium()
    try:
        driver.get(f"http://127.0.0.1:{port}/")
        search = driver.find_element(By.ID, "search")

        def find(text: str) -> None:
            search.clear()
            search.send_keys(text)

        find("flac ten")
        # The search's answer: one album, and its tracks.
        row = wait_in_page(lambda: [r for r in driver.find_elements(By.CSS_SELECTOR, "#library .album")
                                    if "FLAC Ten" in r.text and len(driver.find_elements(
                                        By.CSS_SELECTOR, "#library .album")) == 1][0], 10)
        row.click()
        play = wait_in_page(lambda: [b for b in driver.find_elements(By.CSS_SELECTOR, "#library button")
                                     if b.text == "Play album"][0], 10)
        play.click()
        wait_in_page(lambda: driver.find_element(By.ID, "title").text == album[0].title, 15)
        find(queued.title.split(" (")[0])
        item = wait_in_page(lambda: [li for li in driver.find_elements(By.CSS_SELECTOR, "#library li")
                                     if queued.title in li.text][0], 10)
        [b for b in item.find_elements(By.TAG_NAME, "button") if b.text == "Add"][0].click()
        queue_text = lambda: driver.find_element(By.ID, "queue").text  # noqa: E731
        assert wait_in_page(lambda: queued.title in queue_text(), 10), queue_text()
        assert "Offline" in driver.find_element(By.ID, "banner").text
        driver.save_screenshot(str(tmp_path / "library.png"))
    finally:
        driver.quit()

    # The server returns (--return-to-server auto): the listener's queue goes on it, LMS is brought to
    # the heard track and time, and its stream takes over at the next track.
    real_lms.start()
    real_lms.wait_player(MAC, timeout=30)
    assert player.wait_for_log("putting the listener's queue (11 tracks) on the server", 30), player.log()
    status, shown, index, seconds = wait_for_lms_at_the_heard_position(real_lms, player, capture, sequence)
    print(f"LMS at track {shown[0] + 1} {shown[1]:.3f} s, heard {seconds:.3f} s")
    ids = [int(entry["id"]) for entry in status.get("playlist_loop", [])]
    assert ids == [real_lms.track_id(track.path) for track in sequence.tracks][index:index + len(ids)]
    assert int(status.get("playlist_tracks")) == len(sequence.tracks)

    assert_the_whole_sequence(player, capture, sequence)


@pytest.mark.slow(seconds=110)
@pytest.mark.timeout(300)
def test_with_ask_the_listener_stays_offline_then_returns_and_lms_takes_the_listeners_queue(
        real_lms, start_player, tmp_path):
    """`--return-to-server ask`: with the server back, the page offers the choice; staying offline sends
    no HELO (LMS does not see the player) while the music plays on; returning puts the listener's queue
    on LMS, which shows the heard track within 250 ms, and nothing is dropped or repeated."""
    from selenium.webdriver.common.by import By
    from test_page_browser import chromium
    from test_page_browser import wait as wait_in_page

    album = real_lms.library.tracks("FLAC 16-44")
    port = free_port()
    player = start(real_lms, start_player, tmp_path, port)
    real_lms.set_volume(MAC, 100)  # bit-exact samples once the server is back and sets the volume
    album_id = real_lms.rpc("", ["titles", 0, 1, f"track_id:{real_lms.track_id(album[0].path)}", "tags:e"])
    assert ctl(port, "pin", "album", str(album_id["titles_loop"][0]["album_id"])).returncode == 0
    wait_until(lambda: all(pin["complete"] for pin in pins(port)), 60, "the album downloaded")
    player.stop()

    real_lms.stop()
    sequence = Queue(album[:4])  # the album's first four tracks, 30 s
    player = start_player("-s", real_lms.addr, "-m", MAC, "-o", "-", "-a", "16", "-n", "ask-test", "--control",
                          f"127.0.0.1:{port}", "--cache-dir", str(tmp_path / "cache"), "--lms-port",
                          str(real_lms.http_port), "--return-to-server", "ask", "-d", "cache=info",
                          name="offline", capture=True)
    capture = Capture(player.process.stdout, seconds_for=sequence.seconds_for)
    def album_keys() -> list[str] | None:
        url = f"http://127.0.0.1:{port}/api/library?album=a{album_id['titles_loop'][0]['album_id']}"
        try:
            with urllib.request.urlopen(url, timeout=5) as reply:
                return [track["key"] for track in json.loads(reply.read())["tracks"]][:4]
        except (OSError, ValueError, KeyError):
            return None

    keys = wait_until(album_keys, 10, "the library lists the album")
    wait_until(lambda: api_post(port, "/api/queue/play", {"tracks": keys}) == 200, 10, "the four tracks play")
    driver = chromium()
    try:
        driver.get(f"http://127.0.0.1:{port}/")
        wait_in_page(lambda: driver.find_element(By.ID, "title").text == album[0].title, 15)
        real_lms.start()
        choice = driver.find_element(By.ID, "return")
        assert wait_in_page(lambda: choice.is_displayed(), 30), "the page did not offer the choice"
        assert "Server is back" in choice.text
        assert not real_lms.connected(MAC), "a HELO went out before the listener chose"
        driver.find_element(By.ID, "stay").click()
        assert wait_in_page(lambda: "Staying offline" in choice.text, 10), choice.text
        stayed_at = len(capture.bytes())
        time.sleep(5)
        assert len(capture.bytes()) > stayed_at + 4 * sequence.bytes_per_second, "the music stopped"
        assert not real_lms.connected(MAC), "staying offline, the player reached the server"
        driver.find_element(By.ID, "return-now").click()
        assert wait_in_page(lambda: not choice.is_displayed(), 30), "the choice stayed on the page"
    finally:
        driver.quit()
    real_lms.wait_player(MAC, timeout=30)
    assert player.wait_for_log("putting the listener's queue (4 tracks) on the server", 30), player.log()
    status, shown, index, seconds = wait_for_lms_at_the_heard_position(real_lms, player, capture, sequence)
    print(f"LMS at track {shown[0] + 1} {shown[1]:.3f} s, heard {seconds:.3f} s")
    assert_the_whole_sequence(player, capture, sequence)


def wait_for_lms_at_the_heard_position(real_lms, player, capture, sequence: Queue, mac: str = MAC):  # noqa: ANN001
    """Until LMS plays the entry heard, its time within 0.25 s of what the capture has: its status, what
    it shows, and the heard entry and seconds."""
    deadline = time.monotonic() + 15
    while True:
        status = real_lms.status(mac)
        index, seconds = sequence.position(len(capture.bytes()))
        shown = (int(status.get("playlist_cur_index") or -1), float(status.get("time") or 0))
        if status.get("mode") == "play" and shown[0] == index and abs(shown[1] - seconds) <= 0.25:
            return status, shown, index, seconds
        assert time.monotonic() < deadline, f"LMS shows {shown}, heard {index} {seconds:.3f} s\n{player.log()}"
        time.sleep(0.1)


def assert_the_whole_sequence(player, capture, sequence: Queue) -> None:  # noqa: ANN001
    """The capture, once the player has written the sequence and 2 s more have passed (nothing may follow
    its last track), is the sequence's reference decode, to the last frame."""
    whole = len(sequence.reference)
    capture.wait_for_length(whole, timeout=sequence.seconds_for(whole) + 30)
    time.sleep(2)
    player.stop()
    capture.thread.join(5)
    got = capture.bytes()
    assert len(got) == whole, f"{len(got)} bytes, expected {whole}\n{player.log()}"
    assert got == sequence.reference, "the capture differs from the sequence's reference decode"


def api_post(port: int, path: str, body: dict) -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST", data=json.dumps(body).encode())
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status
    except (urllib.error.URLError, OSError) as error:
        return getattr(error, "code", 0)
