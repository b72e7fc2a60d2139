"""A site of a test's own for step-mode recordings (pages, JSON answers, redirects, a form posted to it) and the
helpers that perform steps through the recorder's side panel."""

import contextlib
import http.server
import json
import threading
import urllib.parse
from dataclasses import dataclass, field

from selenium.webdriver.common.by import By

from tests.support.recorder_browser import Panel, content_in_step_mode, select
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


def text_of(driver, element_id: str) -> str:
    return driver.find_element(By.ID, element_id).text


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
