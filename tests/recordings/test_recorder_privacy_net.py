"""Privacy end to end (docs/recorder-privacy.md): every way a value reaches a turn, then every stored byte searched.

The real recorder extension in headless Chromium records into the real platform (uvicorn, Celery, PostgreSQL) on
one form (``fixtures/private-net.html``) holding each kind of private field: a password, a ``data-private`` box
(a text field, a select of secret options, a secret note), and a field and a select matching the configured private
selector ``.pin-field``; beside them a plain field. Two recordings:

- chat mode with the tab video: the secrets typed into each private field, copied from one and pasted into two
  others, chosen in both private selects (change), the form submitted;
- step mode with MHTML snapshots: a step on a page without private fields (its snapshot is kept), then Type into
  each private field, Select in both private selects, Type into the plain field, Press Enter and Click to submit.

Each private value is masked in its turn (``********``) while the page itself got the real one; the plain field's
text is recorded as typed. Then no secret — typed, pasted, chosen, or the page's own private text — is in any form
(UTF-8, UTF-16, base64; inside gzip and MHTML parts) in: every column of every table of the platform's database,
every file under its folder (blobs, logs), the WebLINX and Mind2Web exports made by the export job and downloaded
through the API, and the API's answers (recordings, turns, video, every blob). Every screenshot and the video's last
frame show each private area black.
"""

import io
import json
import tarfile
import urllib.error

import psycopg
import pytest
from PIL import Image
from selenium.webdriver.common.by import By

from tests.support.recorder_browser import (
    ALLOWLIST,
    ANIMATE,
    VIEWPORT,
    Browser,
    Panel,
    browser_turns,
    choose,
    content_in_step_mode,
    describe,
    element_id,
    first_video_run,
    frame_area,
    inset,
    key_chord,
    last_video_frame,
    op_button,
    pause,
    screenshots_of,
    select,
    start_recording,
    stop_and_collect,
    url_of,
    wait_for_url,
)
from tests.support.recorder_harness import api, create_member, extension_browser, http_get, leaks, live_platform
from tests.support.waits import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PROJECT = "privacy-net"
PAGE = "/private-net.html"
PRIVATE_SELECTORS = [".pin-field"]
PASSWORD = "Pw0rd-Zebra-7731"  # typed into the password field
PRIVATE = "Pr1v-Okapi-5519"  # typed into the data-private box's field
PIN = "Pin-Quokka-2468"  # typed into the field of the configured selector
PAGE_SECRETS = ("Note-Lemur-6060", "Opt-Narwhal-9087", "Opt-Tapir-3141")  # the page's own private text and options
SECRETS = (PASSWORD, PRIVATE, PIN, *PAGE_SECRETS)
PLAIN = "Plain-Visible-Name"  # typed into the plain field: recorded as typed
MASK = "********"
PRIVATE_AREAS = ("pw", "private-box", "pin", "pin-select")
YELLOW = (0xF0, 0xC0, 0x40)  # the plain field's background


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("privacy-net-var"), "privnet", "net-annotator", PROJECT) as running:
        yield running


@pytest.fixture(scope="module")
def researcher(live) -> str:
    return create_member(live.platform, "net-researcher", PROJECT, "researcher")


@pytest.fixture(scope="module")
def browser(live):
    with extension_browser(live, PROJECT, extra_args=(ALLOWLIST,)) as (driver, cdp, recorder):
        yield Browser(driver, cdp, recorder)


def open_page(driver, base: str) -> dict:
    """The fixture page, loaded; the areas of its fields (tab-viewport CSS px; the page never scrolls)."""
    driver.get(base + PAGE)
    wait_for_url(driver, PAGE)
    return {name: driver.find_element(By.ID, name).rect for name in (*PRIVATE_AREAS, "user")}


def value_of(driver, element_id: str) -> str:
    return driver.find_element(By.ID, element_id).get_property("value")


def video_chunks(recorder) -> int:
    return (recorder.status().get("counters") or {}).get("videoChunks", 0)


