"""Helpers for the recorder extension's real-browser tests and benchmark.

- ``fixture_servers()``: the static fixture pages (``tests/fixtures/pages``) on two local HTTP servers, the second
  one giving a cross-origin frame.
- ``BrowserCDP``: browser-level Chrome DevTools Protocol (the ``debuggerAddress`` ChromeDriver opened), to list
  targets, kill the extension's service worker (``Target.closeTarget``) and evaluate script in an extension page
  without Selenium switching tabs (switching would itself be recorded as a ``tabswitch``).
- ``Recorder``: drives the extension through its automation interface (``chrome.runtime.sendMessage`` from the
  side panel page opened in a separate window, or the ``webtasks.command`` storage key).
- Platform helpers: a member with a token, and what the platform stored read as its users read it, through the
  API: the stored turns of a demonstration, the bytes of its blobs, the files of an export.
- Secrets: ``leaks`` finds a secret in stored bytes in any form it could be stored in (UTF-8, UTF-16, base64; inside
  gzip and MHTML parts).
"""

import base64
import contextlib
import email
import gzip
import http.server
import io
import itertools
import json
import tarfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import websocket

from devtools.processes import free_port, scratch_database, start_platform, stop_platform
from tests.support.waits import wait_until

ROOT = Path(__file__).resolve().parents[2]
EXTENSION_DIR = ROOT / "recorder_extension"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pages"
EXTENSION_ID = "ojofndafcmbnamgfemifimjhmebbdglk"
EXTENSION_ORIGIN = f"chrome-extension://{EXTENSION_ID}"
UID = "data-webtasks-id"
ELEMENT_INTENTS = {"click", "hover", "textInput", "change", "submit", "copy", "paste"}


# --------------------------------------------------------------------------------------------------------------
# Fixture pages


def generated_page(elements: int) -> str:
    """A page of exactly ``elements`` elements: sections of a heading, a paragraph with a link, a list, an input."""
    parts, count, section = [], 7, 0  # html, head, meta, title, style, body, h1
    while count + 13 <= elements:
        section += 1
        parts.append(
            f'<section id="s{section}" class="card"><h2>Section {section}</h2>'
            f'<p>Paragraph {section} with <a href="#s{section}">a link</a> and <b>bold</b> text.</p>'
            f"<ul><li>one {section}</li><li>two</li><li><span>three</span></li></ul>"
            f'<label>Field {section} <input type="text" name="f{section}" value="v{section}"></label>'
            f'<button type="button">Go {section}</button></section>'
        )
        count += 13
    parts.append("<p>" + "<i>.</i>" * (elements - count - 1) + "</p>" if elements - count > 0 else "")
    body = "\n".join(parts)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Generated page</title>'
        "<style>body{font:14px sans-serif;margin:10px}.card{border:1px solid #ccc;margin:4px;padding:4px}</style>"
        f"</head><body><h1>Generated page</h1>{body}</body></html>"
    )


class FixtureHandler(http.server.SimpleHTTPRequestHandler):
    """Serves ``FIXTURES``; ``{{CROSS_ORIGIN}}`` in HTML is the other server's origin, ``{{CROSS_SITE}}`` the same
    server as another site (``localhost``). ``POST /submitted`` → 303."""

    cross_origin = ""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=str(FIXTURES), **kwargs)

    def log_message(self, format, *args):  # noqa: A002 (the base class's name)
        pass

    def send_body(self, body: bytes, content_type: str = "text/html; charset=utf-8") -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/generated.html":
            elements = int(urllib.parse.parse_qs(url.query).get("elements", ["2000"])[0])
            return self.send_body(generated_page(elements).encode())
        path = FIXTURES / url.path.lstrip("/")
        if path.suffix == ".html" and path.is_file():
            # {{CROSS_SITE}}: the other server on another site (localhost), so its frame runs out of process.
            cross_site = self.cross_origin.replace("//127.0.0.1:", "//localhost:")
            text = path.read_text().replace("{{CROSS_ORIGIN}}", self.cross_origin).replace("{{CROSS_SITE}}", cross_site)
            return self.send_body(text.encode())
        return super().do_GET()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(303)
        self.send_header("Location", "/second.html")
        self.send_header("Content-Length", "0")
        self.end_headers()


@contextlib.contextmanager
def fixture_servers():
    """``(main, other)`` base URLs: ``main`` serves the fixtures, its frames point at ``other`` (cross-origin)."""
    servers = []
    for _ in range(2):
        handler = type("Handler", (FixtureHandler,), {})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    main, other = (f"http://127.0.0.1:{server.server_address[1]}" for server in servers)
    servers[0].RequestHandlerClass.cross_origin = other
    servers[1].RequestHandlerClass.cross_origin = main
    try:
        yield main, other
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


