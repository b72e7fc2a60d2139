"""WebLINX traffic as a project setting (issue 39, item 1): the real extension in headless Chromium records plain
(WebLINX) demonstrations. In a project whose admin set ``record_traffic`` (through the project API), each action turn
keeps the tab's traffic since the one before as HAR 1.2 (data fetched after load and on a click with an
``Authorization`` header, a redirect, a sign-in form posting a password), readable through the API; no credential
and no typed password in any stored byte. In a project without the setting, no turn keeps a HAR. Three flows in the
project with it on, one with it off. The WebLINX export puts each turn's HAR beside what the official ``weblinx``
package reads (``traffic/<turn index>.har``, named in the manifest), and the package still loads every demo."""

import json
import urllib.error
import urllib.parse

import pytest
import weblinx
from selenium.webdriver.common.by import By

from tests.support.recorder_browser import Browser, pause, start_recording, stop_and_collect, wait_for_url
from tests.support.recorder_harness import (
    api,
    blob_bytes,
    create_member,
    exported_files,
    extension_browser,
    leaks,
    live_platform,
    stored_turns,
)
from tests.support.step_site import serve_sign_in, text_of
from tests.support.waits import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PROJECT = "weblinx-traffic"
QUIET = "weblinx-quiet"  # the setting off
USER = "wtraffic-ann"
PASSWORD = "Wx9 lInx&pass=Ibis!"
BEARER = "Bearer-Marten-3307"  # the Authorization header the page's script sends (put together there)
SECRETS = [PASSWORD, BEARER]


@pytest.fixture(scope="module")
def site():
    with serve_sign_in(BEARER) as running:
        yield running


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("weblinx-traffic-var"), "wlxtraffic", USER, PROJECT) as running:
        create_member(running.platform, USER, QUIET)
        running.admin = create_member(running.platform, "wtraffic-admin", PROJECT, "admin")
        yield running


def set_traffic(live, value) -> dict:
    return api(live.platform, f"/api/projects/{PROJECT}/", live.admin, {"record_traffic": value}, method="PATCH")


def record_flow(browser: Browser, live, base: str) -> str:
    """Shop (items fetched after load): More (an XHR), Sign in (a redirect); the form: the name, the password,
    Sign in (a POST, a redirect); the welcome page (its profile fetched after load): Done."""
    driver = browser.driver
    driver.get(base + "/shop.html")
    wait_until(lambda: "Blue shoe" in text_of(driver, "items"), 30, message="items fetched")
    name = start_recording(browser, live)
    pause(1.0)
    driver.find_element(By.ID, "more").click()
    wait_until(lambda: text_of(driver, "more-out") == "Green shoe", 30, message="more fetched")
    pause()
    driver.find_element(By.ID, "to-login").click()
    wait_for_url(driver, "/login.html")
    pause(1.0)
    driver.find_element(By.ID, "user").click()
    driver.find_element(By.ID, "user").send_keys("Ann")
    pause()
    driver.find_element(By.ID, "pw").click()
    driver.find_element(By.ID, "pw").send_keys(PASSWORD)
    pause()
    driver.find_element(By.ID, "submit").click()
    wait_for_url(driver, "/welcome")
    wait_until(lambda: text_of(driver, "profile") == "Profile of Ann", 30, message="profile fetched")
    pause(1.0)
    driver.find_element(By.ID, "done").click()
    pause(1.0)
    stop_and_collect(browser, live, name)
    return name


@pytest.fixture(scope="module")
def recorded(live, site) -> dict:
    """``{"on": [three demo names], "off": [one]}``."""
    assert set_traffic(live, True)["record_traffic"] is True
    names = {}
    with extension_browser(live, PROJECT) as (driver, cdp, recorder):
        names["on"] = [record_flow(Browser(driver, cdp, recorder), live, site.base) for _ in range(3)]
    with extension_browser(live, QUIET) as (driver, cdp, recorder):
        names["off"] = [record_flow(Browser(driver, cdp, recorder), live, site.base)]
    return names


def actions_of(live, name: str) -> list[dict]:
    turns = stored_turns(live.platform, live.token, name)
    return [turn for turn in turns if turn["type"] == "browser" and turn["intent"] != "load"]