@pytest.fixture(scope="module")
def chat(browser, live, servers):
    """Typing, copy and paste, change and submit on every private field, with the tab video; (name, turns, areas)."""
    base, _ = servers
    driver, recorder = browser.driver, browser.recorder
    areas = open_page(driver, base)
    driver.execute_script(ANIMATE)  # tab capture yields frames on repaints only
    name = start_recording(browser, live, video=True, privateSelectors=PRIVATE_SELECTORS)
    wait_until(lambda: (recorder.status().get("video") or {}).get("recording"), 60, message="the tab video")
    find = driver.find_element
    for field, text in (("user", PLAIN), ("pw", PASSWORD), ("private-field", PRIVATE), ("pin", PIN)):
        find(By.ID, field).click()
        find(By.ID, field).send_keys(text)
        pause()
    # Copy the PIN (a private field: the copy is masked), paste it over the password and into the private field.
    key_chord(driver, "a")
    key_chord(driver, "c")
    for field in ("pw", "private-field"):
        find(By.ID, field).click()
        key_chord(driver, "a")
        key_chord(driver, "v")
        pause()
    assert (value_of(driver, "pw"), value_of(driver, "private-field")) == (PIN, PIN), "the paste reached the page"
    choose(find(By.ID, "private-select"), "Opt-Narwhal-9087")
    choose(find(By.ID, "pin-select"), "Opt-Tapir-3141")
    pause()
    find(By.ID, "submit").click()
    wait_until(lambda: find(By.ID, "submitted").text == "1", 20, message="the form submitted")
    chunks = video_chunks(recorder)  # frames of the page as it is now: every secret typed
    wait_until(lambda: video_chunks(recorder) >= chunks + 2, 60, message="video after the last action")
    turns = stop_and_collect(browser, live, name)
    print(f"\n{name}:\n{describe(turns)}")
    return name, turns, areas


def type_step(driver, panel: Panel, field: str, text: str, private: bool) -> None:
    select(driver, panel, field)
    kind = "password" if private else "text"
    assert panel.js("document.getElementById('step-type-value').type") == kind, "the panel hides a private text"
    panel.operate(
        f"document.getElementById('step-type-value').value = {json.dumps(text)};"
        "document.getElementById('step-type-form').requestSubmit()"
    )
    wait_until(lambda: value_of(driver, field) == text, 30, message=f"{text} typed into #{field}")


def select_step(driver, panel: Panel, field: str, value: str) -> None:
    select(driver, panel, field)
    panel.operate(
        f"document.getElementById('step-select-value').value = {json.dumps(value)};"
        "document.getElementById('step-select-form').requestSubmit()"
    )
    wait_until(lambda: value_of(driver, field) == value, 30, message=f"{value} chosen in #{field}")


@pytest.fixture(scope="module")
def step(chat, browser, live, servers):
    """Step mode with MHTML snapshots: a step on a page without private fields, then Type and Select on every
    private field, Type on the plain one, Press Enter and Click to submit; (name, turns, areas)."""
    base, _ = servers
    driver, recorder = browser.driver, browser.recorder
    name = start_recording(browser, live, step=True, mhtml=True, mode="task", privateSelectors=PRIVATE_SELECTORS)
    panel = Panel(recorder)
    assert wait_until(lambda: not panel.quietly("document.getElementById('step').hidden"), 30, message="step UI")
    driver.get(base + "/second.html")
    wait_until(lambda: content_in_step_mode(driver), 30, message="step mode on the page without private fields")
    select(driver, panel, "title")
    panel.operate(op_button("click"))
    areas = open_page(driver, base)
    wait_until(lambda: content_in_step_mode(driver), 30, message="step mode on the private page")
    type_step(driver, panel, "pw", PASSWORD, private=True)
    type_step(driver, panel, "private-field", PRIVATE, private=True)
    type_step(driver, panel, "pin", PIN, private=True)
    select_step(driver, panel, "private-select", "Opt-Narwhal-9087")
    select_step(driver, panel, "pin-select", "Opt-Tapir-3141")
    type_step(driver, panel, "user", PLAIN, private=False)
    select(driver, panel, "user")
    panel.operate(op_button("enter"))
    wait_until(lambda: driver.find_element(By.ID, "submitted").text == "1", 30, message="Press Enter submitted")
    select(driver, panel, "submit")
    panel.operate(op_button("click"))
    wait_until(lambda: driver.find_element(By.ID, "submitted").text == "2", 30, message="the click submitted")
    turns = stop_and_collect(browser, live, name)
    print(f"\n{name}:\n{describe(turns)}")
    return name, turns, areas


