"""Step mode's raw dump end to end (issue 39): the real extension in headless Chromium records the tab's traffic as
HAR 1.2 and a DOM snapshot before each step, on a site of the test's own with dynamic content (data fetched after
load and on a click, with an ``Authorization`` header), a redirect, cookies, and a sign-in form with a password posted
to the site. Three flows in one project. Traffic is stored (requests, bodies, the redirects; the page loaded after
the start is in the first step's HAR), no cookie or credential and no password in any stored byte or in the
Mind2Web export, which holds each task's raw dump."""

import json
import urllib.parse

import pytest

from annotation.lib.splits import MIND2WEB_SPLITS
from tests.support.recorder_browser import Browser, Panel, start_recording, stop_and_collect
from tests.support.recorder_harness import (
    blob_bytes,
    create_member,
    exported_files,
    extension_browser,
    leaks,
    live_platform,
)
from tests.support.step_site import click_step, page_ready, serve_sign_in, stored_steps, text_of, type_step
from tests.support.waits import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PROJECT = "step-traffic"
PASSWORD = "Qv8 trAffic&pass=Heron!"
COOKIE = "Cookie-Otter-9931"  # the site's session cookie (Set-Cookie, then Cookie on every request)
BEARER = "Bearer-Walrus-5120"  # the Authorization header the page's script sends (put together there: no page has it)
SECRETS = [PASSWORD, COOKIE, BEARER]


@pytest.fixture(scope="module")
def site():
    with serve_sign_in(BEARER, {"Set-Cookie": f"sid={COOKIE}; Path=/"}) as running:
        yield running


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("step-traffic-var"), "steptraffic", "traffic-ann", PROJECT) as running:
        yield running


def record_flow(browser: Browser, live, base: str) -> str:
    """Shop (items fetched after load): Click More (an XHR), Click Sign in (a redirect); the form: Type the name and
    the password, Click Sign in (a POST, a redirect); the welcome page (its profile fetched after load): Click Done."""
    driver = browser.driver
    driver.get(base + "/shop.html")
    name = start_recording(browser, live, step=True, mhtml=True, mode="task")
    panel = Panel(browser.recorder)
    wait_until(lambda: not panel.quietly("document.getElementById('step').hidden"), 30, message="the step panel")
    driver.get(base + "/shop.html?again=1")  # a load after the start, before the first selection
    page_ready(driver, "/shop.html", "items")
    wait_until(lambda: "Blue shoe" in text_of(driver, "items"), 30, message="items fetched")
    click_step(driver, panel, "more")
    wait_until(lambda: text_of(driver, "more-out") == "Green shoe", 30, message="more fetched")
    click_step(driver, panel, "to-login")
    page_ready(driver, "/login.html", "login")
    type_step(driver, panel, "user", "Ann")
    type_step(driver, panel, "pw", PASSWORD)
    click_step(driver, panel, "submit")
    page_ready(driver, "/welcome", "profile", "Profile of Ann")
    click_step(driver, panel, "done")
    stop_and_collect(browser, live, name)
    return name


@pytest.fixture(scope="module")
def recorded(live, site) -> list[str]:
    with extension_browser(live, PROJECT) as (driver, cdp, recorder):
        browser = Browser(driver, cdp, recorder)
        return [record_flow(browser, live, site.base) for _ in range(3)]


def test_the_site_got_each_password(recorded, site):
    assert [body["pw"] for body in site.posted] == [[PASSWORD]] * 3


