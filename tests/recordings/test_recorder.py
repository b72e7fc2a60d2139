"""The recorder extension in a real headless Chromium, recording on fixture pages into the real platform.

One module-scoped platform (Daphne + Celery, as `make run` starts it) and one Chromium with the extension loaded,
driven through its automation interface (the side panel page in a window of its own, reached over browser-level
CDP so Selenium never switches to it). The main scenario is recorded once with Selenium's real input (clicks,
typing with edits, a select, a checkbox, a range drag, a text selection drag + Ctrl+C / Ctrl+V, a hover dwell, a
form submit, links, a wheel scroll, an open shadow root, a same-origin and a cross-origin frame, a second tab by
target=_blank and by window.open, a password and a data-private area); the tests then read what the platform
stored. Smaller recordings cover two windows, the storage command route with chat and pause, a killed service
worker and a stopped server. Finally everything is exported and loaded with the official ``weblinx`` package.
"""

import io
import json
import time
from dataclasses import dataclass, field

import pytest
import weblinx
from PIL import Image, ImageChops
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from tests.support.recorder_browser import (
    PROJECT,
    VIEWPORT,
    Browser,
    browser_turns,
    choose,
    describe,
    element_id,
    frame_content_offset,
    key_chord,
    pause,
    start_recording,
    stop_and_collect,
    tab_of,
    url_of,
    wait_for_url,
)
from tests.support.recorder_harness import (
    ELEMENT_INTENTS,
    UID,
    api,
    blob_bytes,
    extension_browser,
    leaks,
    live_platform,
    media_files,
    stored_turns,
)
from tests.support.waits import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PASSWORD = "Zq7pw-Secret-4242"
PASSWORD_PREFIX = PASSWORD[:5]
CARD = "4111222233334444"
PRIVATE_NOTE = "Priv4te-N0te"  # text inside a data-private element of form.html
SECRETS = (PASSWORD_PREFIX, CARD, CARD[:8], PRIVATE_NOTE)
QUOTE = "The quick brown fox jumps over the lazy dog"


# --------------------------------------------------------------------------------------------------------------
# Fixtures: the platform, the fixture pages, the browser


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("recorder-var"), "recorder", "navigator", PROJECT) as running:
        yield running


@pytest.fixture(scope="module")
def browser(live):
    with extension_browser(live, PROJECT) as (driver, cdp, recorder):
        yield Browser(driver, cdp, recorder)


# --------------------------------------------------------------------------------------------------------------
# Recording helpers


@dataclass
class Recording:
    """What a scenario did (names, Selenium's rects, tab handles ...) and what the platform stored."""

    name: str = ""
    turns: list = field(default_factory=list)
    rects: dict = field(default_factory=dict)
    facts: dict = field(default_factory=dict)
    seconds: float = 0.0


def uid_of(turn: dict) -> str | None:
    return (((turn.get("arguments") or {}).get("element") or {}).get("attributes") or {}).get(UID)


def one(turns, intent, id_=None) -> dict:
    found = browser_turns(turns, intent, id_)
    assert len(found) == 1, f"expected one {intent} on #{id_}, got {len(found)}:\n{describe(turns)}"
    return found[0]


def select_text(driver, element) -> None:
    """Select an element's text with a real mouse drag from its first to its last character."""
    width = driver.execute_script(
        "const range = document.createRange(); range.selectNodeContents(arguments[0]);"
        "return range.getBoundingClientRect().width;",
        element,
    )
    start = -int(element.rect["width"] / 2) + 1  # offsets are from the element's centre
    chain = ActionChains(driver).move_to_element_with_offset(element, start, 0).click_and_hold()
    chain.move_by_offset(int(width) + 2, 0).release().perform()
    assert driver.execute_script("return String(getSelection())").strip() == element.text


# --------------------------------------------------------------------------------------------------------------
# The main scenario, recorded once for the module


def record_form(driver, base, rec: Recording) -> None:
    driver.get(base + "/form.html")
    wait_for_url(driver, "/form.html")
    pause(1.0)
    find = driver.find_element
    for name in ("name", "password", "agree", "submit", "color", "notes", "title", "private-box", "card"):
        rec.rects[name] = find(By.ID, name).rect

    find(By.ID, "name").click()
    find(By.ID, "name").send_keys("Ada Lovelacx", Keys.BACKSPACE, "e")  # edits too: the final text counts
    pause()
    find(By.ID, "password").click()
    find(By.ID, "password").send_keys(PASSWORD)
    pause()
    find(By.ID, "card").click()
    find(By.ID, "card").send_keys(CARD)
    pause()
    choose(find(By.ID, "color"), "Blue")
    pause()
    find(By.ID, "agree").click()
    pause()
    volume = find(By.ID, "volume")
    ActionChains(driver).click_and_hold(volume).move_by_offset(int(volume.rect["width"] * 0.3), 0).release().perform()
    rec.facts["volume"] = volume.get_property("value")
    pause()
    select_text(driver, find(By.ID, "quote"))
    key_chord(driver, "c")
    pause()
    find(By.ID, "notes").click()
    key_chord(driver, "v")
    rec.facts["notes"] = find(By.ID, "notes").get_property("value")
    pause()
    ActionChains(driver).move_to_element(find(By.ID, "title")).perform()
    pause(1.5)  # a dwell longer than HOVER_DWELL_MS
    find(By.ID, "submit").click()
    wait_for_url(driver, "/second.html")
    pause(1.0)


