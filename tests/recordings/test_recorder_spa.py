"""A single-page app's navigations (history.pushState / replaceState) are load turns, with screenshots of the view
they show (headless Chromium with the unpacked extension, against the real platform).

The fixture ``spa.html`` is a small app whose router keeps the view in the URL and paints each view its own
background: it normalises its URL to ``?view=home`` while loading, a button pushes ``?view=list``, another
replaces the URL with itself and with a fragment (no navigation), and a search box mirrors three keystrokes into
``?q=`` 150 ms apart (one load, of the last URL, whose screenshot shows the results painted after the last one).
A link then leaves for a real page (a committed navigation, its own load).
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
    blob_bytes,
    extension_browser,
    live_platform,
)

pytestmark = [pytest.mark.browser, pytest.mark.processes]

HOME, LIST, SEARCH, HOP = (0xD8, 0xFF, 0xD8), (0xFF, 0xFF, 0xD8), (0xD8, 0xFF, 0xFF), (0xFF, 0xD8, 0xD8)
# Longer than HISTORY_COALESCE_MS plus a spaced screenshot: each step's load has its screenshot before the next.
# A wait past the extension's own window (a constant in lib/constants.js, no setting): a step without a load
# (same-url) shows nothing a test could wait on.
STEP_S = 2.0


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("recorder-spa-var"), "recspa", "navigator", PROJECT) as running:
        yield running


@pytest.fixture(scope="module")
def browser(live):
    with extension_browser(live, PROJECT) as (driver, cdp, recorder):
        yield Browser(driver, cdp, recorder)


def click(driver, element_id_: str) -> None:
    driver.find_element(By.ID, element_id_).click()
    time.sleep(STEP_S)


@pytest.fixture(scope="module")
def spa(browser, live, servers):
    """Recorded: the app's views, a non-navigation, a search burst, a link out, and the app opened again."""
    base, _ = servers
    driver = browser.driver
    driver.get(base + "/spa.html")
    wait_for_url(driver, "/spa.html?view=home")  # normalised before the recording: not a load of it
    time.sleep(1.0)  # past HISTORY_COALESCE_MS (1 s, the extension's constant): the router's change is not recorded
    name = start_recording(browser, live)
    click(driver, "push-list")
    click(driver, "same-url")
    click(driver, "type-search")
    assert driver.current_url.endswith("/spa.html?q=abc")
    driver.find_element(By.ID, "leave-link").click()
    wait_for_url(driver, "/hop-a.html")
    time.sleep(STEP_S)
    driver.get(base + "/spa.html")  # committed, then the router's replaceState while it loads
    wait_for_url(driver, "/spa.html?view=home")
    time.sleep(STEP_S)
    status = browser.recorder.status()
    turns = stop_and_collect(browser, live, name)
    print(f"\n{name}:\n{describe(turns)}\nscreenshots: {status.get('screenshots')}")
    return turns, status, base


def test_history_navigations_are_loads_in_order_with_the_clicks(spa):
    turns, _, base = spa
    steps = [
        (t["intent"], element_id(t) if t["intent"] == "click" else url_of(t).removeprefix(base))
        for t in browser_turns(turns)
        if t["intent"] in ("click", "load")
    ]
    assert steps == [
        ("click", "push-list"),
        ("load", "/spa.html?view=list"),
        ("click", "same-url"),  # replaceState of the same URL, then of a fragment: no load
        ("click", "type-search"),
        ("load", "/spa.html?q=abc"),  # three replaceStates within HISTORY_COALESCE_MS: one load, the last URL
        ("click", "leave-link"),
        ("load", "/hop-a.html"),
        ("load", "/spa.html?view=home"),  # the committed spa.html, moved by its router's replaceState
    ], describe(turns)
    timestamps = [t["timestamp"] for t in browser_turns(turns) if t["intent"] in ("click", "load")]
    assert timestamps == sorted(timestamps)


def test_each_history_load_has_a_screenshot_of_its_view(spa, live):
    turns, status, base = spa
    expected = {"/spa.html?view=list": LIST, "/spa.html?q=abc": SEARCH, "/hop-a.html": HOP, "/spa.html?view=home": HOME}
    for turn in browser_turns(turns, "load"):
        path = url_of(turn).removeprefix(base)
        assert turn.get("screenshot"), f"load of {path}: no screenshot\n{describe(turns)}\n{status['screenshots']}"
        colour = background_of(blob_bytes(live.platform, live.token, turn["screenshot"]))
        assert colour == expected[path], f"load of {path}: the screenshot shows another view ({colour})"
        assert turn["arguments"]["properties"]["url"] == turn["arguments"]["metadata"]["url"]
    assert status["screenshots"]["missing"] == 0, status["screenshots"]