def test_each_step_keeps_the_traffic_since_the_step_before(recorded, live):
    for name in recorded:
        steps = stored_steps(live.platform, live.token, name)
        assert len(steps) == 6, [turn["intent"] for turn in steps]
        assert all(turn["har"] for turn in steps), "every step has traffic, the first too"
        first = json.loads(blob_bytes(live.platform, live.token, steps[0]["har"]))["log"]["entries"]
        loaded = {urllib.parse.urlsplit(e["request"]["url"]).path: e for e in first}
        assert loaded["/shop.html"]["request"]["queryString"] == [{"name": "again", "value": "1"}]
        assert "<h1>Shop</h1>" in loaded["/shop.html"]["response"]["content"]["text"]
        assert json.loads(loaded["/api/items"]["response"]["content"]["text"]) == {"items": ["Red shoe", "Blue shoe"]}
        logs = [json.loads(blob_bytes(live.platform, live.token, turn["har"]))["log"] for turn in steps if turn["har"]]
        entries = [entry for log in logs for entry in log["entries"]]
        assert {log["version"] for log in logs} == {"1.2"}
        by_path = {urllib.parse.urlsplit(e["request"]["url"]).path: e for e in entries}
        more = by_path["/api/more"]
        assert json.loads(more["response"]["content"]["text"]) == {"more": "Green shoe"}
        assert more["request"]["queryString"] == [{"name": "page", "value": "2"}]
        assert by_path["/go-login"]["response"]["status"] == 302
        assert by_path["/go-login"]["response"]["redirectURL"].endswith("/login.html")
        sign_in = by_path["/login"]
        assert (sign_in["request"]["method"], sign_in["response"]["status"]) == ("POST", 303)
        assert sign_in["request"]["postData"]["text"] == "", "sent from a page with a private field: no body"
        assert json.loads(by_path["/api/profile"]["response"]["content"]["text"]) == {"name": "Profile of Ann"}
        names = {
            header["name"].lower() for e in entries for part in ("request", "response") for header in e[part]["headers"]
        }
        assert names.isdisjoint({"cookie", "set-cookie", "authorization"}), names
        assert all(e[part]["cookies"] == [] for e in entries for part in ("request", "response"))


def test_dom_snapshots_are_kept_before_steps_on_pages_without_private_fields(recorded, live):
    for name in recorded:
        steps = stored_steps(live.platform, live.token, name)
        kept = [bool(turn["dom_snapshot"]) for turn in steps]
        assert kept == [True, True, False, False, False, True], kept
        snapshot = json.loads(blob_bytes(live.platform, live.token, steps[0]["dom_snapshot"]))
        assert snapshot["format"] == "webtasks-dom-snapshot/1"
        assert "display" in snapshot["computedStyles"]
        assert "Blue shoe" in snapshot["strings"], "the items fetched after load are in the DOM before the step"
        assert snapshot["documents"][0]["layout"]["bounds"]


def test_no_secret_in_any_stored_byte(recorded, live):
    files = [path for path in live.platform.var_dir.rglob("*") if path.is_file()]
    assert sum(1 for path in files if "blobs" in path.parts) >= 30, len(files)
    assert {str(path): found for path in files if (found := leaks(path.read_bytes(), SECRETS))} == {}


def test_the_mind2web_export_holds_each_tasks_raw_dump_and_no_secret(recorded, live):
    researcher = create_member(live.platform, "traffic-researcher", PROJECT, "researcher")
    files = exported_files(live.platform, researcher, PROJECT, "mind2web")
    assert {name: found for name, data in files.items() if (found := leaks(data, SECRETS))} == {}
    records = [record for split in MIND2WEB_SPLITS for record in json.loads(files.get(f"{split}.json", b"[]"))]
    assert len(records) == 3
    manifest = json.loads(files["manifest.json"])["files"]
    quality = {item["id"]: item["raw_dump"] for item in json.loads(files["quality.json"])["items"]}
    for record in records:
        raw = quality[record["annotation_id"]]
        assert raw["har_entries"] >= 6
        assert raw["dom_snapshots"] == 3
        for path in (raw["har"], raw["dom_content"], raw["trace"]):
            assert path in manifest
        trace = json.loads(files[raw["trace"]])
        assert [step["operation"]["op"] for step in trace["steps"]] == [
            "CLICK",
            "CLICK",
            "TYPE",
            "TYPE",
            "CLICK",
            "CLICK",
        ]
        assert trace["steps"][3]["operation"]["value"] == "********"
        log = json.loads(files[raw["har"]])["log"]
        assert any(entry["request"]["url"].endswith("/api/profile") for entry in log["entries"])