def record_link_and_scroll(driver, base, rec: Recording) -> None:
    rec.rects["to-list"] = driver.find_element(By.ID, "to-list").rect
    driver.find_element(By.ID, "to-list").click()
    wait_for_url(driver, "/list.html")
    pause(1.0)
    # One scroll gesture of several wheel ticks: one scroll turn with the final position. The ticks go in one
    # action sequence: one WebDriver call per tick could leave more than the debounce between them under load.
    ticks = ActionChains(driver)
    for _ in range(3):
        ticks.scroll_by_amount(0, 500).pause(0.1)
    ticks.perform()
    pause(1.5)
    rec.facts["scroll"] = driver.execute_script("return [window.scrollX, window.scrollY]")
    rec.facts["scroll_png"] = driver.get_screenshot_as_png()


def record_widgets(driver, base, rec: Recording) -> None:
    driver.get(base + "/widgets.html")
    wait_for_url(driver, "/widgets.html")
    pause(1.0)
    root = driver.find_element(By.ID, "shadow-host").shadow_root
    rec.rects["shadow-button"] = root.find_element(By.CSS_SELECTOR, "#shadow-button").rect
    rec.rects["shadow-input"] = root.find_element(By.CSS_SELECTOR, "#shadow-input").rect
    root.find_element(By.CSS_SELECTOR, "#shadow-button").click()
    pause()
    root.find_element(By.CSS_SELECTOR, "#shadow-input").click()
    root.find_element(By.CSS_SELECTOR, "#shadow-input").send_keys("in the shadow")
    pause()

    for frame_id, prefix in (("frame", ""), ("xframe", "x-")):
        frame = driver.find_element(By.ID, frame_id)
        offset = frame_content_offset(driver, frame)
        driver.switch_to.frame(frame)
        button, field_ = driver.find_element(By.ID, "frame-button"), driver.find_element(By.ID, "frame-input")
        for key, element in ((f"{prefix}frame-button", button), (f"{prefix}frame-input", field_)):
            inner = element.rect
            rec.rects[key] = {**inner, "x": inner["x"] + offset["x"], "y": inner["y"] + offset["y"]}
        button.click()
        pause()
        field_.click()
        field_.send_keys(f"{prefix}frame text")
        pause()
        driver.switch_to.default_content()


def record_tabs(driver, base, rec: Recording) -> None:
    home = driver.current_window_handle
    driver.find_element(By.ID, "open-tab").click()
    WebDriverWait(driver, 20).until(lambda d: len(d.window_handles) == 2)
    (second,) = set(driver.window_handles) - {home}
    driver.switch_to.window(second)
    wait_for_url(driver, "/second.html")
    pause(1.0)
    driver.find_element(By.ID, "second-button").click()
    pause(1.0)
    driver.close()
    driver.switch_to.window(home)
    pause(1.0)

    driver.find_element(By.ID, "open-window").click()
    WebDriverWait(driver, 20).until(lambda d: len(d.window_handles) == 2)
    (third,) = set(driver.window_handles) - {home}
    driver.switch_to.window(third)
    wait_for_url(driver, "/second.html")
    pause(1.0)
    driver.switch_to.window(home)  # back to the first tab: a tabswitch
    pause(1.0)
    driver.switch_to.window(third)
    pause(0.5)
    driver.close()
    driver.switch_to.window(home)
    pause(1.0)


@pytest.fixture(scope="module")
def demo(browser, live, servers) -> Recording:
    """The main scenario, recorded once; the tests below check what the platform stored."""
    base, _ = servers
    driver, rec = browser.driver, Recording()
    started = time.monotonic()
    rec.name = start_recording(browser, live)
    record_form(driver, base, rec)
    record_link_and_scroll(driver, base, rec)
    record_widgets(driver, base, rec)
    record_tabs(driver, base, rec)
    shots = browser.recorder.status().get("screenshots")
    rec.turns = stop_and_collect(browser, live, rec.name)
    rec.seconds = time.monotonic() - started
    print(f"\nrecorded {rec.name} in {rec.seconds:.1f}s:\n{describe(rec.turns)}\nscreenshots: {shots}")
    return rec


