"""The control page in a real headless Chromium (Debian's chromium and chromium-driver)."""

import os
import shutil
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from harness.lms import free_port
from test_offline import (BYTES_PER_SECOND, MAC, assert_pauses_and_resumes, cached_count, queue_media, start,
                          wait_for_log)

ARTIFACTS = Path(os.environ.get("SLIMPLAY_ARTIFACTS", Path(__file__).resolve().parents[2] / ".build" / "test-artifacts"))


def chromium(extra=()):
    assert shutil.which("chromium") and shutil.which("chromedriver"), "chromium and chromium-driver are needed"
    options = Options()
    options.binary_location = shutil.which("chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=430,932", *extra):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


def wait(predicate, timeout, step=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except Exception:  # noqa: BLE001 - an element may be mid-update
            value = None
        if value:
            return value
        time.sleep(step)
    return predicate()


def test_the_page_in_chromium_online_and_offline(lms_factory, start_player, media, tmp_path):
    lms = lms_factory(volume=100)
    files = queue_media(media, "browser", seconds=(24, 8))
    lms.load(MAC, files)
    port = free_port()
    player, capture = start(lms, start_player, tmp_path, "--control", f"127.0.0.1:{port}")
    lms.stream_rate = 120_000
    lms.play(MAC, 0)
    assert lms.wait_for(lambda: cached_count(tmp_path) == 2, timeout=20), player.log()
    driver = chromium()
    try:
        driver.get(f"http://127.0.0.1:{port}/")
        title = lambda: driver.find_element(By.ID, "title").text  # noqa: E731
        assert wait(lambda: title() == "browser-0", 10), title()
        assert "Test Artist" in driver.find_element(By.ID, "artist").text
        art_width = "return document.getElementById('art').naturalWidth"
        assert wait(lambda: driver.execute_script(art_width) > 0, 10), "the cover did not load"
        # Pause from the page: the server pauses and so does the output.
        driver.find_element(By.ID, "toggle").click()
        assert lms.wait_for(lambda: lms.status_of(MAC)["mode"] == "pause", timeout=3), player.log()
        time.sleep(0.5)
        paused_at = len(capture.bytes())
        time.sleep(1.0)
        assert len(capture.bytes()) - paused_at <= BYTES_PER_SECOND // 10
        driver.find_element(By.ID, "toggle").click()
        assert lms.wait_for(lambda: lms.status_of(MAC)["mode"] == "play", timeout=3)
        # The server goes away: an unmistakable banner, and the controls keep working.
        time.sleep(1.0)
        lms.stop()
        assert wait_for_log(player, "continues from the cache", timeout=10), player.log()
        banner = lambda: driver.find_element(By.ID, "banner")  # noqa: E731
        assert wait(lambda: banner().is_displayed() and "Offline" in banner().text, 5), banner().text
        toggle = lambda: driver.find_element(By.ID, "toggle").click()  # noqa: E731
        assert_pauses_and_resumes(capture, toggle, toggle, settle=0.7)
        assert title() == "browser-0"
        assert "cached" in driver.find_element(By.ID, "queue").text
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "control-page-offline.png"
        driver.save_screenshot(str(shot))
        print(f"screenshot: {shot}")
        assert shot.stat().st_size > 1000
    finally:
        driver.quit()