@pytest.fixture(scope="module")
def recorded(chat, step) -> dict:
    """Both recordings, by name: (turns, areas)."""
    return {name: (turns, areas) for name, turns, areas in (chat, step)}


def steps(turns: list[dict]) -> list[tuple]:
    """(intent, stepOp, element id, text/value/pasted/selected) of each browser turn that acted on an element."""
    out = []
    for turn in browser_turns(turns):
        args = turn["arguments"]
        value = next((args[k] for k in ("text", "value", "pasted", "selected") if k in args), None)
        if "element" in args:
            out.append((turn["intent"], (args.get("properties") or {}).get("stepOp"), element_id(turn), value))
    return out


# --------------------------------------------------------------------------------------------------------------
# What the turns say


def test_typed_pasted_copied_and_chosen_private_values_are_masked_in_chat_mode(chat):
    _, turns, _ = chat
    acted = steps(turns)
    typed = {(intent, field, value) for intent, _, field, value in acted if intent in ("textInput", "paste", "change")}
    assert typed == {
        ("textInput", "user", PLAIN),
        ("textInput", "pw", MASK),
        ("textInput", "private-field", MASK),
        ("textInput", "pin", MASK),
        ("paste", "pw", MASK),
        ("paste", "private-field", MASK),
        ("change", "private-select", MASK),
        ("change", "pin-select", MASK),
    }, describe(turns)
    assert [value for intent, _, _, value in acted if intent == "copy"] == [MASK], describe(turns)
    assert [field for intent, _, field, _ in acted if intent == "submit"] == ["login"], describe(turns)


def test_step_mode_type_and_select_on_private_elements_record_the_mask(step):
    _, turns, _ = step
    acted = [s for s in steps(turns) if s[1] in ("TYPE", "SELECT", "ENTER")]
    assert acted == [
        ("textInput", "TYPE", "pw", MASK),
        ("textInput", "TYPE", "private-field", MASK),
        ("textInput", "TYPE", "pin", MASK),
        ("change", "SELECT", "private-select", MASK),
        ("change", "SELECT", "pin-select", MASK),
        ("textInput", "TYPE", "user", PLAIN),
        ("submit", "ENTER", "user", None),
    ], describe(turns)
    chosen = [t["arguments"]["properties"].get("optionText") for t in browser_turns(turns, "change")]
    assert chosen == [MASK, MASK]


def test_an_mhtml_snapshot_is_kept_only_of_a_page_without_private_fields(step):
    _, turns, _ = step
    kept = [
        (element_id(t), url_of(t).endswith(PAGE), bool(t["arguments"]["properties"].get("mhtml")))
        for t in browser_turns(turns)
        if (t["arguments"].get("properties") or {}).get("stepOp")
    ]
    assert kept[0] == ("title", False, True), "the page without private fields has its snapshot"
    assert kept[1:] == [(field, True, False) for field, _, _ in kept[1:]], kept
    assert len(kept) == 9, kept


# --------------------------------------------------------------------------------------------------------------
# Pixels


def test_every_screenshot_shows_every_private_area_black(recorded, live):
    checked = 0
    for name, (turns, areas) in recorded.items():
        on_page = [t for t in browser_turns(turns) if url_of(t).endswith(PAGE)]
        for sha, where in screenshots_of(on_page).items():
            with Image.open(io.BytesIO(http_get(live.platform, f"/api/blobs/{sha}", live.token))) as image:
                image.load()
                assert image.size == VIEWPORT
                gray = image.convert("L")
                for area in PRIVATE_AREAS:
                    brightest = gray.crop(inset(areas[area])).getextrema()[1]
                    assert brightest == 0, f"#{area} shows in the {where} of {name}"
                plain = image.convert("RGB").crop(inset(areas["user"], 6)).getcolors(maxcolors=1 << 16)
                assert max(plain)[1] == YELLOW, f"the plain field is not shown in the {where} of {name}"
            checked += 1
    assert checked >= 15, checked


def test_the_videos_last_frame_shows_every_private_area_black(chat, live):
    name, _, areas = chat
    frame = last_video_frame(first_video_run(live, name))  # after the last action: every secret typed
    for private in PRIVATE_AREAS:
        assert frame_area(frame, areas[private], 4).convert("L").getextrema()[1] < 40, f"#{private} shows in the video"
    plain = frame_area(frame, areas["user"], 6).resize((1, 1)).getpixel((0, 0))
    assert all(abs(a - b) < 40 for a, b in zip(plain, YELLOW, strict=True)), plain