# --------------------------------------------------------------------------------------------------------------
# What the platform stored for the main scenario


def test_every_turn_is_stored_once_with_a_unique_client_id(demo):
    client_ids = [t["client_id"] for t in demo.turns]
    assert len(client_ids) == len(set(client_ids))
    assert all(t["type"] == "browser" for t in demo.turns), describe(demo.turns)
    assert [t["timestamp"] for t in demo.turns] == sorted(t["timestamp"] for t in demo.turns)


def test_form_actions_are_recorded_in_order_with_their_arguments(demo, servers):
    base, _ = servers
    expected = [
        ("load", None, lambda t: url_of(t) == base + "/form.html"),
        ("click", "name", None),
        ("textInput", "name", lambda t: t["arguments"]["text"] == "Ada Lovelace"),
        ("click", "password", None),
        ("textInput", "password", None),
        ("click", "card", None),
        ("textInput", "card", None),
        ("change", "color", lambda t: t["arguments"]["value"] == "blue"),
        ("click", "agree", None),
        ("change", "agree", None),
        ("change", "volume", lambda t: str(t["arguments"]["value"]) == str(demo.facts["volume"])),
        ("copy", None, lambda t: t["arguments"]["selected"].strip() == QUOTE),
        ("click", "notes", None),
        ("paste", "notes", lambda t: t["arguments"]["pasted"] == QUOTE),
        ("hover", "title", None),
        ("click", "submit", None),
        ("submit", "order", None),
        ("load", None, lambda t: url_of(t) == base + "/second.html"),
        ("click", "to-list", None),
        ("load", None, lambda t: url_of(t) == base + "/list.html"),
        ("scroll", None, None),
        ("load", None, lambda t: url_of(t) == base + "/widgets.html"),
    ]
    assert_subsequence(demo.turns, expected)


def assert_subsequence(turns, expected) -> None:
    """``expected`` [(intent, element id or None, predicate or None)] appears in ``turns`` in this order."""
    position = 0
    for intent, id_, check in expected:
        while position < len(turns):
            turn = turns[position]
            position += 1
            if turn.get("intent") == intent and (id_ is None or element_id(turn) == id_):
                if check is not None:
                    assert check(turn), f"{intent} #{id_}: wrong arguments {turn['arguments']}\n{describe(turns)}"
                break
        else:
            raise AssertionError(f"{intent} on #{id_} missing or out of order in:\n{describe(turns)}")


def test_typing_is_coalesced_into_one_text_input_with_the_final_text(demo):
    assert one(demo.turns, "textInput", "name")["arguments"]["text"] == "Ada Lovelace"
    assert one(demo.turns, "textInput", "shadow-input")["arguments"]["text"] == "in the shadow"
    texts = sorted(t["arguments"]["text"] for t in browser_turns(demo.turns, "textInput", "frame-input"))
    assert texts == ["frame text", "x-frame text"], describe(demo.turns)
    assert one(demo.turns, "change", "color")["arguments"]["value"] == "blue"


def test_a_checkbox_and_a_range_report_their_final_values(demo):
    agree = browser_turns(demo.turns, "change", "agree")
    assert len(agree) == 1, describe(demo.turns)
    assert str(agree[0]["arguments"]["value"]).lower() in ("yes", "true", "on", "checked"), agree[0]["arguments"]
    volume = browser_turns(demo.turns, "change", "volume")
    assert volume, describe(demo.turns)
    assert str(volume[-1]["arguments"]["value"]) == str(demo.facts["volume"])
    assert demo.facts["volume"] != "50"  # the drag did move it


def test_copy_and_paste_carry_the_text(demo):
    (copy,) = browser_turns(demo.turns, "copy")
    assert copy["arguments"]["selected"].strip() == QUOTE
    paste = one(demo.turns, "paste", "notes")
    assert paste["arguments"]["pasted"] == QUOTE == demo.facts["notes"]


def test_load_turns_carry_url_transition_and_tab(demo, servers):
    base, _ = servers
    loads = browser_turns(demo.turns, "load")
    by_url = {}
    for turn in loads:
        by_url.setdefault(url_of(turn), []).append(turn)
        props = turn["arguments"]["properties"]
        assert isinstance(props["transitionQualifiers"], list), props
        assert isinstance(props["tabId"], int), props
    first = by_url[base + "/form.html"][0]["arguments"]["properties"]
    assert first["transitionType"] == "typed", first
    submitted = by_url[base + "/second.html"][0]["arguments"]["properties"]
    assert submitted["transitionType"] == "form_submit", submitted
    linked = by_url[base + "/list.html"][0]["arguments"]["properties"]
    assert linked["transitionType"] == "link", linked
    home = first["tabId"]
    assert {by_url[base + u][0]["arguments"]["properties"]["tabId"] for u in ("/list.html", "/widgets.html")} == {home}