# --------------------------------------------------------------------------------------------------------------
# Browser-level CDP


class CDPError(RuntimeError):
    pass


class BrowserCDP:
    """A websocket to the browser's DevTools endpoint (not a page's, which is all ``execute_cdp_cmd`` reaches)."""

    def __init__(self, driver):
        address = driver.capabilities["goog:chromeOptions"]["debuggerAddress"]
        with urllib.request.urlopen(f"http://{address}/json/version", timeout=10) as response:
            url = json.load(response)["webSocketDebuggerUrl"]
        self.ws = websocket.create_connection(url, suppress_origin=True, timeout=60)
        self.ids = itertools.count(1)
        self.lock = threading.Lock()

    def close(self):
        self.ws.close()

    def send(self, method: str, params: dict | None = None, session_id: str | None = None, timeout: float = 60):
        with self.lock:
            message_id = next(self.ids)
            message = {"id": message_id, "method": method, "params": params or {}}
            if session_id:
                message["sessionId"] = session_id
            self.ws.send(json.dumps(message))
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                self.ws.settimeout(max(0.1, deadline - time.monotonic()))
                reply = json.loads(self.ws.recv())
                if reply.get("id") == message_id:
                    if "error" in reply:
                        raise CDPError(f"{method}: {reply['error']}")
                    return reply.get("result", {})
            raise TimeoutError(f"CDP {method} got no answer in {timeout}s")

    def targets(self) -> list[dict]:
        return self.send("Target.getTargets")["targetInfos"]

    def service_workers(self, extension_id: str = EXTENSION_ID) -> list[dict]:
        prefix = f"chrome-extension://{extension_id}/"
        return [t for t in self.targets() if t["type"] == "service_worker" and t["url"].startswith(prefix)]

    def kill_service_worker(self, extension_id: str = EXTENSION_ID, timeout: float = 10) -> int:
        """Close the extension's service worker target(s), as Chrome does when it stops an idle worker.

        Returns how many were closed; waits until those targets are gone (the next event starts a new one)."""
        killed = {target["targetId"] for target in self.service_workers(extension_id)}
        for target_id in killed:
            with contextlib.suppress(CDPError):
                self.send("Target.closeTarget", {"targetId": target_id})
        deadline = time.monotonic() + timeout
        while killed & {t["targetId"] for t in self.service_workers(extension_id)} and time.monotonic() < deadline:
            time.sleep(0.02)
        return len(killed)

    def open_window(self, url: str) -> str:
        """A new window (so the recorded window's active tab never changes) showing ``url``; its target id."""
        return self.send("Target.createTarget", {"url": url, "newWindow": True})["targetId"]

    def close_target(self, target_id: str) -> None:
        with contextlib.suppress(CDPError):
            self.send("Target.closeTarget", {"targetId": target_id})

    def evaluate(self, target_id: str, expression: str, timeout: float = 60):
        """Evaluate ``expression`` (awaiting a promise) in a target and return its JSON value."""
        session = self.send("Target.attachToTarget", {"targetId": target_id, "flatten": True})["sessionId"]
        try:
            params = {"expression": expression, "awaitPromise": True, "returnByValue": True, "timeout": timeout * 1000}
            result = self.send("Runtime.evaluate", params, session_id=session, timeout=timeout + 5)
        finally:
            with contextlib.suppress(CDPError, TimeoutError):
                self.send("Target.detachFromTarget", {"sessionId": session})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise CDPError(details.get("exception", {}).get("description") or details.get("text"))
        return result["result"].get("value")


# --------------------------------------------------------------------------------------------------------------
# The extension


