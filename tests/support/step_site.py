"""A site of a test's own for step-mode recordings (pages, JSON answers, redirects, a form posted to it) and the
helpers that perform steps through the recorder's side panel."""

import contextlib
import http.server
import json
import threading
import urllib.parse
from dataclasses import dataclass, field

from selenium.webdriver.common.by import By

from tests.support.recorder_browser import Panel, content_in_step_mode, op_button, select
from tests.support.recorder_harness import stored_turns
from tests.support.waits import wait_until


@dataclass
class Site:
    base: str
    port: int
    posted: list = field(default_factory=list)  # every form body posted to it, parsed


@contextlib.contextmanager
def serve(pages: dict, answers: dict, redirects: dict, after_post: str, every_answer: dict | None = None):
    """Serve ``pages`` (path → HTML), ``answers`` (path → JSON), ``redirects`` (path → 302 location); a POST is
    kept in ``posted`` and answered by a 303 to ``after_post``; ``every_answer``: headers sent on each answer (a
    session cookie). Stopped (its port closed) when the block ends."""
    posted, always = [], every_answer or {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 (the base class's name)
            pass

        def answer(self, status: int, body: bytes = b"", content_type: str = "text/html; charset=utf-8", **headers):
            self.send_response(status)
            sent = {"Content-Type": content_type, "Content-Length": str(len(body))} | always | headers
            for name, value in sent.items():
                self.send_header(name, value)
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            path = urllib.parse.urlsplit(self.path).path
            if path in pages:
                self.answer(200, pages[path].encode())
            elif path in answers:
                self.answer(200, json.dumps(answers[path]).encode(), "application/json")
            elif path in redirects:
                self.answer(302, Location=redirects[path])
            else:
                self.answer(404)

        def do_POST(self):
            length = int(self.headers.get("Content-Length", 0))
            posted.append(urllib.parse.parse_qs(self.rfile.read(length).decode()))
            self.answer(303, Location=after_post)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        yield Site(f"http://127.0.0.1:{port}", port, posted)
    finally:
        server.shutdown()
        server.server_close()


def shop_page(to: str, label: str, bearer: str = "") -> str:
    """A shop whose items are fetched after load, a More button fetching more (an XHR; with ``bearer``, sending it as
    its ``Authorization`` header, put together in the script so that no page holds it) and a link ``label`` to
    ``/go-{to}`` (``#to-{to}``)."""
    parts = json.dumps(bearer.split("-"))
    header = f'  x.setRequestHeader("Authorization", "Bearer " + {parts}.join("-"));\n' if bearer else ""
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head><body>
<h1>Shop</h1><ul id="items"></ul>
<p><button id="more" type="button">More</button> <span id="more-out"></span></p>
<p><a id="to-{to}" href="/go-{to}">{label}</a></p>
<script>
fetch("/api/items").then(r => r.json()).then(d => {{
  document.getElementById("items").innerHTML = d.items.map(i => "<li>" + i + "</li>").join("");
}});
document.getElementById("more").onclick = () => {{
  const x = new XMLHttpRequest();
  x.open("GET", "/api/more?page=2");
{header}  x.onload = () => {{ document.getElementById("more-out").textContent = JSON.parse(x.responseText).more; }};
  x.send();
}};
</script></body></html>"""


def fetching_page(title: str, element_id: str, source: str, key: str) -> str:
    """A page ``title`` whose ``#element_id`` shows ``key`` of the JSON at ``source``, fetched after load, and a Done
    button."""
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head><body>
<h1>{title}</h1><p id="{element_id}">loading</p><button id="done" type="button">Done</button>
<script>
fetch("{source}").then(r => r.json()).then(d => {{ document.getElementById("{element_id}").textContent = d.{key}; }});
</script></body></html>"""


SHOP_ANSWERS = {"/api/items": {"items": ["Red shoe", "Blue shoe"]}, "/api/more": {"more": "Green shoe"}}

LOGIN = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in</title></head><body>
<form id="login" method="post" action="/login">
  <p><label>Name <input id="user" name="user" autocomplete="off"></label></p>
  <p><label>Password <input id="pw" name="pw" type="password" autocomplete="off"></label></p>
  <p><button id="submit" type="submit">Sign in</button></p>
</form></body></html>"""


def serve_sign_in(bearer: str, every_answer: dict | None = None):
    """The traffic tests' site: the shop (its More sends ``bearer``), whose Sign in goes by a redirect to a form with
    a password, posted to the site and answered by a redirect to a welcome page fetching its profile after load."""
    pages = {
        "/shop.html": shop_page("login", "Sign in", bearer),
        "/login.html": LOGIN,
        "/welcome": fetching_page("Welcome", "profile", "/api/profile", "name"),
    }
    answers = SHOP_ANSWERS | {"/api/profile": {"name": "Profile of Ann"}}
    return serve(pages, answers, {"/go-login": "/login.html"}, "/welcome", every_answer)


def text_of(driver, element_id: str) -> str:
    return driver.find_element(By.ID, element_id).text


def click_step(driver, panel: Panel, element_id: str) -> None:
    select(driver, panel, element_id)
    panel.operate(op_button("click"))


def type_step(driver, panel: Panel, field_id: str, text: str) -> None:
    select(driver, panel, field_id)
    panel.operate(
        f"document.getElementById('step-type-value').value = {json.dumps(text)};"
        "document.getElementById('step-type-form').requestSubmit()"
    )
    wait_until(lambda: driver.find_element(By.ID, field_id).get_property("value") == text, 30, message="typed")


def choose_step(driver, panel: Panel, field_id: str, value: str) -> None:
    select(driver, panel, field_id)
    panel.operate(
        f"document.getElementById('step-select-value').value = {json.dumps(value)};"
        "document.getElementById('step-select-form').requestSubmit()"
    )
    wait_until(lambda: driver.find_element(By.ID, field_id).get_property("value") == value, 30, message="chosen")


def page_ready(driver, path: str, element_id: str, text: str = ""):
    def ready():
        return path in driver.current_url and (not text or text_of(driver, element_id) == text)

    wait_until(ready, 30, message=f"{path} ready")
    wait_until(lambda: content_in_step_mode(driver), 30, message=f"step mode on {path}")


def stored_steps(platform, token: str, name: str) -> list[dict]:
    """The recording's step turns (browser turns other than page loads), in order."""
    return [
        turn for turn in stored_turns(platform, token, name) if turn["type"] == "browser" and turn["intent"] != "load"
    ]