def test_scroll_turn_has_the_final_position(demo):
    scrolls = browser_turns(demo.turns, "scroll")
    assert len(scrolls) == 1, describe(demo.turns)
    arguments = scrolls[0]["arguments"]
    assert [arguments["scrollX"], arguments["scrollY"]] == demo.facts["scroll"]
    assert demo.facts["scroll"][1] > 1000
    assert scrolls[0]["arguments"]["metadata"]["url"].endswith("/list.html")


def test_the_scroll_screenshot_shows_what_selenium_sees_at_the_final_position(demo, live):
    (scroll,) = browser_turns(demo.turns, "scroll")
    with (
        Image.open(io.BytesIO(blob_bytes(live.platform, live.token, scroll["screenshot"]))) as recorded,
        Image.open(io.BytesIO(demo.facts["scroll_png"])) as seen,
    ):
        assert recorded.size == seen.size == VIEWPORT
        difference = ImageChops.difference(recorded.convert("L"), seen.convert("L"))
        changed = sum(difference.histogram()[33:]) / (VIEWPORT[0] * VIEWPORT[1])  # pixels off by more than 32
    assert changed < 0.01, f"{changed:.1%} of the pixels differ"


def test_submit_is_recorded_on_the_form(demo):
    submit = one(demo.turns, "submit")
    element = submit["arguments"]["element"]
    assert element["tagName"] == "FORM"
    assert element["attributes"]["id"] == "order"


def test_hover_is_recorded_after_a_dwell(demo):
    hovers = browser_turns(demo.turns, "hover", "title")
    assert len(hovers) == 1, describe(demo.turns)


def test_every_element_action_has_its_uid_in_its_page_html_and_bboxes(demo, live):
    checked = 0
    for turn in demo.turns:
        if turn.get("intent") not in ELEMENT_INTENTS:
            continue
        uid = uid_of(turn)
        where = f"{turn['intent']} #{element_id(turn)} ({turn['client_id']})"
        assert uid, f"{where}: no {UID}"
        assert turn.get("page"), f"{where}: no page blob"
        assert turn.get("bboxes"), f"{where}: no bboxes blob"
        html = blob_bytes(live.platform, live.token, turn["page"]).decode()
        bboxes = json.loads(blob_bytes(live.platform, live.token, turn["bboxes"]))
        assert f'{UID}="{uid}"' in html, f"{where}: uid {uid} not in its page"
        assert uid in bboxes, f"{where}: uid {uid} not in its bboxes"
        assert set(bboxes[uid]) >= {"x", "y", "width", "height", "top", "right", "bottom", "left"}
        element = turn["arguments"]["element"]
        assert {"tagName", "xpath", "outerHTML", "bbox"} <= set(element), f"{where}: {sorted(element)}"
        checked += 1
    assert checked >= 15


def test_element_boxes_equal_seleniums_rects(demo, live):
    for id_, intent in (("name", "textInput"), ("password", "click"), ("agree", "click"), ("to-list", "click")):
        turn = browser_turns(demo.turns, intent, id_)[0]
        rect = demo.rects[id_]
        assert_box(turn["arguments"]["element"]["bbox"], rect, f"{intent} #{id_} element.bbox")
        bboxes = json.loads(blob_bytes(live.platform, live.token, turn["bboxes"]))
        assert_box(bboxes[uid_of(turn)], rect, f"{intent} #{id_} bboxes file")


def assert_box(box: dict, rect: dict, what: str) -> None:
    for key in ("x", "y", "width", "height"):
        assert abs(box[key] - rect[key]) <= 1, f"{what}: {key} {box[key]} != Selenium {rect[key]} ({box} vs {rect})"
    assert abs(box["right"] - (rect["x"] + rect["width"])) <= 1, (what, box)
    assert abs(box["bottom"] - (rect["y"] + rect["height"])) <= 1, (what, box)


def test_actions_in_an_open_shadow_root_are_captured_with_their_element(demo, live):
    click = one(demo.turns, "click", "shadow-button")
    element = click["arguments"]["element"]
    assert element["tagName"] == "BUTTON"
    assert "Shadow" in element["textContent"]
    assert_box(element["bbox"], demo.rects["shadow-button"], "shadow button")
    typed = one(demo.turns, "textInput", "shadow-input")
    assert typed["arguments"]["element"]["tagName"] == "INPUT"
    html = blob_bytes(live.platform, live.token, click["page"]).decode()
    assert f'{UID}="{uid_of(click)}"' in html