class Recorder:
    """The extension's automation interface, evaluated in its side panel page in a window of its own."""

    def __init__(self, cdp: BrowserCDP, server: str, token: str, project: str):
        self.cdp, self.server, self.token, self.project = cdp, server, token, project
        self.target = None

    @property
    def panel_url(self) -> str:
        query = urllib.parse.urlencode({"server": self.server, "token": self.token, "project": self.project})
        return f"{EXTENSION_ORIGIN}/sidepanel/sidepanel.html?{query}"

    def config(self, **extra) -> dict:
        return {"serverUrl": self.server, "token": self.token, "project": self.project, **extra}

    def open(self) -> None:
        """Open the side panel page (once) and wait until its script can reach the extension APIs."""
        if self.target and any(t["targetId"] == self.target for t in self.cdp.targets()):
            return
        self.target = self.cdp.open_window(self.panel_url)
        wait_until(
            lambda: self.evaluate_quietly("document.readyState === 'complete' && !!chrome.runtime?.id"),
            30,
            message="side panel page loaded",
        )

    def evaluate_quietly(self, expression: str):
        with contextlib.suppress(CDPError, TimeoutError):
            return self.cdp.evaluate(self.target, expression, timeout=10)
        return None

    def evaluate(self, expression: str, timeout: float = 60):
        self.open()
        return self.cdp.evaluate(self.target, expression, timeout=timeout)

    def send(self, type_: str, timeout: float = 60, **payload):
        """``chrome.runtime.sendMessage({target: "service-worker", type, ...payload})`` → the answer."""
        message = json.dumps({"target": "service-worker", "type": type_, **payload})
        return self.evaluate(f"chrome.runtime.sendMessage({message})", timeout=timeout)

    def command(self, action: str, config: dict | None = None, timeout: float = 60):
        """The storage route: write ``webtasks.command`` and wait for ``webtasks.commandResult`` with its nonce."""
        nonce = f"n-{time.time_ns()}"
        command = json.dumps({"action": action, "config": config or {}, "nonce": nonce})
        self.evaluate(f"chrome.storage.local.set({{'webtasks.command': {command}}})")
        return wait_until(
            lambda: (r := self.storage("webtasks.commandResult")) and r.get("nonce") == nonce and r,
            timeout,
            message=f"commandResult for {action}",
        )

    def storage(self, key: str):
        return self.evaluate(f"chrome.storage.local.get({json.dumps(key)}).then(v => v[{json.dumps(key)}] ?? null)")

    def start(self, **config) -> dict:
        reply = self.send("start", config=self.config(**config))
        assert reply, "no answer to start"
        assert reply.get("ok", True) is not False, reply
        assert not reply.get("error"), reply
        return reply

    def stop(self) -> dict:
        reply = self.send("stop")
        assert reply is None or not reply.get("error"), reply
        return reply

    def status(self) -> dict:
        return self.send("status") or {}

    def captured(self) -> int:
        """How many turns this recorder has captured so far (its counter; compare with an earlier reading)."""
        return (self.status().get("counters") or {}).get("captured", 0)

    def wait_captured(self, at_least: int, timeout: float = 30) -> int:
        """Wait until the recorder has captured ``at_least`` turns in all (a condition, not a fixed pause)."""
        return wait_until(lambda: (count := self.captured()) >= at_least and count, timeout, 0.1, "turns captured")

    def wait_idle(self, timeout: float = 120) -> dict:
        """Wait until nothing is queued, every captured turn was uploaded (or failed) and every stopped demo was
        finished on the server (empty outbox); the last status."""

        seen = {}

        def drained():
            status = seen["status"] = self.status()
            counters = status.get("counters") or {}
            done = counters.get("uploaded", 0) + counters.get("failed", 0)
            drained = counters.get("queued", 0) == 0 and done >= counters.get("captured", 0)
            return status if drained and not status.get("outbox") else None

        try:
            return wait_until(drained, timeout, interval=0.5, message="upload queue drained")
        except TimeoutError as error:  # say what was still waiting
            raise TimeoutError(
                f"{error}; the recorder's last status: {json.dumps(seen.get('status'))[:3000]}"
            ) from None


# --------------------------------------------------------------------------------------------------------------
# The platform


@contextlib.contextmanager
def extension_browser(live=None, project: str | None = None, extra_args=()):
    """Chromium with the extension loaded and its service worker running, on about:blank; with ``live`` (a running
    platform with a token) its side panel is opened to record into ``project``. Yields ``(driver, cdp, recorder)``
    (``recorder`` None without ``live``); quits the browser afterwards."""
    from tests.support.browser import make_driver

    driver = make_driver(extension_dir=str(EXTENSION_DIR), extra_args=tuple(extra_args))
    cdp = None
    try:
        cdp = BrowserCDP(driver)
        wait_until(cdp.service_workers, 30, message="the extension's service worker")
        driver.get("about:blank")
        recorder = None
        if live is not None:
            recorder = Recorder(cdp, live.url, live.token, project)
            recorder.open()
        yield driver, cdp, recorder
    finally:
        if cdp is not None:
            cdp.close()
        driver.quit()


def create_member(platform, username: str, project: str, role: str = "annotator") -> str:
    """A user with ``role`` in ``project`` (both created if needed) and an API token; returns the token."""
    code = (
        "from django.contrib.auth import get_user_model\n"
        "from annotation.models import Membership, Project\n"
        "from rest_framework.authtoken.models import Token\n"
        f"user, _ = get_user_model().objects.get_or_create(username={username!r})\n"
        f"project, _ = Project.objects.get_or_create(name={project!r}, defaults={{'title': {project!r}}})\n"
        f"Membership.objects.get_or_create(project=project, user=user, defaults={{'role': {role!r}}})\n"
        "print(Token.objects.get_or_create(user=user)[0].key)\n"
    )
    result = platform.manage("shell", "-c", code)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def create_annotator(platform, username: str, project: str) -> str:
    """A user with the annotator role in ``project`` (created if needed) and an API token; returns the token."""
    return create_member(platform, username, project)


