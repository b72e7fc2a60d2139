"""A password sent by a GET form reappears in the next page's URL, title, text, links and attributes: the recorder
masks it there too, and secret-named parameters with it (docs/recorder-privacy.md, "Values and URLs after the field").

The real recorder extension in headless Chromium records into the real platform (uvicorn, Celery, PostgreSQL) on a
site of this test's own: a sign-in form sent by GET (a name, a password, a colour ``<select>``, a hidden
``csrf_token``) and the page it goes to, which echoes the query into its title, its text, a link (the whole query
again), an attribute and a field. Two annotators of one project record it: the first in chat mode and in step mode
(MHTML snapshots on: the echo page has no private field, so its snapshot is kept), the second in task mode and in step
mode; each signs in with a password of their own and then acts four times on the echo page.

The site really got each password (its log has the query); the recordings keep the echo page's load and actions with
the URL masked (``pw=********``, ``csrf_token=********``) and the plain name and colour as they were. Then no form of
either password (as typed, percent- and form-encoded, HTML-escaped; UTF-8, UTF-16, base64; inside gzip and MHTML
parts and headers) nor the csrf token is in: any column of any table of the database, any file under the platform's
folder, the review list, each review page, its JSON endpoints and every turn's recorded page, the API's turns and
blobs, the live session page and its socket's catch-up, the WebLINX and Mind2Web exports the export job made.
"""

import dataclasses
import email
import html
import http.server
import io
import json
import re
import tarfile
import threading
import urllib.parse
import urllib.request
from email.header import decode_header, make_header

import psycopg
import pytest
import websocket
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.support.recorder_browser import (
    Browser,
    Panel,
    browser_turns,
    choose,
    content_in_step_mode,
    describe,
    op_button,
    select,
    start_recording,
    stop_and_collect,
    url_of,
)
from tests.support.recorder_harness import (
    api,
    create_member,
    extension_browser,
    http_get,
    leaks,
    live_platform,
    readable_forms,
)
from tests.support.waits import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PROJECT = "private-urls"
MASK = "********"
# Each annotator's own: a space and characters a URL encodes (the form sends Zq7+p%C3%A4ss%26word%3DOrca%21).
PASSWORDS = {"url-ann": "Zq7 päss&word=Orca!", "url-ben": "Kx9 Lynx&Fjord=Moss?"}
CSRF = "Csrf-Puffin-4471"  # the form's hidden csrf_token: a secret by its name only
USER = "Ann Plain-Name"  # typed into the plain name field: kept as typed
NOTE = "a plain note"


# --------------------------------------------------------------------------------------------------------------
# The site: a sign-in form sent by GET, and the page that echoes what it got


LOGIN = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in</title></head><body>
<h1>Sign in</h1>
<form id="login" method="get" action="/welcome">
  <p><label>Name <input id="user" name="user" autocomplete="off"></label></p>
  <p><label>Password <input id="pw" name="pw" type="password" autocomplete="off"></label></p>
  <p><label>Colour <select id="color" name="color"><option value="red">Red</option>
    <option value="blue">Blue</option></select></label></p>
  <input type="hidden" name="csrf_token" value="{csrf}">
  <p><button id="submit" type="submit">Sign in</button></p>
</form></body></html>"""

WELCOME = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Welcome {user} ({pw})</title></head>
<body><h1 id="hello">Welcome, {user}</h1>
<p id="echo">You signed in with the password {pw} and the colour {color}.</p>
<p><a id="again" href="/welcome?{query}" data-echo="{pw}">Sign in again</a></p>
<p><label>Your password <input id="shown" value="{pw}" readonly></label></p>
<p><input id="note" placeholder="Note"></p>
<p><button id="b1" type="button" onclick="this.textContent = 'One clicked'">One</button>
<button id="b2" type="button" onclick="this.textContent = 'Two clicked'">Two</button></p>
</body></html>"""