def test_actions_in_a_same_origin_frame_are_captured_with_their_element(demo, servers):
    base, _ = servers
    clicks = [t for t in browser_turns(demo.turns, "click", "frame-button") if url_of(t).startswith(base)]
    assert len(clicks) == 1, describe(demo.turns)
    element = clicks[0]["arguments"]["element"]
    assert element["tagName"] == "BUTTON"
    assert element["textContent"].strip() == "Frame button"
    # Boxes are in the top-level viewport (what the screenshot shows), so the frame's offset is added.
    assert_box(element["bbox"], demo.rects["frame-button"], "same-origin frame button (top-level coordinates)")
    typed = [t for t in browser_turns(demo.turns, "textInput", "frame-input") if t["arguments"]["text"] == "frame text"]
    assert len(typed) == 1, describe(demo.turns)


def test_actions_in_a_cross_origin_frame_are_captured(demo, servers):
    _, other = servers
    clicks = [t for t in browser_turns(demo.turns, "click", "frame-button") if other in json.dumps(t["arguments"])]
    assert len(clicks) == 1, describe(demo.turns)
    typed = [
        t for t in browser_turns(demo.turns, "textInput", "frame-input") if t["arguments"]["text"] == "x-frame text"
    ]
    assert len(typed) == 1, describe(demo.turns)
    assert_box(clicks[0]["arguments"]["element"]["bbox"], demo.rects["x-frame-button"], "cross-origin frame button")


def test_text_typed_before_clicking_into_a_frame_comes_before_that_click(demo, servers):
    """Typing in one document then clicking in another (a frame): the textInput is flushed by the blur that the
    click causes, but the text was typed first, so it must come first."""
    base, other = servers
    turns = demo.turns
    typed_shadow = turns.index(one(turns, "textInput", "shadow-input"))
    (frame_click,) = [t for t in browser_turns(turns, "click", "frame-button") if url_of(t).startswith(base)]
    (typed_frame,) = [t for t in browser_turns(turns, "textInput", "frame-input") if url_of(t).startswith(base)]
    (xframe_click,) = [t for t in browser_turns(turns, "click", "frame-button") if url_of(t).startswith(other)]
    order = {
        "textInput #shadow-input < click #frame-button": typed_shadow < turns.index(frame_click),
        "textInput #frame-input < click in the x-origin frame": turns.index(typed_frame) < turns.index(xframe_click),
    }
    assert all(order.values()), f"{order}\n{describe(turns)}"


def test_tabs_created_switched_and_removed_carry_their_tab_ids(demo, servers):
    base, _ = servers
    turns = demo.turns
    home = browser_turns(turns, "load")[0]["arguments"]["properties"]["tabId"]
    created = [t["arguments"]["properties"]["tabId"] for t in browser_turns(turns, "tabcreate")]
    assert len(set(created)) == 2, describe(turns)
    assert home not in created, describe(turns)
    removed = [t["arguments"]["properties"]["tabId"] for t in browser_turns(turns, "tabremove")]
    assert removed == created, describe(turns)
    switches = [
        (t["arguments"]["properties"]["tabIdOrigin"], t["arguments"]["properties"]["tabId"])
        for t in browser_turns(turns, "tabswitch")
    ]
    second, third = created
    for pair in ((home, second), (second, home), (home, third), (third, home)):
        assert pair in switches, f"tabswitch {pair} missing: {switches}\n{describe(turns)}"
    # Each new tab loads the second page, and the click in the first new tab is attributed to it.
    for tab in created:
        assert any(tab_of(t) == tab and url_of(t) == base + "/second.html" for t in browser_turns(turns, "load"))
    assert tab_of(one(turns, "click", "second-button")) == second
    # Order: a tab is created before it is switched to, before anything happens in it, and removed after.
    for tab in created:
        order = [t["intent"] for t in turns if t["intent"] in ("tabcreate", "tabswitch") and tab_of(t) == tab]
        assert order[0] == "tabcreate", f"tab {tab}: {order}\n{describe(turns)}"
    index = {id(t): i for i, t in enumerate(turns)}
    created_at = index[id(browser_turns(turns, "tabcreate")[0])]
    removed_at = index[id(browser_turns(turns, "tabremove")[0])]
    assert created_at < index[id(one(turns, "click", "second-button"))] < removed_at


