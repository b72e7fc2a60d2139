"""Private pixels are masked in every stored screenshot, across frames (headless Chromium with the unpacked
extension, against the real platform; docs/recorder-privacy.md).

The top page (127.0.0.1) has a password field and a ``data-private`` box beside a frame of another site
(localhost, out of process), which has a ``data-private`` box of its own. Actions are taken inside the frame and on
the top page; every screenshot stored for the recording (the actions' own, their before and after frames) must
show each private area black, wherever it is, and the other areas as they are.
"""

import io
import time

import pytest
from PIL import Image
from selenium.webdriver.common.by import By

from tests.support.browser import make_driver
from tests.support.recorder_browser import (
    ALLOWLIST,
    ANIMATE,
    PROJECT,
    VIEWPORT,
    Browser,
    browser_turns,
    describe,
    first_video_run,
    frame_area,
    frame_content_offset,
    inset,
    last_video_frame,
    pause,
    screenshots_of,
    start_recording,
    stop_and_collect,
    wait_for_url,
)
from tests.support.recorder_harness import (
    EXTENSION_DIR,
    BrowserCDP,
    Recorder,
    api,
    blob_bytes,
    extension_browser,
    live_platform,
)
from tests.support.waits import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.processes]

GREEN = (0x80, 0xE0, 0x80)  # the frame's background
YELLOW = (0xF0, 0xC0, 0x40)  # the top page's plain field


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("recorder-privacy-var"), "recprivacy", "navigator", PROJECT) as running:
        yield running


@pytest.fixture(scope="module")
def browser(live):
    with extension_browser(live, PROJECT) as (driver, cdp, recorder):
        yield Browser(driver, cdp, recorder)


@pytest.fixture(scope="module")
def recorded(browser, live, servers):
    """Click and type inside the cross-site frame, then click on the top page; the stored turns and the page's
    areas (tab-viewport CSS px)."""
    base, _ = servers
    driver = browser.driver
    driver.get(base + "/private-frames.html")
    wait_for_url(driver, "/private-frames.html")
    frame = driver.find_element(By.ID, "xsite")
    assert "//localhost:" in frame.get_attribute("src")
    areas = {name: driver.find_element(By.ID, name).rect for name in ("plain", "password", "secret-box")}
    offset = frame_content_offset(driver, frame)
    driver.switch_to.frame(frame)
    for name in ("inner-secret", "inner-button"):
        inner = driver.find_element(By.ID, name).rect
        areas[name] = {**inner, "x": inner["x"] + offset["x"], "y": inner["y"] + offset["y"]}
    # A patch of the frame's own background, below its button and left of its secret.
    areas["frame-background"] = {"x": offset["x"] + 20, "y": offset["y"] + 150, "width": 200, "height": 100}
    driver.switch_to.default_content()
    time.sleep(1.0)  # the content scripts of both frames have told each other their frame ids

    name = start_recording(browser, live)
    driver.switch_to.frame(frame)
    driver.find_element(By.ID, "inner-button").click()
    pause()
    driver.find_element(By.ID, "inner-input").click()
    driver.find_element(By.ID, "inner-input").send_keys("typed in the frame")
    pause()
    driver.switch_to.default_content()
    driver.find_element(By.ID, "plain").click()  # ends the typing in the frame (focusout), an action on the top page
    pause(1.0)
    turns = stop_and_collect(browser, live, name)
    print(f"\n{name}:\n{describe(turns)}\nscreenshots: {browser.recorder.status().get('screenshots')}")
    return turns, areas


def test_actions_in_the_cross_site_frame_and_on_the_top_page_have_screenshots(recorded):
    turns, _ = recorded
    frame_click = next(t for t in browser_turns(turns, "click") if "localhost" in t["arguments"]["metadata"]["url"])
    typed = browser_turns(turns, "textInput")
    top_click = browser_turns(turns, "click", "plain")[0]
    assert [t["arguments"]["text"] for t in typed] == ["typed in the frame"], describe(turns)
    assert "localhost" in typed[0]["arguments"]["metadata"]["url"]
    for turn in (frame_click, typed[0], top_click):
        assert turn.get("screenshot"), f"{turn['intent']} has no screenshot\n{describe(turns)}"


def test_every_screenshot_masks_the_private_areas_of_every_frame_and_nothing_else(recorded, live):
    turns, areas = recorded
    shots = screenshots_of(turns)
    assert len(shots) >= 3, describe(turns)
    for sha, where in shots.items():
        with Image.open(io.BytesIO(blob_bytes(live.platform, live.token, sha))) as image:
            image.load()
            assert image.size == VIEWPORT
            rgb = image.convert("RGB")
            for name in ("password", "secret-box", "inner-secret"):
                # Black throughout: the brightest pixel of the area is black.
                assert rgb.convert("L").crop(inset(areas[name])).getextrema()[1] == 0, f"#{name} shows in the {where}"
            for name, colour in (("plain", YELLOW), ("frame-background", GREEN)):
                pixels = rgb.crop(inset(areas[name], 6)).getcolors(maxcolors=1 << 16)
                most = max(pixels)[1]  # the commonest colour of the area: its background, not text or caret
                assert most == colour, f"#{name} is not shown as it is in the {where}: {most}"


# --------------------------------------------------------------------------------------------------------------
# The tab video: its frames are masked before MediaRecorder sees them


def test_the_tab_video_shows_private_areas_black(live, servers):
    base, _ = servers
    driver = make_driver(extension_dir=str(EXTENSION_DIR), extra_args=(ALLOWLIST,))
    cdp = BrowserCDP(driver)
    try:
        wait_until(cdp.service_workers, 30, message="the extension's service worker")
        recorder = Recorder(cdp, live.url, live.token, PROJECT)
        recorder.open()
        driver.get(base + "/private-frames.html")
        wait_for_url(driver, "/private-frames.html")
        areas = {name: driver.find_element(By.ID, name).rect for name in ("plain", "password", "secret-box")}
        driver.execute_script(ANIMATE)  # tab capture yields frames on repaints only
        recorder.start(task_description="Masked video", video=True)
        name = wait_until(lambda: (recorder.status().get("session") or {}).get("demoName"), 60, message="the demo")
        wait_until(lambda: (recorder.status().get("video") or {}).get("recording"), 60, message="the tab video")
        driver.find_element(By.ID, "plain").click()
        wait_until(lambda: (recorder.status().get("counters") or {}).get("videoChunks", 0) >= 2, 60, message="chunks")
        recorder.stop()
        recorder.wait_idle(120)
    finally:
        cdp.close()
        driver.quit()
    wait_until(lambda: api(live.platform, f"/api/recordings/{name}/", live.token)["status"] == "recorded", 120)
    frame = last_video_frame(first_video_run(live, name))
    for private in ("password", "secret-box"):
        # Lossy video: near black, far from the fields' own colours.
        assert frame_area(frame, areas[private], 4).convert("L").getextrema()[1] < 40, f"#{private} shows in the video"
    plain = frame_area(frame, areas["plain"], 6).resize((1, 1)).getpixel((0, 0))
    assert all(abs(a - b) < 40 for a, b in zip(plain, YELLOW, strict=True)), plain
