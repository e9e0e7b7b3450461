"""LMS's own web interface (its Default skin) driving slimplay, in a real headless Chromium.

This is how most users meet the player: they pick it in the skin's player menu, play an album from
the library browser, and use the transport buttons, the progress bar, the volume buttons and the
power button. Each action is checked where it matters: in what slimplay outputs (`-o -`, read at
real time, located in the album's reference decode) and in LMS's status of the player.
"""

from __future__ import annotations

import contextlib
import time
import urllib.parse

import numpy as np
import pytest
from harness.media import Capture
from harness.real_lms import LMSError
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from harness.sync_measure import Locator
from test_page_browser import chromium, wait

pytestmark = pytest.mark.real_lms

MAC = "02:11:22:33:44:9c"
NAME = "slimplay-webui"
ALBUM = "Long FLAC"
RATE = 44100
BYTES_PER_SECOND = RATE * 4  # `-a 16`: 16-bit stereo


@pytest.fixture
def browser():
    driver = chromium(["--window-size=1400,1000"])
    yield driver
    driver.quit()


class Output:
    """What slimplay has played, located in the album: the left channel of its last 0.1 s found in the
    reference decode of the whole album."""

    def __init__(self, capture: Capture, tracks):  # noqa: ANN001
        self.capture = capture
        self.references = [np.frombuffer(track.reference(), dtype="<i2").reshape(-1, 2)[:, 0] for track in tracks]
        self.starts = np.cumsum([0] + [len(r) for r in self.references])
        self.locator = Locator(np.concatenate(self.references))

    def frames(self) -> int:
        return len(self.capture.bytes()) // 4

    def last(self, frames: int = 4096, back: int = 0) -> np.ndarray:
        """The left channel's `frames` before the last `back` frames output."""
        data = np.frombuffer(self.capture.bytes(), dtype="<i2")
        data = data[:len(data) - len(data) % 2].reshape(-1, 2)[:, 0]
        return data[:len(data) - back][-frames:]

    def position(self, back_seconds: float = 0) -> tuple[int, float] | None:
        """(track index, seconds into it) of what was output last (`back_seconds` before the end: a
        pause ends in LMS's fade to silence), or None when not in the album."""
        place = self.locator.locate(self.last(back=int(back_seconds * RATE)))
        if place is None:
            return None
        index = int(np.searchsorted(self.starts, place, side="right")) - 1
        return index, (place - self.starts[index]) / RATE

    def gain(self) -> float | None:
        """The output's level against the reference at the same place (1.0 at volume 100)."""
        window = self.last()
        place = self.locator.locate(window)
        if place is None:
            return None
        reference = self.locator.reference[place:place + len(window)]
        return float(np.sqrt((window.astype(np.float64) ** 2).sum() / (reference ** 2).sum()))

    def grows(self, seconds: float = 1.0) -> bool:
        before = self.frames()
        time.sleep(seconds)
        return self.frames() - before > seconds * RATE / 4


def click_button(driver, control_id: str) -> None:  # noqa: ANN001
    """Clicks one of the skin's player controls (an Ext button inside the element with that id)."""
    driver.switch_to.default_content()
    button = wait(lambda: driver.find_element(By.CSS_SELECTOR, f"#{control_id} button"), 10)
    ActionChains(driver).move_to_element(button).click().perform()