def test_screenshots_decode_at_the_viewport_size(demo, live):
    shas = set()
    for turn in browser_turns(demo.turns):
        metadata = turn["arguments"]["metadata"]
        if turn["intent"] in ELEMENT_INTENTS | {"scroll"}:
            assert (metadata.get("viewportWidth"), metadata.get("viewportHeight")) == VIEWPORT, metadata
        if turn.get("screenshot"):
            shas.add(turn["screenshot"])
        shas.update(frame["screenshot"] for frame in turn.get("frames") or [])
    for turn in browser_turns(demo.turns):
        if needs_screenshot(turn, demo.turns):
            assert turn.get("screenshot"), f"{turn['intent']} at {turn['timestamp']} has none:\n{describe(demo.turns)}"
    for sha in shas:
        with Image.open(io.BytesIO(blob_bytes(live.platform, live.token, sha))) as image:
            image.load()
            assert image.format == "PNG"
            assert image.size == VIEWPORT


def needs_screenshot(turn: dict, turns: list[dict]) -> bool:
    """Every element action and scroll has a screenshot: taken on the user-gesture path, else a spaced or CDP
    retry of the same page, else the tab's last screenshot of that page. Every load and tab switch has one: its
    own (spaced, without a gesture), else a stand-in, the next screenshot of the same tab and URL (a page left at
    once has its state in the screenshot of the action that left it). tabcreate and tabremove have none: a new
    tab shows its page in its load turn, a removed tab shows nothing."""
    return turn["intent"] in ELEMENT_INTENTS | {"scroll", "load", "tabswitch"}


def test_the_password_and_private_data_are_stored_nowhere(demo, live):
    for id_ in ("password", "card"):
        assert one(demo.turns, "textInput", id_)["arguments"]["text"] == "********"
    stored = json.dumps(demo.turns)
    for secret in SECRETS:
        assert secret not in stored
        assert_secret_absent(media_files(live.platform), secret)
    rows = live.platform.manage("dumpdata", "annotation", "--indent", "0")
    assert rows.returncode == 0, rows.stderr
    assert not [secret for secret in SECRETS if secret in rows.stdout]


def test_private_areas_are_blacked_out_in_screenshots(demo, live):
    turn = browser_turns(demo.turns, "click", "agree")[0]
    shas = [turn["screenshot"], *(frame["screenshot"] for frame in turn.get("frames") or [])]
    for sha in shas:
        with Image.open(io.BytesIO(blob_bytes(live.platform, live.token, sha))) as image:
            for id_ in ("password", "private-box"):
                r = demo.rects[id_]
                box = (int(r["x"]) + 2, int(r["y"]) + 2, int(r["x"] + r["width"]) - 2, int(r["y"] + r["height"]) - 2)
                assert image.convert("L").crop(box).getextrema()[1] == 0, f"#{id_} not blacked out in {sha}"
            r = demo.rects["name"]  # a normal field stays visible
            box = (int(r["x"]) + 2, int(r["y"]) + 2, int(r["x"] + r["width"]) - 2, int(r["y"] + r["height"]) - 2)
            assert image.convert("L").crop(box).getextrema()[1] > 0


def assert_secret_absent(paths, secret: str) -> None:
    assert paths
    for path in paths:
        assert not leaks(path.read_bytes(), [secret]), f"{secret!r} found in {path}"


def test_a_tab_switch_in_one_window_names_that_windows_tab_as_origin(demo, browser, live, servers):
    """A person with two windows works in the first one and opens a link in a new tab there: the tabswitch's
    origin is the tab they were on, not the last tab activated in the other window."""
    base, _ = servers
    driver = browser.driver
    home = driver.current_window_handle
    driver.get(base + "/widgets.html")
    driver.switch_to.new_window("window")
    other_window = driver.current_window_handle
    driver.get(base + "/second.html")
    driver.switch_to.window(home)
    name = start_recording(browser, live)
    driver.find_element(By.ID, "title").click()
    pause(0.5)
    driver.find_element(By.ID, "open-tab").click()
    WebDriverWait(driver, 20).until(lambda d: len(d.window_handles) == 3)
    (opened,) = set(driver.window_handles) - {home, other_window}
    driver.switch_to.window(opened)
    wait_for_url(driver, "/second.html")
    pause(1.0)
    turns = stop_and_collect(browser, live, name)
    for handle in (opened, other_window):
        driver.switch_to.window(handle)
        driver.close()
    driver.switch_to.window(home)
    print(f"\n{name}:\n{describe(turns)}")
    home_tab = tab_of(one(turns, "click", "title"))
    (created,) = [t["arguments"]["properties"]["tabId"] for t in browser_turns(turns, "tabcreate")]
    switches = [t["arguments"]["properties"] for t in browser_turns(turns, "tabswitch")]
    assert [(s["tabIdOrigin"], s["tabId"]) for s in switches] == [(home_tab, created)], describe(turns)