def entries_of(live, turns) -> list[dict]:
    logs = [json.loads(blob_bytes(live.platform, live.token, turn["har"]))["log"] for turn in turns if turn["har"]]
    assert {log["version"] for log in logs} == {"1.2"}
    return [entry for log in logs for entry in log["entries"]]


def patch_status(live, token: str, body: dict) -> tuple[int, dict]:
    try:
        return 200, api(live.platform, f"/api/projects/{PROJECT}/", token, body, method="PATCH")
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_the_setting_is_off_by_default_and_only_admins_change_it(live):
    listed = {p["name"]: p for p in api(live.platform, "/api/projects/", live.token)["results"]}
    assert listed[QUIET]["record_traffic"] is False
    assert patch_status(live, live.token, {"record_traffic": True})[0] == 403  # an annotator
    status, refused = patch_status(live, live.admin, {"record_traffic": "yes"})
    assert (status, [e["field"] for e in refused["errors"]]) == (400, ["record_traffic"])


def test_the_site_got_each_password(recorded, site):
    assert [body["pw"] for body in site.posted] == [[PASSWORD]] * 4


def test_action_turns_keep_the_tabs_traffic_readable_through_the_api(recorded, live):
    for name in recorded["on"]:
        assert api(live.platform, f"/api/recordings/{name}/", live.token)["record_traffic"] is True
        turns = actions_of(live, name)
        assert sum(1 for turn in turns if turn["har"]) >= 3, [(t["intent"], bool(t["har"])) for t in turns]
        by_path = {urllib.parse.urlsplit(e["request"]["url"]).path: e for e in entries_of(live, turns)}
        assert json.loads(by_path["/api/more"]["response"]["content"]["text"]) == {"more": "Green shoe"}
        assert by_path["/go-login"]["response"]["status"] == 302
        assert by_path["/go-login"]["response"]["redirectURL"].endswith("/login.html")
        sign_in = by_path["/login"]
        assert (sign_in["request"]["method"], sign_in["response"]["status"]) == ("POST", 303)
        assert sign_in["request"]["postData"]["text"] == "", "sent from a page with a private field: no body"
        assert json.loads(by_path["/api/profile"]["response"]["content"]["text"]) == {"name": "Profile of Ann"}
        entries = list(by_path.values())
        names = {h["name"].lower() for e in entries for part in ("request", "response") for h in e[part]["headers"]}
        assert names.isdisjoint({"cookie", "set-cookie", "authorization"}), names
        assert all(e[part]["cookies"] == [] for e in entries for part in ("request", "response"))


def test_without_the_setting_no_turn_keeps_traffic(recorded, live):
    for name in recorded["off"]:
        assert api(live.platform, f"/api/recordings/{name}/", live.token)["record_traffic"] is False
        turns = actions_of(live, name)
        assert len(turns) >= 5
        assert [turn["har"] for turn in turns] == [None] * len(turns)


def test_no_secret_in_any_stored_byte(recorded, live):
    files = [path for path in live.platform.var_dir.rglob("*") if path.is_file()]
    assert {str(path): found for path in files if (found := leaks(path.read_bytes(), SECRETS))} == {}


def test_the_weblinx_export_carries_the_traffic_beside_and_the_package_still_loads_it(recorded, live, tmp_path):
    researcher = create_member(live.platform, "wtraffic-researcher", PROJECT, "researcher")
    files = exported_files(live.platform, researcher, PROJECT, "weblinx")
    assert {name: found for name, data in files.items() if (found := leaks(data, SECRETS))} == {}
    manifest = json.loads(files["manifest.json"])["files"]
    for path, data in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(data)
    demos = {demo.name: demo for demo in weblinx.list_demonstrations(str(tmp_path / "demonstrations"))}
    assert set(demos) == set(recorded["on"])
    for name in recorded["on"]:
        replay = weblinx.Replay.from_demonstration(demos[name])
        assert demos[name].is_valid()
        assert replay.validate_turns()
        traffic = sorted(path for path in manifest if path.startswith(f"demonstrations/{name}/traffic/"))
        assert len(traffic) >= 3, traffic
        for path in traffic:
            index = int(path.rsplit("/", 1)[1].removesuffix(".har"))
            assert replay[index].type == "browser"
            assert json.loads(files[path])["log"]["version"] == "1.2"
