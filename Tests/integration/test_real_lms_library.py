"""The offline library on the real LMS: an album and a saved playlist are pinned while the server runs;
the server stops and the player restarts without it; from the page in headless Chromium (a phone's
viewport) the album is found by search and played, and a track of the playlist is queued after it. What
the player wrote equals the reference decode of exactly that sequence, whole and gapless, to the last
frame."""

from __future__ import annotations

import time

import pytest
from harness.lms import free_port
from harness.media import Capture
from test_real_lms_offline import Queue
from test_real_lms_pins import MAC, ctl, pins, saved_playlist, start, wait_until


@pytest.mark.slow(seconds=120)
@pytest.mark.timeout(300)
def test_pinned_music_found_played_and_queued_from_the_page_with_the_server_gone(real_lms, start_player, tmp_path):
    from selenium.webdriver.common.by import By
    from test_page_browser import chromium
    from test_page_browser import wait as wait_in_page

    library = real_lms.library
    album = library.tracks("FLAC 16-44")
    queued = library.tracks("MP3 CBR")[1]
    saved_playlist(real_lms, "Car", [queued.path, library.tracks("MP3 CBR")[2].path])
    port = free_port()
    player = start(real_lms, start_player, tmp_path, port)
    album_id = real_lms.rpc("", ["titles", 0, 1, f"track_id:{real_lms.track_id(album[0].path)}", "tags:e"])
    assert ctl(port, "pin", "album", str(album_id["titles_loop"][0]["album_id"])).returncode == 0
    assert ctl(port, "pin", "playlist", "Car").returncode == 0
    wait_until(lambda: all(pin["complete"] for pin in pins(port)), 60, "the pins downloaded")
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

        find("16-44")
        # The search's answer: one album, and its tracks.
        row = wait_in_page(lambda: [r for r in driver.find_elements(By.CSS_SELECTOR, "#library .album")
                                    if "FLAC 16-44" in r.text and len(driver.find_elements(
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

    whole = len(sequence.reference)
    capture.wait_for_length(whole, timeout=sequence.seconds_for(whole) + 30)
    time.sleep(2)  # nothing may follow the last track
    player.stop()
    capture.thread.join(5)
    got = capture.bytes()
    assert len(got) == whole, f"{len(got)} bytes, expected {whole}\n{player.log()}"
    assert got == sequence.reference, "the capture differs from the album and the queued track's decode"