def test_the_storage_command_route_chat_and_pause(demo, browser, live, servers):
    """Started and stopped through ``webtasks.command``; a chat turn from the panel; nothing recorded while paused."""
    base, _ = servers
    driver, recorder = browser.driver, browser.recorder
    driver.get(base + "/second.html")
    wait_for_url(driver, "/second.html")
    result = recorder.command("start", recorder.config(task_description="storage route"))
    assert result["ok"], result
    name = wait_until(lambda: (recorder.status().get("session") or {}).get("demoName"), 60, message="demo name")
    assert recorder.send("chat", speaker="instructor", utterance="Press the button, please.")["ok"]
    driver.find_element(By.ID, "title").click()
    pause(0.5)
    assert recorder.send("pause")["ok"]
    pause(0.3)
    driver.find_element(By.ID, "second-button").click()  # not recorded
    driver.find_element(By.ID, "message").click()  # not recorded
    pause(0.5)
    assert recorder.send("resume")["ok"]
    pause(0.3)
    driver.find_element(By.ID, "second-button").click()
    pause(0.5)
    assert recorder.send("chat", speaker="navigator", utterance="Done.")["ok"]
    result = recorder.command("stop")
    assert result["ok"], result
    assert result.get("demoName") in (None, name)
    recorder.wait_idle(120)
    wait_until(
        lambda: api(live.platform, f"/api/recordings/{name}/", live.token)["status"] == "recorded",
        120,
        message="finished",
    )
    turns = stored_turns(live.platform, live.token, name)
    print(f"\n{name}:\n{describe(turns)}")
    summary = [(t["type"], t.get("intent") or t.get("speaker"), element_id(t)) for t in turns]
    assert summary == [
        ("chat", "instructor", None),
        ("browser", "click", "title"),
        ("browser", "click", "second-button"),
        ("chat", "navigator", None),
    ]
    assert [t["utterance"] for t in turns if t["type"] == "chat"] == ["Press the button, please.", "Done."]


# --------------------------------------------------------------------------------------------------------------
# Recovery: a killed service worker, a stopped server


def test_killing_the_service_worker_mid_recording_loses_and_duplicates_nothing(demo, browser, live, servers):
    base, _ = servers
    driver, cdp = browser.driver, browser.cdp
    name = start_recording(browser, live)
    driver.get(base + "/form.html")
    wait_for_url(driver, "/form.html")
    pause(1.0)
    driver.find_element(By.ID, "name").click()
    driver.find_element(By.ID, "name").send_keys("Before")
    pause(0.5)
    assert cdp.kill_service_worker() == 1
    driver.find_element(By.ID, "agree").click()  # wakes the worker up with a capture
    cdp.kill_service_worker()  # right after an action: its capture may be in flight
    pause(1.0)
    choose(driver.find_element(By.ID, "color"), "Green")
    driver.find_element(By.ID, "notes").click()
    driver.find_element(By.ID, "notes").send_keys("after the kill")
    driver.find_element(By.ID, "title").click()
    pause(2.8)  # turns are held FRAME_SETTLE_MS (2.5 s) before upload: kill while some are uploading
    cdp.kill_service_worker()
    driver.find_element(By.ID, "quote").click()  # wakes the worker up again (no navigation)
    pause(1.0)
    driver.find_element(By.ID, "to-second").click()
    wait_for_url(driver, "/second.html")
    pause(1.5)
    turns = stop_and_collect(browser, live, name)
    print(f"\n{name}:\n{describe(turns)}")
    assert_once(
        turns,
        [
            ("load", None, base + "/form.html"),
            ("click", "name", None),
            ("textInput", "name", "Before"),
            ("click", "agree", None),
            ("change", "agree", None),
            ("change", "color", "green"),
            ("click", "notes", None),
            ("textInput", "notes", "after the kill"),
            ("click", "title", None),
            ("click", "quote", None),
            ("click", "to-second", None),
            ("load", None, base + "/second.html"),
        ],
    )


def test_a_link_clicked_while_the_service_worker_is_stopped_is_recorded(demo, browser, live, servers):
    """Chrome stops an idle worker after ~30 s: the next action is often a click on a link, whose page unloads
    while the worker is still starting."""
    base, _ = servers
    driver, cdp = browser.driver, browser.cdp
    name = start_recording(browser, live)
    driver.get(base + "/form.html")
    wait_for_url(driver, "/form.html")
    pause(1.0)
    driver.find_element(By.ID, "notes").click()
    driver.find_element(By.ID, "notes").send_keys("typed before the link")
    pause(0.5)
    assert cdp.kill_service_worker() == 1
    driver.find_element(By.ID, "to-second").click()
    wait_for_url(driver, "/second.html")
    pause(1.5)
    turns = stop_and_collect(browser, live, name)
    print(f"\n{name}:\n{describe(turns)}")
    assert_once(
        turns,
        [
            ("load", None, base + "/form.html"),
            ("click", "notes", None),
            ("textInput", "notes", "typed before the link"),
            ("click", "to-second", None),
            ("load", None, base + "/second.html"),
        ],
    )


