"""The recorder extension's side panel used by a person, task mode's Alt+click and the before/after frames.

One module-scoped platform and one Chromium with the extension loaded (as in ``test_recorder.py``). The first
test drives the side panel page itself with Selenium (opened in a window of its own, as a tab, with no URL
parameters): real typing into the sign-in form, a wrong token, the project list, the task fields, Start, the
upload counters, Pause / Resume and Stop. The later tests start recordings through the harness's automation
interface and check task mode's fake clicks and the frames attached to click turns.
"""

import io
import time
from dataclasses import dataclass

import pytest
from PIL import Image
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.support.recorder_harness import (
    EXTENSION_ORIGIN,
    BrowserCDP,
    LivePlatform,
    Recorder,
    api,
    blob_bytes,
    extension_browser,
    live_platform,
    stored_turns,
)
from tests.support.waits import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PROJECT = "recorder-ui"
PANEL_URL = f"{EXTENSION_ORIGIN}/sidepanel/sidepanel.html"
VIEWPORT = (1280, 800)
TASK = "Find the second page and press its button (typed in the side panel)"


# --------------------------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("recorder-ui-var"), "recorder_ui", "panel-user", PROJECT) as running:
        yield running


@dataclass
class Browser:
    driver: object
    cdp: BrowserCDP
    home: str  # the window handle of the recorded pages


@pytest.fixture(scope="module")
def browser(live):
    with extension_browser() as (driver, cdp, _):
        yield Browser(driver, cdp, driver.current_window_handle)


# --------------------------------------------------------------------------------------------------------------
# Helpers


def recordings(live) -> list[dict]:
    return api(live.platform, f"/api/recordings/?project__name={PROJECT}&page_size=500", live.token)["results"]


def browser_turns(turns, intent=None) -> list[dict]:
    return [t for t in turns if t["type"] == "browser" and (intent is None or t["intent"] == intent)]


def element_id(turn: dict) -> str | None:
    return (((turn.get("arguments") or {}).get("element") or {}).get("attributes") or {}).get("id")


def properties(turn: dict) -> dict:
    return (turn.get("arguments") or {}).get("properties") or {}


def describe(turns) -> str:
    return "\n".join(
        f"  {t['timestamp']:8.3f} {t.get('intent') or t.get('speaker')} #{element_id(t) or '-'} "
        f"props={ {k: v for k, v in properties(t).items() if k in ('fakeClick', 'altKey', 'url')} } "
        f"frames={[f.get('label') for f in t.get('frames') or []]}"
        for t in turns
    )


def number(driver, element_id_: str) -> int:
    text = driver.find_element(By.ID, element_id_).text.strip()
    return int(text) if text.isdigit() else -1


def text_is(driver, element_id_: str, expected: str, timeout: float = 30) -> None:
    WebDriverWait(driver, timeout).until(lambda d: d.find_element(By.ID, element_id_).text.strip() == expected)


def type_into(element, text: str) -> None:
    element.clear()
    element.send_keys(text)


def harness_recorder(browser: Browser, live: LivePlatform) -> Recorder:
    recorder = Recorder(browser.cdp, live.url, live.token, PROJECT)
    recorder.open()
    return recorder


def start_with_harness(recorder: Recorder, live: LivePlatform, **config) -> str:
    known = {r["name"] for r in recordings(live)}
    recorder.start(task_description="Recorder UI test", **config)

    def created():
        session = recorder.status().get("session") or {}
        if session.get("demoName"):
            return session["demoName"]
        fresh = [r["name"] for r in recordings(live) if r["name"] not in known]
        return fresh[0] if len(fresh) == 1 else None

    return wait_until(created, 60, interval=0.5, message="the recording created on the server")


def stop_with_harness(recorder: Recorder, live: LivePlatform, name: str) -> list[dict]:
    recorder.stop()
    status = recorder.wait_idle(180)
    assert status["counters"].get("failed", 0) == 0, status
    wait_until(
        lambda: api(live.platform, f"/api/recordings/{name}/", live.token)["status"] == "recorded",
        180,
        interval=0.5,
        message=f"demo {name} finished",
    )
    return stored_turns(live.platform, live.token, name)