@pytest.mark.lms_versions("8.3.0", "7.9.1")
def test_the_default_skin_controls_slimplay(real_lms, start_player, browser, tmp_path):
    tracks = real_lms.library.tracks(ALBUM)
    with contextlib.suppress(LMSError, OSError):
        real_lms.rpc(MAC, ["playlist", "clear"])
    player = start_player("-s", real_lms.addr, "-m", MAC, "-n", NAME, "-o", "-", "-a", "16",
                          "--lms-port", str(real_lms.http_port), "--cache-dir", str(tmp_path / "cache"),
                          "--control", "off", capture=True)
    output = Output(Capture(player.process.stdout, bytes_per_second=BYTES_PER_SECOND), tracks)
    real_lms.wait_player(MAC, timeout=20)
    real_lms.rpc(MAC, ["power", 1])
    real_lms.set_volume(MAC, 100)
    done: list[str] = []

    # Pick the player in the skin's player menu.
    browser.get(f"http://{real_lms.addr}:{real_lms.http_port}/")
    # The skin points the browser frame at a picked player only once that frame shows a page of the
    # server (Main.js `onPlayerSelected`): picked while the frame still loads, the pick never reaches
    # it (seen on a busy machine). A user picks from a page that has loaded.
    browser.switch_to.frame("browser")
    assert wait(lambda: browser.execute_script("return document.location.protocol").startswith("http")
                and browser.execute_script("return document.readyState") == "complete", 20), \
        "the browser frame did not load"
    browser.switch_to.default_content()
    chooser = wait(lambda: browser.find_element(By.CSS_SELECTOR, "#playerChooser button"), 20)
    chooser.click()
    item = wait(lambda: next(e for e in browser.find_elements(By.CSS_SELECTOR, ".x-menu-item")
                             if e.text.strip() == NAME and e.is_displayed()), 10)
    item.click()
    assert wait(lambda: NAME in browser.find_element(By.ID, "playerChooser").text, 10), "player not picked"
    done.append("picked the player")

    # Play the album from the library browser: My Music > Albums > the album's play button.
    browser.switch_to.frame("browser")
    # Picking the player reloads the browser frame for it: work in the page that names the player
    # (a list asked for in the page before was once replaced by that reload).
    player_page = f"player={urllib.parse.quote(MAC)}"
    if not wait(lambda: player_page in browser.execute_script("return document.location.href"), 10):
        # The skin reloads the frame only when the pick changes its player (Main.js onPlayerSelected); one
        # it had chosen by itself by then (the only player it knew) is picked without a reload, and the frame
        # keeps the page it loaded before it knew of any. The frame goes where that reload would take it.
        print("the frame was not reloaded for the pick:", browser.execute_script("return document.location.href"))
        browser.execute_script(f"document.location.href = '/home.html?{player_page}'")
    assert wait(lambda: player_page in browser.execute_script("return document.location.href")
                and browser.execute_script("return document.readyState") == "complete", 15), \
        browser.execute_script("return document.location.href")

    def album_row():  # noqa: ANN202
        """The album's row once the list is there. A loaded page without it gets the next step
        clicked: Albums in the expanded My Music menu, else My Music itself."""
        if browser.execute_script("return document.readyState") != "complete":
            return None
        row = next((e for e in browser.find_elements(By.CSS_SELECTOR, ".browsedbListItem") if ALBUM in e.text), None)
        if row is None:
            albums = [e for e in browser.find_elements(By.LINK_TEXT, "Albums") if e.is_displayed()]
            if albums:
                albums[0].click()
            elif not browser.execute_script("return window.myMusicOpened === true"):
                # Once per page: a second click would fold the menu up again.
                browser.find_element(By.ID, "MY_MUSIC").click()
                browser.execute_script("window.myMusicOpened = true")
        return row

    row = wait(album_row, 30, step=1.0)
    assert row is not None, browser.find_element(By.TAG_NAME, "body").text[:2000]
    # The row's buttons show while the pointer is over it.
    ActionChains(browser).move_to_element(row.find_element(By.CSS_SELECTOR, ".browseItemLink")).perform()
    play = row.find_element(By.CSS_SELECTOR, ".browsedbControls img[title='Play']")
    assert wait(play.is_displayed, 5), "the album's play button did not show"
    ActionChains(browser).move_to_element(play).click().perform()
    assert wait(lambda: real_lms.status(MAC).get("mode") == "play", 15), player.log()
    assert wait(lambda: output.frames() > 3 * RATE, 15), player.log()
    assert output.position() is not None and output.position()[0] == 0, output.position()
    assert real_lms.status(MAC).get("playlist_tracks") in (len(tracks), str(len(tracks)))
    done.append("played the album")

    # Pause and resume with the play/pause button.
    click_button(browser, "ctrlTogglePlay")
    assert wait(lambda: real_lms.status(MAC).get("mode") == "pause", 10)
    time.sleep(1.0)
    assert not output.grows(1.5), "output goes on while paused"
    paused_at = output.position(back_seconds=0.5)  # before LMS's fade-out
    click_button(browser, "ctrlTogglePlay")
    assert wait(lambda: real_lms.status(MAC).get("mode") == "play", 10)
    assert output.grows(1.5), "output did not resume"
    resumed = output.position()
    assert resumed[0] == paused_at[0] and resumed[1] > paused_at[1], (paused_at, resumed)
    done.append("paused and resumed")

    # Skip to the next track.
    click_button(browser, "ctrlNext")
    assert wait(lambda: real_lms.current_index(MAC) == 1, 10)
    assert wait(lambda: (output.position() or (None,))[0] == 1, 15), output.position()
    done.append("skipped to the next track")

    # Seek: a click at 70 % of the progress bar.
    browser.switch_to.default_content()
    bar = browser.find_element(By.ID, "ctrlProgress")
    ActionChains(browser).move_to_element_with_offset(bar, int(bar.size["width"] * 0.2), 0).click().perform()
    target = tracks[1].seconds * 0.7
    assert wait(lambda: float(real_lms.status(MAC).get("time") or 0) >= target - 3, 10), real_lms.status(MAC)
    assert wait(lambda: (lambda p: p is not None and p[0] == 1 and p[1] >= target - 3)(output.position()), 15), \
        output.position()
    done.append("seeked on the progress bar")

    # Volume down twice: LMS's volume falls and the samples are scaled by it.
    click_button(browser, "ctrlVolumeDown")
    click_button(browser, "ctrlVolumeDown")
    assert wait(lambda: int(float(real_lms.status(MAC).get("mixer volume") or 100)) < 100, 10)
    time.sleep(1.5)
    gain = wait(output.gain, 5)
    volume = int(float(real_lms.status(MAC)["mixer volume"]))
    print(f"volume {volume}: output level {gain:.3f} of the reference")
    assert gain is not None and 0.05 < gain < 0.95, gain
    done.append(f"volume down to {volume}")

    # Power off, then on.
    click_button(browser, "ctrlPower")
    assert wait(lambda: int(real_lms.status(MAC).get("power", 1)) == 0, 10)
    time.sleep(1.0)
    assert not output.grows(1.5), "output goes on while powered off"
    click_button(browser, "ctrlPower")
    assert wait(lambda: int(real_lms.status(MAC).get("power", 0)) == 1, 10)
    done.append("powered off and on")
    print("web UI actions that took effect:", "; ".join(done))
    real_lms.rpc(MAC, ["playlist", "clear"])