def test_a_server_outage_mid_recording_loses_and_duplicates_nothing(demo, browser, live, servers):
    base, _ = servers
    driver = browser.driver
    name = start_recording(browser, live)
    driver.get(base + "/form.html")
    wait_for_url(driver, "/form.html")
    pause(1.0)
    driver.find_element(By.ID, "name").click()
    driver.find_element(By.ID, "name").send_keys("Online")
    pause(3.5)  # the first turns are uploaded
    live.stop()
    try:
        driver.find_element(By.ID, "agree").click()
        choose(driver.find_element(By.ID, "color"), "Blue")
        driver.find_element(By.ID, "notes").click()
        driver.find_element(By.ID, "notes").send_keys("while offline")
        pause(0.5)
        driver.find_element(By.ID, "to-second").click()
        wait_for_url(driver, "/second.html")
        pause(4.0)  # the recorder retries against a closed port
        status = browser.recorder.status()
        assert status["counters"]["queued"] > 0, status
    finally:
        live.start()  # same folder, database and port
    driver.find_element(By.ID, "second-button").click()
    pause(1.0)
    turns = stop_and_collect(browser, live, name, timeout=240)
    print(f"\n{name}:\n{describe(turns)}")
    assert_once(
        turns,
        [
            ("load", None, base + "/form.html"),
            ("click", "name", None),
            ("textInput", "name", "Online"),
            ("click", "agree", None),
            ("change", "agree", None),
            ("change", "color", "blue"),
            ("click", "notes", None),
            ("textInput", "notes", "while offline"),
            ("click", "to-second", None),
            ("load", None, base + "/second.html"),
            ("click", "second-button", None),
        ],
    )


def assert_once(turns, expected) -> None:
    """Client ids unique, and each expected (intent, element id, text/value/url) present exactly once, in order."""
    client_ids = [t["client_id"] for t in turns]
    assert len(client_ids) == len(set(client_ids)), client_ids
    positions, problems = [], []
    for intent, id_, value in expected:
        found = [
            i
            for i, t in enumerate(turns)
            if t.get("intent") == intent
            and (id_ is None or element_id(t) == id_)
            and (value is None or value in (t["arguments"].get("text"), t["arguments"].get("value"), url_of(t)))
        ]
        if len(found) != 1:
            problems.append(f"{intent} #{id_} {value!r}: found {len(found)} times")
        positions += found[:1]
    assert not problems, "\n".join(problems) + f"\nin:\n{describe(turns)}"
    assert positions == sorted(positions), describe(turns)


# --------------------------------------------------------------------------------------------------------------
# Export: the official weblinx package loads what the recorder produced


def test_the_export_loads_and_walks_with_the_weblinx_package(demo, live, tmp_path):
    out = tmp_path / "export"
    result = live.platform.manage("export_dataset", "--format", "weblinx", "--out", str(out), "--status", "all")
    assert result.returncode == 0, result.stdout + result.stderr
    base = str(out / "demonstrations")
    demos = {d.name: d for d in weblinx.list_demonstrations(base)}
    assert demo.name in demos
    for name, loaded in demos.items():
        assert loaded.is_valid(), name
        replay = weblinx.Replay.from_demonstration(loaded)
        assert len(replay) > 0
        for turn in replay:
            if turn.type == "chat":
                assert turn["utterance"], (name, turn.index)
                continue
            assert turn.intent in weblinx_intents()
            assert isinstance(turn.metadata, dict)
            if turn.has_screenshot():
                assert turn.get_screenshot_status() == "good"
                with Image.open(turn.get_screenshot_path()) as image:
                    assert image.size == VIEWPORT
            element = turn.element
            if turn.intent in ELEMENT_INTENTS and turn.has_html() and turn.has_bboxes():
                uid = element["attributes"][UID]
                assert uid in turn.bboxes, (name, turn.index)
                assert f'{UID}="{uid}"' in turn.html, (name, turn.index)
    replay = weblinx.Replay.from_demonstration(demos[demo.name])
    assert len(replay) == len(demo.turns)
    assert [t.intent for t in replay] == [t["intent"] for t in demo.turns]
    for secret in SECRETS:
        assert_secret_absent([p for p in out.rglob("*") if p.is_file()], secret)


def weblinx_intents() -> set:
    return ELEMENT_INTENTS | {"load", "scroll", "tabcreate", "tabremove", "tabswitch"}