# --------------------------------------------------------------------------------------------------------------
# 1. A person uses the side panel


def test_a_person_signs_in_starts_pauses_and_stops_in_the_side_panel(browser, live, servers):
    driver, main = browser.driver, servers[0]
    driver.switch_to.window(browser.home)
    driver.get(f"{main}/form.html")  # the page to record, in the first window
    driver.switch_to.new_window("window")
    panel = driver.current_window_handle
    driver.get(PANEL_URL)
    WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, "status-line").text == "Not recording")
    assert driver.find_element(By.ID, "server-url").get_attribute("value") == ""  # nothing configured yet

    # The server (checked), then a wrong token: a clear error, no projects.
    type_into(driver.find_element(By.ID, "server-url"), live.url + "/")
    driver.find_element(By.CSS_SELECTOR, "#server-form button[type=submit]").click()
    WebDriverWait(driver, 30).until(lambda d: d.find_element(By.CSS_SELECTOR, "#token-way summary").is_displayed())
    driver.find_element(By.CSS_SELECTOR, "#token-way summary").click()  # "Paste a token instead"
    type_into(driver.find_element(By.ID, "token"), "0" * 40)
    driver.find_element(By.CSS_SELECTOR, "#token-form button[type=submit]").click()
    WebDriverWait(driver, 30).until(lambda d: "does not work" in d.find_element(By.ID, "signin-result").text)
    result = driver.find_element(By.ID, "signin-result").text
    assert "token" in result.lower(), result  # what to do, not just a status code
    assert not driver.find_element(By.ID, "project").is_enabled()

    # The right token: the project list, with the project's suggested categories and regions (its settings page).
    choices = f"from annotation.models import Project; Project.objects.filter(name={PROJECT!r}).update("
    done = live.platform.manage(
        "shell", "-c", choices + "category_choices=['Testing', 'Shopping'], region_choices=['Europe'])"
    )
    assert done.returncode == 0, done.stderr
    type_into(driver.find_element(By.ID, "token"), live.token)
    driver.find_element(By.CSS_SELECTOR, "#token-form button[type=submit]").click()
    WebDriverWait(driver, 30).until(lambda d: "Signed in" in d.find_element(By.ID, "signed-in-as").text)
    project = driver.find_element(By.ID, "project")
    assert project.is_enabled()
    Select(project).select_by_value(PROJECT)
    WebDriverWait(driver, 10).until(lambda d: "annotator" in d.find_element(By.ID, "project-role").text)
    suggested = driver.find_elements(By.CSS_SELECTOR, "#category-choices option")
    assert [option.get_attribute("value") for option in suggested] == ["Testing", "Shopping"]
    assert driver.find_element(By.ID, "region").get_attribute("list") == "region-choices"

    # The mode first (chat with an instructor shows its screen-sharing box), the task fields, then Start.
    driver.find_element(By.CSS_SELECTOR, "#mode-choice input[value=chat]").click()
    assert driver.find_element(By.ID, "instructor-sees-screen").is_displayed()
    assert not driver.find_element(By.ID, "alt-click-note").is_displayed()
    driver.find_element(By.ID, "task-description").send_keys(TASK)
    driver.find_element(By.ID, "websites").send_keys("127.0.0.1")
    driver.find_element(By.ID, "category").send_keys("Testing")
    driver.find_element(By.ID, "subcategory").send_keys("Side panel")
    driver.find_element(By.ID, "region").send_keys("Europe")
    driver.find_element(By.ID, "start-button").click()
    text_is(driver, "record-state", "Recording")
    WebDriverWait(driver, 60).until(lambda d: d.find_element(By.ID, "demo-name").text.startswith("("))
    name = driver.find_element(By.ID, "demo-name").text.strip("()")
    assert not driver.find_element(By.ID, "start").is_displayed()
    assert driver.find_element(By.ID, "controls").is_displayed()
    assert driver.find_element(By.ID, "chat-form").is_displayed()  # chat mode: the chat, with its Instructor speaker
    assert driver.find_element(By.ID, "task-description").get_attribute("value") == ""  # no duplicate by accident
    captured_before = number(driver, "count-captured")

    # Act on the fixture page in the other window.
    driver.switch_to.window(browser.home)
    name_field = driver.find_element(By.ID, "name")
    name_field.click()
    name_field.send_keys("Ada")
    time.sleep(0.5)
    driver.find_element(By.ID, "agree").click()
    time.sleep(0.5)
    driver.find_element(By.ID, "to-second").click()
    WebDriverWait(driver, 20).until(lambda d: d.current_url.endswith("/second.html"))
    time.sleep(0.5)
    driver.find_element(By.ID, "second-button").click()
    time.sleep(0.5)

    # The panel's counters rise.
    driver.switch_to.window(panel)
    WebDriverWait(driver, 60).until(lambda d: number(d, "count-captured") >= captured_before + 4)
    WebDriverWait(driver, 60).until(lambda d: number(d, "count-uploaded") >= 4)

    # Pause, Resume, Stop.
    pause_button = driver.find_element(By.ID, "pause-button")
    pause_button.click()
    text_is(driver, "record-state", "Paused")
    text_is(driver, "pause-button", "Resume")
    assert api(live.platform, f"/api/recordings/{name}/", live.token)["status"] != "recorded"
    pause_button.click()
    text_is(driver, "record-state", "Recording")
    text_is(driver, "pause-button", "Pause")
    driver.find_element(By.ID, "stop-button").click()
    text_is(driver, "record-state", "Not recording", timeout=60)
    assert driver.find_element(By.ID, "start").is_displayed()
    # (#last-error may show a non-fatal warning such as "no screenshot for a click turn": not asserted here.)
    WebDriverWait(driver, 120).until(
        lambda d: number(d, "count-queued") == 0 and number(d, "count-uploaded") >= number(d, "count-captured")
    )
    assert number(driver, "count-failed") == 0

    # What the platform stored.
    wait_until(
        lambda: api(live.platform, f"/api/recordings/{name}/", live.token)["status"] == "recorded",
        120,
        interval=0.5,
        message=f"demo {name} recorded",
    )
    demo = api(live.platform, f"/api/recordings/{name}/", live.token)
    assert demo["task_description"] == TASK
    assert (demo["category"], demo["subcategory"], demo["region"]) == ("Testing", "Side panel", "Europe")
    assert demo["mode"] == "chat"
    assert [r["name"] for r in recordings(live) if r["task_description"] == TASK] == [name]
    turns = stored_turns(live.platform, live.token, name)
    clicks = {element_id(t) for t in browser_turns(turns, "click")}
    assert {"name", "agree", "to-second", "second-button"} <= clicks, describe(turns)
    typed = [t for t in browser_turns(turns, "textInput") if element_id(t) == "name"]
    assert typed, describe(turns)
    assert typed[-1]["arguments"].get("text") == "Ada", describe(turns)

    # A counters error (as the uploader writes during an outage) shows, and goes once the worker clears it.
    set_counters_error = (
        "const [error, done] = arguments;"
        "chrome.storage.local.get('webtasks.counters').then((v) => chrome.storage.local.set({'webtasks.counters':"
        " {...(v['webtasks.counters'] || {}), lastError: error, lastErrorAt: error ? Date.now() : null}})).then(done);"
    )
    driver.execute_async_script(set_counters_error, "Server unreachable: retrying (UI test)")
    WebDriverWait(driver, 10).until(lambda d: "UI test" in d.find_element(By.ID, "last-error").text)
    assert driver.find_element(By.ID, "last-error").is_displayed()
    driver.execute_async_script(set_counters_error, None)
    WebDriverWait(driver, 10).until(lambda d: not d.find_element(By.ID, "last-error").is_displayed())
    driver.close()
    driver.switch_to.window(browser.home)