def http_get(platform, path: str, token: str) -> bytes:
    """The body of ``GET path`` as ``token``'s user (an error status raises ``HTTPError``)."""
    request = urllib.request.Request(platform.url + path, headers={"Authorization": f"Token {token}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read()


def api(platform, path: str, token: str, body: dict | None = None, method: str | None = None):
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    request = urllib.request.Request(platform.url + path, data=data, headers=headers, method=method)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def stored_turns(platform, token: str, name: str) -> list[dict]:
    """The demonstration's stored turns in timeline order, as ``GET /api/recordings/{name}/turns/`` answers them."""
    return api(platform, f"/api/recordings/{name}/turns/", token)


def blob_bytes(platform, token: str, sha256: str) -> bytes:
    """A blob's bytes as a member reads them: ``GET /api/blobs/{sha256}`` (an error status fails the test)."""
    request = urllib.request.Request(f"{platform.url}/api/blobs/{sha256}", headers={"Authorization": f"Token {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read()


EXPORTABLE = ["recorded", "in_review", "returned", "validated", "rejected"]


def exported_files(platform, token: str, project: str, export_format: str, statuses=EXPORTABLE) -> dict[str, bytes]:
    """An export as a researcher makes one: ``POST /api/exports/``, its job polled until it ends, the archive
    downloaded; ``{path inside the export: bytes}`` (paths without the archive's top folder)."""
    body = {"project": project, "format": export_format, "statuses": list(statuses)}
    job = api(platform, "/api/exports/", token, body)
    job = wait_until(
        lambda: (found := api(platform, f"/api/exports/{job['id']}/", token))["status"] in ("done", "failed") and found,
        240,
        interval=0.5,
        message=f"export {job['id']} ends",
    )
    assert job["status"] == "done", job["error"]
    request = urllib.request.Request(job["download_url"], headers={"Authorization": f"Token {token}"})
    with (
        urllib.request.urlopen(request, timeout=120) as response,
        tarfile.open(fileobj=io.BytesIO(response.read())) as tar,
    ):
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile() or m.islnk()}
    return {name.split("/", 1)[1]: data for name, data in files.items()}


def secret_forms(secret: str) -> list[bytes]:
    """The bytes a stored copy of ``secret`` would contain: UTF-8 (also JSON, HTML and quoted-printable text for a
    secret of letters, digits and hyphens), UTF-16 in both byte orders, and base64 at each of the three offsets
    it can start at within a longer base64 text (only the characters that depend on the secret alone)."""
    raw = secret.encode()
    forms = [raw, secret.encode("utf-16-le"), secret.encode("utf-16-be")]
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw)
        forms.append(encoded[-(-shift * 8 // 6) : (shift + len(raw)) * 8 // 6])
    return forms


def readable_forms(data: bytes) -> list[bytes]:
    """``data`` and what it holds encoded: a gzip stream inflated, an MHTML document's parts decoded (quoted-printable
    text can break a secret across a soft line break; base64 parts hide it)."""
    forms = [data]
    if data[:2] == b"\x1f\x8b":
        with contextlib.suppress(OSError, EOFError):
            forms.append(gzip.decompress(data))
    if b"multipart/related" in data[:4000]:
        for part in email.message_from_bytes(data).walk():
            payload = None if part.is_multipart() else part.get_payload(decode=True)
            if payload:
                forms.append(payload)
    return forms


def leaks(data: bytes, secrets) -> list[str]:
    """The ``secrets`` found in ``data``, in any of their forms (``secret_forms``, ``readable_forms``)."""
    forms = readable_forms(data)
    return [secret for secret in secrets if any(n in form for form in forms for n in secret_forms(secret))]


def media_files(platform) -> list[Path]:
    media = platform.var_dir / "media"
    return sorted(p for p in media.rglob("*") if p.is_file()) if media.exists() else []


@dataclass
class LivePlatform:
    """The running platform, restartable on the same folder, database and port (the extension keeps its URL)."""

    var_dir: object
    database_url: str | None
    port: int
    platform: object = None
    token: str = ""

    def start(self):
        self.platform = start_platform(self.var_dir, self.database_url, self.port, "--no-sample")

    def stop(self):
        stop_platform(self.platform)

    @property
    def url(self):
        return self.platform.url


@contextlib.contextmanager
def live_platform(var_dir, database_prefix: str, username: str, project: str):
    """A platform with its own scratch database and an annotator of ``project``; ``live.token`` is theirs."""
    with scratch_database(database_prefix, migrated=True) as database_url:
        live = LivePlatform(var_dir, database_url, free_port())
        live.start()
        try:
            live.token = create_annotator(live.platform, username, project)
            yield live
        finally:
            if live.platform.process.poll() is None:
                stop_platform(live.platform)