class SiteHandler(http.server.BaseHTTPRequestHandler):
    queries: list  # every query string the site received (set per server)

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/login.html":
            body = LOGIN.format(csrf=CSRF)
        elif url.path == "/welcome":
            self.queries.append(url.query)
            got = {key: values[0] for key, values in urllib.parse.parse_qs(url.query).items()}
            fields = {key: html.escape(got.get(key, "")) for key in ("user", "pw", "color")}
            body = WELCOME.format(query=html.escape(url.query), **fields)
        else:
            self.send_error(404)
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture(scope="module")
def site():
    """``(base URL, the query strings the echo page received)``."""
    queries = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (SiteHandler,), {"queries": queries}))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", queries
    finally:
        server.shutdown()
        server.server_close()


# --------------------------------------------------------------------------------------------------------------
# The platform and the people


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("private-urls-var"), "privurls", "url-ann", PROJECT) as running:
        yield running


@pytest.fixture(scope="module")
def annotators(live) -> dict:
    """username → the platform as that annotator sees it (their token)."""
    return {
        "url-ann": live,
        "url-ben": dataclasses.replace(live, token=create_member(live.platform, "url-ben", PROJECT)),
    }


SESSION_COOKIE = """
from django.contrib.auth import get_user_model
from django.test import Client
from annotation.models import Membership, Project
user, _ = get_user_model().objects.get_or_create(username={username!r})
project = Project.objects.get(name={project!r})
if {role!r}:
    Membership.objects.get_or_create(project=project, user=user, defaults={{"role": {role!r}}})
client = Client()
client.force_login(user)
print(client.cookies["sessionid"].value)
"""