# --------------------------------------------------------------------------------------------------------------
# 2. Task mode: Alt+click records a click without executing it


def alt_click(driver, element) -> None:
    ActionChains(driver).key_down(Keys.ALT).click(element).key_up(Keys.ALT).perform()


def test_alt_click_in_task_mode_is_recorded_as_a_fake_click_and_not_executed(browser, live, servers):
    driver, main = browser.driver, servers[0]
    driver.switch_to.window(browser.home)
    driver.get(f"{main}/second.html")
    recorder = harness_recorder(browser, live)
    name = start_with_harness(recorder, live, mode="task")
    time.sleep(1)  # the page's content script learns the task mode from the service worker; nothing shows when
    link, button = driver.find_element(By.ID, "to-list"), driver.find_element(By.ID, "second-button")
    label = button.text
    captured = recorder.captured()
    alt_click(driver, link)
    recorder.wait_captured(captured + 1)  # the fake click is a turn: the link's default was handled by then
    alt_click(driver, button)
    recorder.wait_captured(captured + 2)
    assert driver.current_url == f"{main}/second.html"  # the link was not followed
    assert driver.find_element(By.ID, "second-button").text == label != "Clicked"  # the handler did not run
    assert len(driver.window_handles) == 1  # nor opened anywhere else
    button.click()  # a plain click still runs
    WebDriverWait(driver, 10).until(lambda d: d.find_element(By.ID, "second-button").text == "Clicked")
    time.sleep(0.5)
    turns = stop_with_harness(recorder, live, name)

    assert api(live.platform, f"/api/recordings/{name}/", live.token)["mode"] == "task"
    clicks = browser_turns(turns, "click")
    fake = [t for t in clicks if properties(t).get("fakeClick") is True]
    assert {element_id(t) for t in fake} == {"to-list", "second-button"}, describe(turns)
    assert all(properties(t).get("altKey") is True for t in fake)
    real = [t for t in clicks if not properties(t).get("fakeClick")]
    assert [element_id(t) for t in real] == ["second-button"], describe(turns)
    loads = [t for t in browser_turns(turns, "load") if "/list.html" in (properties(t).get("url") or "")]
    assert not loads, describe(turns)