# --------------------------------------------------------------------------------------------------------------
# Every stored byte


def test_no_secret_in_any_column_of_any_table(recorded, live):
    assert live.database_url, "the platform runs on PostgreSQL (DATABASE_URL)"
    found, rows = {}, 0
    with psycopg.connect(live.database_url) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
            "AND table_type = 'BASE TABLE' ORDER BY table_name"
        ).fetchall()
        for (table,) in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                rows += 1
                for value in row:
                    if leaked := leaks(as_bytes(value), SECRETS):
                        found.setdefault(table, set()).update(leaked)
    assert found == {}
    assert rows > 100, rows


def as_bytes(value) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False).encode()
    return str(value).encode()


def test_no_secret_in_any_file_the_platform_stored(recorded, live):
    files = [path for path in live.platform.var_dir.rglob("*") if path.is_file()]
    assert sum(1 for path in files if "blobs" in path.parts) >= 30, files
    assert {str(path): leaked for path in files if (leaked := leaks(path.read_bytes(), SECRETS))} == {}


def test_no_secret_in_the_api_answers(recorded, live):
    paths = [f"/api/recordings/?project__name={PROJECT}", f"/api/demonstrations/?project__name={PROJECT}"]
    blobs = {}
    for name, (turns, _) in recorded.items():
        paths += [f"/api/recordings/{name}/", f"/api/recordings/{name}/turns/", f"/api/recordings/{name}/video/"]
        for turn in browser_turns(turns):
            for kind in ("screenshot", "page", "bboxes"):
                if turn.get(kind):
                    blobs[turn[kind]] = kind
            for frame in turn.get("frames") or []:
                blobs[frame["screenshot"]] = "screenshot"
            if mhtml := (turn["arguments"].get("properties") or {}).get("mhtml"):
                blobs[mhtml] = "mhtml"
        for chunk in api(live.platform, f"/api/recordings/{name}/video/", live.token):
            blobs[chunk["blob"]] = "video"
    answers = {path: http_get(live.platform, path, live.token) for path in paths}
    unreadable = []
    for sha, kind in blobs.items():
        try:
            answers[f"{kind} {sha}"] = http_get(live.platform, f"/api/blobs/{sha}", live.token)
        except urllib.error.HTTPError as error:
            unreadable.append((kind, error.code))
    assert unreadable == [], "every blob a turn refers to is readable by its recorder"
    assert set(blobs.values()) >= {"screenshot", "page", "bboxes", "mhtml", "video"}
    assert {where: leaked for where, data in answers.items() if (leaked := leaks(data, SECRETS))} == {}


@pytest.mark.parametrize("export_format", ["weblinx", "mind2web"])
def test_no_secret_in_the_exports(recorded, live, researcher, export_format):
    body = {"project": PROJECT, "format": export_format, "statuses": ["recorded"]}
    job = api(live.platform, "/api/exports/", researcher, body)
    done = wait_until(
        lambda: (
            (j := api(live.platform, f"/api/exports/{job['id']}/", researcher))["status"] in ("done", "failed") and j
        ),
        180,
        interval=0.5,
        message=f"the {export_format} export",
    )
    assert done["status"] == "done", done
    archive = http_get(live.platform, f"/api/exports/{job['id']}/download/", researcher)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar if m.isfile() or m.islnk()}
    if export_format == "weblinx":
        names = " ".join(members)
        assert all(name in names for name in recorded), f"both recordings exported: {sorted(members)[:20]}"
    else:
        splits = [data for name, data in members.items() if name.endswith(".json") and "/task/" not in name]
        records = [record for data in splits if isinstance(rows := json.loads(data), list) for record in rows]
        assert len(records) == 2, f"both recordings exported: {sorted(members)}"
        typed = [a["operation"] for r in records for a in r["actions"] if a["operation"]["op"] == "TYPE"]
        assert {op["value"] for op in typed} == {MASK, PLAIN}, typed
        assert any(name.endswith("_before.mhtml") for name in members), "the kept snapshot is exported"
    assert {name: leaked for name, data in members.items() if (leaked := leaks(data, SECRETS))} == {}
    assert not leaks(json.dumps(done).encode(), SECRETS)