def session_cookie(live, username: str, role: str = "") -> str:
    """A signed-in browser session of ``username`` (given ``role`` in the project first, when one is named)."""
    code = SESSION_COOKIE.format(username=username, role=role, project=PROJECT)
    result = live.platform.manage("shell", "-c", code)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def page(live, path: str, cookie: str) -> bytes:
    """``GET path`` as the person whose session cookie this is (an error status raises)."""
    request = urllib.request.Request(live.platform.url + path, headers={"Cookie": f"sessionid={cookie}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read()


# --------------------------------------------------------------------------------------------------------------
# Recording


def captured(recorder) -> int:
    return (recorder.status().get("counters") or {}).get("captured", 0)


def act(browser: Browser, action, turns: int = 1) -> None:
    """Do ``action`` and wait until the recorder captured ``turns`` more turns (a hover waits for its dwell)."""
    before = captured(browser.recorder)
    action()
    wait_until(lambda: captured(browser.recorder) >= before + turns, 30, message=f"{turns} more turn(s) captured")


def on_welcome(driver) -> bool:
    return "/welcome?" in driver.current_url and driver.execute_script("return document.readyState") == "complete"


def record_by_hand(browser: Browser, live, base: str, password: str, mode: str) -> str:
    """Chat or task mode: sign in with real typing, then click, type, hover and click on the echo page."""
    driver, find = browser.driver, browser.driver.find_element
    driver.get(base + "/login.html")
    name = start_recording(browser, live, mode=mode)
    act(browser, lambda: find(By.ID, "user").click())
    find(By.ID, "user").send_keys(USER)
    act(browser, lambda: find(By.ID, "pw").click(), turns=2)  # the name's textInput, then the click
    find(By.ID, "pw").send_keys(password)
    act(browser, lambda: choose(find(By.ID, "color"), "Blue"), turns=2)  # the password's textInput, the change
    act(browser, lambda: find(By.ID, "submit").click(), turns=3)  # the click, the submit, the echo page's load
    WebDriverWait(driver, 30).until(on_welcome)
    assert password in driver.title, "the echo page shows the password"
    act(browser, lambda: find(By.ID, "b1").click())
    act(browser, lambda: find(By.ID, "note").click())
    find(By.ID, "note").send_keys(NOTE)
    act(browser, lambda: ActionChains(driver).move_to_element(find(By.ID, "again")).perform(), turns=2)  # text, hover
    act(browser, lambda: find(By.ID, "b2").click())
    return name


def type_step(driver, panel: Panel, field: str, text: str) -> None:
    select(driver, panel, field)
    panel.operate(
        f"document.getElementById('step-type-value').value = {json.dumps(text)};"
        "document.getElementById('step-type-form').requestSubmit()"
    )
    wait_until(lambda: driver.find_element(By.ID, field).get_property("value") == text, 30, message=f"#{field} typed")


def record_in_steps(browser: Browser, live, base: str, password: str) -> str:
    """Step mode with MHTML snapshots: Type the name and password, Select the colour, Click to sign in; then Click,
    Hover, Type and Click on the echo page."""
    driver = browser.driver
    driver.get(base + "/login.html")
    name = start_recording(browser, live, step=True, mhtml=True, mode="task")
    panel = Panel(browser.recorder)
    wait_until(lambda: not panel.quietly("document.getElementById('step').hidden"), 30, message="the step panel")
    wait_until(lambda: content_in_step_mode(driver), 30, message="step mode on the form")
    type_step(driver, panel, "user", USER)
    type_step(driver, panel, "pw", password)
    select(driver, panel, "color")
    panel.operate(
        "document.getElementById('step-select-value').value = 'blue';"
        "document.getElementById('step-select-form').requestSubmit()"
    )
    select(driver, panel, "submit")
    panel.operate(op_button("click"))
    WebDriverWait(driver, 30).until(on_welcome)
    assert password in driver.title, "the echo page shows the password"
    wait_until(lambda: content_in_step_mode(driver), 30, message="step mode on the echo page")
    for field, op in (("b1", "click"), ("again", "hover")):
        select(driver, panel, field)
        panel.operate(op_button(op))
    type_step(driver, panel, "note", NOTE)
    select(driver, panel, "b2")
    panel.operate(op_button("click"))
    return name


@dataclasses.dataclass
class Recorded:
    name: str
    annotator: str
    mode: str
    turns: list


@pytest.fixture(scope="module")
def recorded(annotators, site) -> list[Recorded]:
    """Four recordings: the first annotator in chat and step mode, the second in task and step mode, one browser
    (profile) each, one after the other."""
    base, _ = site
    out = []
    for username, modes in (("url-ann", ("chat", "step")), ("url-ben", ("task", "step"))):
        live, password = annotators[username], PASSWORDS[username]
        with extension_browser(live, PROJECT) as (driver, cdp, recorder):
            browser = Browser(driver, cdp, recorder)
            for mode in modes:
                if mode == "step":
                    name = record_in_steps(browser, live, base, password)
                else:
                    name = record_by_hand(browser, live, base, password, mode)
                turns = stop_and_collect(browser, live, name)
                print(f"\n{username} {mode} {name}:\n{describe(turns)}")
                out.append(Recorded(name, username, mode, turns))
    return out


def secrets() -> list[str]:
    """Every form of the passwords a stored byte could hold them in, and the csrf token."""
    forms = {CSRF}
    for password in PASSWORDS.values():
        encoded = [
            urllib.parse.quote_plus(password),
            urllib.parse.quote(password, safe=""),
            urllib.parse.quote(password),
        ]
        encoded += [re.sub("%[0-9A-F]{2}", lambda m: m[0].lower(), text) for text in encoded] + [password]
        forms.update(encoded)
        forms.update(html.escape(text) for text in encoded)
        forms.update(html.escape(text, quote=False) for text in encoded)
    return sorted(forms)


SECRETS = secrets()


def leaked(data: bytes) -> list[str]:
    """The secrets in ``data`` in any stored form, an MHTML's encoded headers (its title) read too."""
    found = set(leaks(data, SECRETS))
    if b"multipart/related" in data[:4000]:
        message = email.message_from_bytes(data)
        headers = " ".join(str(make_header(decode_header(value))) for value in message.values())
        found.update(leaks(headers.encode(), SECRETS))
    return sorted(found)


# --------------------------------------------------------------------------------------------------------------
# What the recordings say


def test_the_site_got_each_password_in_its_query(recorded, site):
    _, queries = site
    got = [urllib.parse.parse_qs(query) for query in queries]
    for password in PASSWORDS.values():
        assert sum(1 for q in got if q.get("pw") == [password]) >= 2, "signed in twice (by hand and in steps)"
    assert all(q.get("csrf_token") == [CSRF] for q in got)
    assert {r.mode for r in recorded} == {"chat", "task", "step"}
    assert {r.annotator for r in recorded} == set(PASSWORDS)


def test_the_echo_pages_load_and_the_actions_on_it_keep_its_url_masked(recorded):
    expected = "/welcome?" + urllib.parse.urlencode(
        {"user": USER, "pw": MASK, "color": "blue", "csrf_token": MASK}, safe="*"
    )
    for recording in recorded:
        on_echo = [t for t in browser_turns(recording.turns) if "/welcome?" in url_of(t)]
        loads = [t for t in on_echo if t["intent"] == "load"]
        assert len(loads) == 1, describe(recording.turns)
        assert all(url_of(t).endswith(expected) for t in on_echo), [url_of(t) for t in on_echo]
        actions = [t for t in on_echo if t["intent"] != "load" and t["timestamp"] >= loads[0]["timestamp"]]
        assert len(actions) >= 4, f"{recording.mode}: {describe(recording.turns)}"
        typed = [t["arguments"]["text"] for t in browser_turns(recording.turns, "textInput")]
        assert typed == [USER, MASK, NOTE], f"{recording.mode}: the password field's text is the mask"


def test_the_echo_pages_snapshot_is_kept_in_step_mode(recorded, annotators):
    for recording in (r for r in recorded if r.mode == "step"):
        live = annotators[recording.annotator]
        snapshots = [
            (t["arguments"].get("properties") or {}).get("mhtml")
            for t in browser_turns(recording.turns)
            if "/welcome?" in url_of(t)
        ]
        kept = [sha for sha in snapshots if sha]
        assert len(kept) == 4, f"every step on the echo page has its snapshot: {snapshots}"
        mhtml = http_get(live.platform, f"/api/blobs/{kept[0]}", live.token)
        assert b"multipart/related" in mhtml[:4000]
        assert any(b"********" in form for form in readable_forms(mhtml)), "the snapshot shows the mask"


# --------------------------------------------------------------------------------------------------------------
# Every stored byte


def test_no_password_in_any_column_of_any_table(recorded, live):
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
                    if found_here := leaked(as_bytes(value)):
                        found.setdefault(table, set()).update(found_here)
    assert found == {}
    assert rows > 100, rows


def as_bytes(value) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False).encode()
    return str(value).encode()


def test_no_password_in_any_file_the_platform_stored(recorded, live):
    files = [path for path in live.platform.var_dir.rglob("*") if path.is_file()]
    assert sum(1 for path in files if "blobs" in path.parts) >= 40, len(files)
    assert {str(path): found for path in files if (found := leaked(path.read_bytes()))} == {}


def turn_ids(live, name: str) -> list[int]:
    with psycopg.connect(live.database_url) as conn:
        rows = conn.execute(
            "SELECT t.id FROM annotation_turn t JOIN annotation_demonstration d ON d.id = t.demonstration_id "
            "WHERE d.name = %s AND t.page_id IS NOT NULL ORDER BY t.seq",
            (name,),
        ).fetchall()
    return [row[0] for row in rows]


def test_no_password_in_the_review_pages_their_json_and_the_recorded_pages(recorded, live):
    reviewer = session_cookie(live, "url-reviewer", "reviewer")
    answers = {"list": page(live, f"/review/?project={PROJECT}", reviewer)}
    for recording in recorded:
        name = recording.name
        answers[f"{name} page"] = page(live, f"/review/{name}/", reviewer)
        answers[f"{name} revision"] = page(live, f"/review/{name}/revision", reviewer)
        answers[f"{name} live"] = page(live, f"/review/{name}/live", reviewer)
        ids = turn_ids(live, name)
        assert len(ids) >= 8, name
        for turn_id in ids:
            answers[f"{name} turn {turn_id}"] = page(live, f"/review/{name}/turns/{turn_id}/page", reviewer)
        assert b"/welcome?" in answers[f"{name} page"], "the review page shows the echo page's (masked) URL"
    assert {where: found for where, data in answers.items() if (found := leaked(data))} == {}


def test_no_password_in_the_api_turns_and_blobs(recorded, annotators):
    answers = {}
    for recording in recorded:
        live = annotators[recording.annotator]
        answers[f"{recording.name} turns"] = http_get(
            live.platform, f"/api/recordings/{recording.name}/turns/", live.token
        )
        for turn in browser_turns(recording.turns):
            shas = [turn.get(kind) for kind in ("screenshot", "page", "bboxes")]
            shas += [frame["screenshot"] for frame in turn.get("frames") or []]
            shas.append((turn["arguments"].get("properties") or {}).get("mhtml"))
            for sha in filter(None, shas):
                answers[f"blob {sha}"] = http_get(live.platform, f"/api/blobs/{sha}", live.token)
    assert sum(1 for where in answers if where.startswith("blob")) >= 40
    assert {where: found for where, data in answers.items() if (found := leaked(data))} == {}


def socket_catch_up(live, name: str) -> list[dict]:
    """What the live session's socket sends its navigator on joining: welcome, every turn, synced."""
    url = live.platform.url.replace("http://", "ws://") + f"/ws/sessions/{name}/"
    ws = websocket.create_connection(url, origin=live.platform.url, timeout=30)
    try:
        ws.send(json.dumps({"type": "join", "after_seq": -1, "token": live.token}))
        messages = []
        while not messages or messages[-1].get("type") != "synced":
            messages.append(json.loads(ws.recv()))
        return messages
    finally:
        ws.close()


def test_no_password_in_the_live_session_page_and_its_socket(recorded, annotators):
    answers = {}
    for username, live in annotators.items():
        cookie = session_cookie(live, username)
        for recording in (r for r in recorded if r.annotator == username):
            answers[f"{recording.name} page"] = page(live, f"/sessions/{recording.name}/navigate", cookie)
            messages = socket_catch_up(live, recording.name)
            turns = [m for m in messages if m["type"] == "turn"]
            assert len(turns) == len(recording.turns), recording.name
            answers[f"{recording.name} socket"] = json.dumps(messages, ensure_ascii=False).encode()
    assert {where: found for where, data in answers.items() if (found := leaked(data))} == {}


@pytest.mark.parametrize("export_format", ["weblinx", "mind2web"])
def test_no_password_in_the_exports(recorded, live, export_format):
    researcher = create_member(live.platform, "url-researcher", PROJECT, "researcher")
    body = {"project": PROJECT, "format": export_format, "statuses": ["recorded", "in_review"]}
    job = api(live.platform, "/api/exports/", researcher, body)
    done = wait_until(
        lambda: (
            (j := api(live.platform, f"/api/exports/{job['id']}/", researcher))["status"] in ("done", "failed") and j
        ),
        240,
        interval=0.5,
        message=f"the {export_format} export",
    )
    assert done["status"] == "done", done
    archive = http_get(live.platform, f"/api/exports/{job['id']}/download/", researcher)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar if m.isfile() or m.islnk()}
    if export_format == "weblinx":
        names = " ".join(members)
        assert all(r.name in names for r in recorded), f"every recording exported: {sorted(members)[:20]}"
    else:
        snapshots = [name for name in members if name.endswith("_before.mhtml")]
        assert len(snapshots) == 8, f"both step recordings' snapshots of the echo page are exported: {snapshots}"
    assert {name: found for name, data in members.items() if (found := leaked(data))} == {}
    assert not leaked(json.dumps(done).encode())
