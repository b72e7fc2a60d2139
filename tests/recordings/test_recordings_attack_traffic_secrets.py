"""Attacks on WebLINX traffic's privacy (``record_traffic``, docs/recorder-privacy.md) with the real extension in
headless Chromium: a sign-in page whose script posts the typed password as JSON and as multipart, and a page
without private fields whose script sends credentials in URL parameters (``token``, ``api_key``, ``jwt``,
``password``), a form-encoded body, a JSON body and a multipart body, with an ``X-Api-Key`` header. None of the
secrets is in any stored byte, nor in the WebLINX export (lib/har.js masks secret-named fields in JSON, multipart
and form bodies)."""

import json

import pytest
from selenium.webdriver.common.by import By

from tests.support.recorder_browser import Browser, pause, start_recording, stop_and_collect
from tests.support.recorder_harness import api, create_member, exported_files, extension_browser, leaks, live_platform
from tests.support.step_site import serve, text_of
from tests.support.waits import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PROJECT = "traffic-secrets"
USER = "tsecrets-ann"
TYPED = "Kq7 Osprey&pw=Wren!"  # typed into the password field
# Put together by the pages' scripts at run time (never whole in the page's bytes).
PARTS = {
    "token": ["Tok", "Falcon", "5521"],
    "api_key": ["Key", "Plover", "8830"],
    "jwt": ["eyJhbGciOi", "Stint", "2291"],
    "password": ["Pw", "Godwit", "4471"],
    "form": ["Form", "Dunlin", "1180"],
    "json": ["Json", "Knot", "6620"],
    "multi": ["Multi", "Sanderling", "3390"],
    "header": ["Hdr", "Turnstone", "7741"],
}
SECRETS = [TYPED, *("-".join(parts) for parts in PARTS.values())]

SIGN_IN = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in</title></head><body>
<p><label>Name <input id="user" name="user" autocomplete="off"></label></p>
<p><label>Password <input id="pw" name="pw" type="password" autocomplete="off"></label></p>
<p><button id="json" type="button">Sign in (JSON)</button> <button id="multi" type="button">Sign in (form)</button>
<span id="out"></span></p>
<script>
const pw = () => document.getElementById("pw").value;
const done = (what) => () => { document.getElementById("out").textContent = what; };
document.getElementById("json").onclick = () => fetch("/api/login-json", {method: "POST",
  headers: {"Content-Type": "application/json"}, body: JSON.stringify({user: "Ann", password: pw()})})
  .then(done("json"));
document.getElementById("multi").onclick = () => { const f = new FormData(); f.append("user", "Ann");
  f.append("password", pw()); fetch("/api/login-multi", {method: "POST", body: f}).then(done("multi")); };
</script></body></html>"""

API_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Data</title></head><body>
<p><button id="go" type="button">Load</button> <span id="out"></span></p>
<script>
const P = __PARTS__;
const s = (k) => P[k].join("-");
document.getElementById("go").onclick = async () => {
  await fetch("/api/data?q=shoes&token=" + s("token") + "&api_key=" + s("api_key") + "&jwt=" + s("jwt")
    + "&password=" + s("password"), {headers: {"X-Api-Key": s("header")}});
  await fetch("/api/form", {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"},
    body: "user=Ann&password=" + encodeURIComponent(s("form"))});
  await fetch("/api/json", {method: "POST", headers: {"Content-Type": "application/json"},
    body: JSON.stringify({user: "Ann", api_key: s("json"), nested: {token: s("json")}})});
  const f = new FormData(); f.append("access_token", s("multi"));
  await fetch("/api/multi", {method: "POST", body: f});
  document.getElementById("out").textContent = "loaded";
};
</script></body></html>""".replace("__PARTS__", json.dumps(PARTS))

PAGES = {"/sign-in.html": SIGN_IN, "/data.html": API_PAGE}
ANSWERS = {"/api/data": {"items": ["Red shoe"]}, "/api/ok": {"ok": True}}


@pytest.fixture(scope="module")
def site():
    with serve(PAGES, ANSWERS, {}, "/api/ok") as running:
        yield running


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("traffic-secrets-var"), "tsecrets", USER, PROJECT) as running:
        running.admin = create_member(running.platform, "tsecrets-admin", PROJECT, "admin")
        path = f"/api/projects/{PROJECT}/"
        assert api(running.platform, path, running.admin, {"record_traffic": True}, method="PATCH")["record_traffic"]
        yield running


@pytest.fixture(scope="module")
def recorded(live, site) -> str:
    with extension_browser(live, PROJECT) as (driver, cdp, recorder):
        browser = Browser(driver, cdp, recorder)
        driver.get(site.base + "/sign-in.html")
        name = start_recording(browser, live)
        pause(1.0)
        driver.find_element(By.ID, "pw").click()
        driver.find_element(By.ID, "pw").send_keys(TYPED)
        pause()
        for button in ("json", "multi"):
            driver.find_element(By.ID, button).click()
            wait_until(lambda b=button: text_of(driver, "out") == b, 30, message=f"{button} posted")
            pause(0.6)
        driver.get(site.base + "/data.html")
        pause(1.0)
        driver.find_element(By.ID, "go").click()
        wait_until(lambda: text_of(driver, "out") == "loaded", 30, message="data loaded")
        pause(1.0)
        driver.find_element(By.ID, "out").click()  # one more action: the traffic since the last is kept with it
        pause(1.0)
        stop_and_collect(browser, live, name)
    return name


def test_the_site_got_the_posts(recorded, site):
    sent = repr(site.posted)  # each POST parsed as a form: the form body's fields, the others as they come
    assert "Osprey" in sent
    assert "-".join(PARTS["form"]) in sent


def test_some_action_turns_kept_traffic(recorded, live):
    turns = api(live.platform, f"/api/recordings/{recorded}/turns/", live.token)
    assert any(turn.get("har") for turn in turns)


def test_no_secret_in_any_stored_byte(recorded, live):
    files = [path for path in live.platform.var_dir.rglob("*") if path.is_file()]
    assert {str(path): found for path in files if (found := leaks(path.read_bytes(), SECRETS))} == {}


def test_no_secret_in_the_weblinx_export(recorded, live):
    researcher = create_member(live.platform, "tsecrets-researcher", PROJECT, "researcher")
    files = exported_files(live.platform, researcher, PROJECT, "weblinx")
    assert any("/traffic/" in path for path in files)
    assert {name: found for name, data in files.items() if (found := leaks(data, SECRETS))} == {}
