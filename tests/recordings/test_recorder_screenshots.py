"""Every element action gets a screenshot of the page it was taken on, also when a link click unloads that page at
once (headless Chromium with the unpacked extension, against the real platform).

Two fixture pages with different backgrounds (``hop-a.html`` pink, ``hop-b.html`` blue) link to each other. A
person presses a button, then follows the link 0.7 s later, follows the links back and forth as soon as each
page has loaded, and types into a field right before following a link. Each element action must have a screenshot
that decodes at the viewport size and shows the page it was taken on (its background), not the page the link
leads to.
"""

import time

import pytest
from selenium.webdriver.common.by import By

from tests.support.recorder_browser import (
    PROJECT,
    Browser,
    background_of,
    browser_turns,
    describe,
    element_id,
    start_recording,
    stop_and_collect,
    url_of,
    wait_for_url,
)
from tests.support.recorder_harness import (
    ELEMENT_INTENTS,
    blob_bytes,
    extension_browser,
    live_platform,
)

pytestmark = [pytest.mark.browser, pytest.mark.processes]

BACKGROUNDS = {"/hop-a.html": (0xFF, 0xD8, 0xD8), "/hop-b.html": (0xD8, 0xD8, 0xFF)}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("recorder-shots-var"), "recshots", "navigator", PROJECT) as running:
        yield running


@pytest.fixture(scope="module")
def browser(live):
    with extension_browser(live, PROJECT) as (driver, cdp, recorder):
        yield Browser(driver, cdp, recorder)


def page_of(url: str) -> str:
    return next(path for path in BACKGROUNDS if url.split("?")[0].endswith(path))


def follow_link(driver) -> None:
    """Click the page's link and wait (only) until the other page has loaded."""
    here = driver.current_url
    driver.find_element(By.ID, "hop-link").click()
    other = "/hop-b.html" if here.endswith("/hop-a.html") else "/hop-a.html"
    wait_for_url(driver, other)


@pytest.fixture(scope="module")
def hops(browser, live, servers):
    """Rapid clicks: a button then a link 0.7 s later, then links followed as soon as each page has loaded; text
    typed into a field right before a link is followed."""
    base, _ = servers
    driver = browser.driver
    driver.get(base + "/hop-a.html")
    wait_for_url(driver, "/hop-a.html")
    time.sleep(1.0)  # the page's content scripts injected before the recording starts; nothing shows when
    name = start_recording(browser, live)
    for _ in range(2):
        driver.find_element(By.ID, "hop-button").click()
        time.sleep(0.7)
        follow_link(driver)
    for _ in range(4):
        follow_link(driver)
    driver.find_element(By.ID, "hop-button").click()
    time.sleep(0.2)
    follow_link(driver)
    # The textInput is sent at the link's pointerdown, with the page that is about to go away.
    driver.find_element(By.ID, "hop-input").send_keys("typed then left")
    follow_link(driver)
    time.sleep(2.5)  # past HISTORY_COALESCE_MS and a spaced screenshot: the last load is held back until its shot
    status = browser.recorder.status()
    turns = stop_and_collect(browser, live, name)
    print(f"\n{name}:\n{describe(turns)}\nscreenshots: {status.get('screenshots')}")
    return turns, status


def test_every_element_action_has_a_screenshot_of_the_page_it_was_taken_on(hops, live):
    turns, _ = hops
    clicks = browser_turns(turns, "click")
    assert [element_id(t) for t in clicks].count("hop-link") == 8, describe(turns)
    assert [element_id(t) for t in clicks].count("hop-button") == 3, describe(turns)
    assert browser_turns(turns, "textInput", "hop-input")[0]["arguments"]["text"] == "typed then left"
    for turn in (t for t in browser_turns(turns) if t["intent"] in ELEMENT_INTENTS):
        where = f"{turn['intent']} #{element_id(turn)} on {url_of(turn)} at {turn['timestamp']:.3f}"
        assert turn.get("screenshot"), f"{where}: no screenshot\n{describe(turns)}"
        colour = background_of(blob_bytes(live.platform, live.token, turn["screenshot"]))
        assert colour == BACKGROUNDS[page_of(url_of(turn))], f"{where}: the screenshot shows another page ({colour})"


def test_every_load_has_a_screenshot_of_the_page_it_loaded(hops, live):
    """Every load has a screenshot showing its page, also the loads left at once (7 loads in 3 s here): without a
    user gesture captureVisibleTab allows two calls a second, so a load that could not get its own is held back
    for a stand-in, the next screenshot of the same tab and URL (typically the click that left it), never one of
    the page the link led to. tabcreate and tabremove turns have none (a new tab shows its page in its load turn;
    a removed tab shows nothing)."""
    turns, status = hops
    loads = browser_turns(turns, "load")
    assert len(loads) == 8, describe(turns)
    for turn in loads:
        where = f"load of {url_of(turn)} at {turn['timestamp']:.3f}"
        assert turn.get("screenshot"), f"{where}: no screenshot\n{describe(turns)}\n{status['screenshots']}"
        colour = background_of(blob_bytes(live.platform, live.token, turn["screenshot"]))
        assert colour == BACKGROUNDS[page_of(url_of(turn))], f"{where}: the screenshot shows another page ({colour})"
    for turn in browser_turns(turns):
        if turn["intent"] in ELEMENT_INTENTS | {"scroll"}:
            background_of(blob_bytes(live.platform, live.token, turn["screenshot"]))
    assert status["screenshots"]["missing"] == 0, status["screenshots"]