# --------------------------------------------------------------------------------------------------------------
# 3. Frames: "before" and "after" screenshots attached to click turns


def test_click_turns_carry_before_and_after_frames_that_decode_at_the_viewport_size(browser, live, servers):
    driver, main = browser.driver, servers[0]
    driver.switch_to.window(browser.home)
    driver.get(f"{main}/generated.html?elements=200")
    recorder = harness_recorder(browser, live)
    name = start_with_harness(recorder, live)
    time.sleep(1.5)  # pacing: each click's "before" frame is a screenshot, within Chrome's quota of 2 a second
    buttons = driver.find_elements(By.CSS_SELECTOR, "section button")[:5]
    assert len(buttons) == 5
    for button in buttons:
        button.click()
        time.sleep(1.1)  # pacing, as above: the extension takes no more screenshots than Chrome allows
    turns = stop_with_harness(recorder, live, name)

    clicks = browser_turns(turns, "click")
    assert len(clicks) >= 5, describe(turns)
    with_before = [t for t in clicks if any(f.get("label") == "before" for f in t.get("frames") or [])]
    assert len(with_before) >= 3, describe(turns)
    with_after = [t for t in clicks if any(f.get("label") == "after" for f in t.get("frames") or [])]
    assert with_after, describe(turns)
    shas = set()
    for turn in clicks:
        for frame in turn.get("frames") or []:
            assert frame.get("label") in ("before", "after"), frame
            assert frame.get("screenshot"), frame
            labels = [f.get("label") for f in turn["frames"]]
            assert labels.count(frame["label"]) == 1, labels
            shas.add(frame["screenshot"])
        if turn.get("frames"):
            by_label = {f["label"]: f for f in turn["frames"]}
            if "before" in by_label and "after" in by_label:
                assert by_label["before"]["timestamp"] <= by_label["after"]["timestamp"], turn["frames"]
    for sha in shas:
        with Image.open(io.BytesIO(blob_bytes(live.platform, live.token, sha))) as image:
            image.load()
            assert image.format == "PNG"
            assert image.size == VIEWPORT
