"""Replay a recorded task's steps in headless Chromium driven over CDP (docs/mind2web.md#replay), with every
request answered by a ``har.Responder``: the Fetch domain pauses each request and it is fulfilled from the HAR (or
the MHTML) or failed, never continued to the network. The browser also gets a proxy that refuses every connection
and no DNS, in case anything slipped past. No Django here: ``run.py`` builds the steps from a demonstration."""

import base64
import contextlib
import ctypes
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import websocket

from agents.browser import chrome_binary

from .har import Responder, bare

FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--force-device-scale-factor=1",
    "--window-size=1280,800",
    # belt and braces: Fetch answers every request; anything that escaped it would meet a closed proxy port
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    # WebRTC sends UDP (STUN/TURN to an IP literal) past the proxy and the resolver: only proxied (closed) UDP
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--remote-debugging-port=0",
)
MASK = "********"  # the recorder's mask of a private value (recorder_extension/lib/privacy.js)
UID_ATTRIBUTE = "data-webtasks-id"
STEP_TIMEOUT = 15.0  # seconds for the next recorded page to be reached
BUDGET = 600.0  # seconds for a whole replay: a page that hangs each step cannot hold a worker for steps × timeouts
QUIET = 0.5  # seconds without a new request before a step's outcome is read
IGNORED_MISSING = ("/favicon.ico",)


class ReplayError(Exception):
    pass


@dataclass
class ReplayStep:
    """One recorded step: its operation, the element it targeted, the page it was taken on."""

    action_uid: str
    op: str  # CLICK | TYPE | SELECT
    original_op: str
    value: str
    url: str
    tag: str = ""
    uid: str | None = None
    xpath: str = ""
    attributes: dict = field(default_factory=dict)
    text: str = ""


class CDP:
    """A browser-level DevTools websocket; events are handed to ``on_event`` while waiting for replies."""

    def __init__(self, url: str, on_event):
        self.ws = websocket.create_connection(url, suppress_origin=True, timeout=30)
        self.ids, self.on_event = itertools.count(1), on_event

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        message_id = next(self.ids)
        message = {"id": message_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        return message_id

    def call(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30):
        message_id = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = self.receive(deadline - time.monotonic())
            if reply is not None and reply.get("id") == message_id:
                if "error" in reply:
                    raise ReplayError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
        raise ReplayError(f"{method}: no answer in {timeout:.0f}s")

    def receive(self, timeout: float) -> dict | None:
        """One message (events go to ``on_event``), or None when none came in ``timeout``."""
        self.ws.settimeout(max(0.01, timeout))
        try:
            message = json.loads(self.ws.recv())
        except websocket.WebSocketTimeoutException:
            return None
        if "method" in message:
            self.on_event(message)
        return message

    def pump(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.receive(deadline - time.monotonic())

    def close(self):
        with contextlib.suppress(Exception):
            self.ws.close()


def die_with_parent() -> None:
    """In the forked child before exec: Linux kills the child when the process that started it dies (a worker killed
    mid-replay, a revoked task), so no Chromium outlives its replay."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Browser:
    """Headless Chromium on a fresh profile with one tab whose every request ``responder`` answers."""

    def __init__(self, responder: Responder):
        self.responder, self.last_request = responder, time.monotonic()
        self.profile = tempfile.mkdtemp(prefix="replay-chromium-")
        self.process = subprocess.Popen(
            [chrome_binary(), *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        self.cdp = None
        try:
            self.cdp = CDP(self.endpoint(), self.on_event)
            target = self.cdp.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            self.session = self.cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            patterns = [{"urlPattern": "*", "requestStage": "Request"}]
            self.call("Fetch.enable", {"patterns": patterns})
            self.call("Page.enable")
        except Exception:
            self.close()
            raise

    def endpoint(self) -> str:
        """The browser's DevTools websocket, from the port file Chromium writes into its profile."""
        port_file, deadline = Path(self.profile) / "DevToolsActivePort", time.monotonic() + 30
        while time.monotonic() < deadline:
            lines = port_file.read_text().split() if port_file.exists() else []
            if len(lines) >= 2:
                return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
            if self.process.poll() is not None:
                raise ReplayError(f"Chromium exited with status {self.process.returncode}")
            time.sleep(0.05)
        raise ReplayError("Chromium did not open its DevTools port in 30s")

    def call(self, method: str, params: dict | None = None, timeout: float = 30):
        return self.cdp.call(method, params, self.session, timeout)

    def on_event(self, message: dict) -> None:
        if message.get("method") == "Page.javascriptDialogOpening":  # alert/confirm/prompt/beforeunload hold the page
            self.cdp.send("Page.handleJavaScriptDialog", {"accept": True}, message.get("sessionId"))
            return
        if message.get("method") != "Fetch.requestPaused":
            return
        self.last_request = time.monotonic()
        params, session = message["params"], message.get("sessionId")
        request = params["request"]
        found = self.responder.answer(request["method"], request["url"], request.get("postData"))
        if found is None:
            self.cdp.send(
                "Fetch.failRequest", {"requestId": params["requestId"], "errorReason": "BlockedByClient"}, session
            )
            return
        fulfil = {
            "requestId": params["requestId"],
            "responseCode": found.status,
            "responseHeaders": found.headers,
            "body": base64.b64encode(found.body).decode("ascii"),
        }
        self.cdp.send("Fetch.fulfillRequest", fulfil, session)

    def evaluate(self, expression: str):
        """The JSON value of ``expression`` in the page; None while the page is between documents."""
        try:
            result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, timeout=10)
        except ReplayError:
            return None
        if "exceptionDetails" in result:
            return None
        return result.get("result", {}).get("value")

    def location(self) -> str:
        state = self.evaluate("[location.href, document.readyState]") or ["", ""]
        return bare(state[0]) if state[1] == "complete" else ""

    def wait_for(self, url: str, timeout: float = STEP_TIMEOUT) -> bool:
        """Wait until the tab shows ``url`` (loaded), then until no request came for ``QUIET`` seconds."""
        deadline = time.monotonic() + timeout
        while self.location() != bare(url):
            if time.monotonic() > deadline:
                return False
            self.cdp.pump(0.1)
        while time.monotonic() - self.last_request < QUIET and time.monotonic() < deadline:
            self.cdp.pump(0.1)
        return self.location() == bare(url)

    def navigate(self, url: str) -> bool:
        """Load a recorded page: only a web page (a recorded URL such as ``chrome://version`` is not ours to open)."""
        if urlsplit(url).scheme not in ("http", "https"):
            return False
        if self.call("Page.navigate", {"url": url}).get("errorText"):
            return False
        return self.wait_for(url)

    def close(self):
        if self.cdp is not None:
            self.cdp.close()
        if self.process.returncode is None:  # not yet reaped: its process group is still its own
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)  # the browser and the helpers it started
        self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


LOCATE = """(spec => {
  let el = null, how = "";
  if (spec.uid) { el = document.querySelector(`[${spec.attr}="${CSS.escape(spec.uid)}"]`); how = "uid"; }
  if (!el && spec.xpath && !spec.xpath.includes("#")) {
    try {
      const n = document.evaluate(spec.xpath, document, null, 9, null).singleNodeValue;  // FIRST_ORDERED_NODE_TYPE
      if (n && n.nodeType === 1 && n.localName === spec.tag) { el = n; how = "xpath"; }
    } catch (e) {}
  }
  if (!el) {
    let best = 0;
    for (const c of document.getElementsByTagName(spec.tag)) {
      let score = (c.textContent || "").trim() === spec.text.trim() && spec.text.trim() ? 2 : 0;
      for (const [name, value] of Object.entries(spec.attributes)) {
        if (name === spec.attr || name === "style" || name === "class") continue;
        if (c.getAttribute(name) === String(value)) score += name === "id" || name === "name" ? 3 : 1;
      }
      if (score > best) { best = score; el = c; how = "tag, text and attributes"; }
    }
    if (best < 2) el = null;
  }
  if (!el) return {found: false};
  el.scrollIntoView({block: "center", inline: "center"});
  window.__webtasksReplayTarget = el;
  const r = el.getBoundingClientRect(), x = r.x + r.width / 2, y = r.y + r.height / 2;
  const hit = document.elementFromPoint(x, y);
  return {found: true, how, x, y, hittable: !!hit && (hit === el || el.contains(hit) || hit.contains(el))};
})"""

SUBMIT = """(el => el.localName === "form" ? el.requestSubmit() : el.form ? el.form.requestSubmit() : el.click())"""
CLEAR = """(el => { el.focus(); if ("value" in el) el.value = ""; else el.textContent = ""; return true; })"""
CHANGED = """(el => { el.dispatchEvent(new Event("change", {bubbles: true})); return true; })"""
CHOOSE = """((el, label) => {
  const option = [...(el.options || [])].find(o => o.text.trim() === label.trim() || o.value === label);
  if (!option) return false;
  el.value = option.value;
  el.dispatchEvent(new Event("input", {bubbles: true}));
  el.dispatchEvent(new Event("change", {bubbles: true}));
  return true;
})"""


def on_target(browser: Browser, function: str, *args):
    return browser.evaluate(f"({function})(window.__webtasksReplayTarget, ...{json.dumps(list(args))})")


def click(browser: Browser, x: float, y: float, hover_only: bool = False) -> None:
    browser.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
    if hover_only:
        return
    for kind in ("mousePressed", "mouseReleased"):
        browser.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})


def perform(browser: Browser, step: ReplayStep) -> str | None:
    """Do the step on the page; why it could not be done, or None."""
    if step.op in ("TYPE", "SELECT") and step.value == MASK:
        return "its value is masked (a private field): the recorded value cannot be replayed"
    spec = {"uid": step.uid, "xpath": step.xpath, "tag": step.tag, "text": step.text, "attr": UID_ATTRIBUTE}
    spec["attributes"] = {str(k): v for k, v in step.attributes.items() if isinstance(v, str | int | float)}
    target = browser.evaluate(f"{LOCATE}({json.dumps(spec)})")
    if not target or not target.get("found"):
        return f"the element it targeted (<{step.tag}> {step.xpath or step.uid or ''}) is not on the page"
    if step.op == "CLICK" and step.original_op == "ENTER":
        on_target(browser, SUBMIT)
    elif step.op == "CLICK":
        if target["hittable"]:
            click(browser, target["x"], target["y"], hover_only=step.original_op == "HOVER")
        else:
            on_target(browser, "(el => el.click())")
    elif step.op == "TYPE":
        on_target(browser, CLEAR)
        browser.call("Input.insertText", {"text": step.value})
        on_target(browser, CHANGED)
    elif step.op == "SELECT" and not on_target(browser, CHOOSE, step.value):
        return f"the <select> has no option {step.value!r}"
    return None


def missing_since(responder: Responder, start: int) -> list[str]:
    return [m for m in responder.missing[start:] if not m.endswith(IGNORED_MISSING)]


def replay_steps(steps: list[ReplayStep], responder: Responder, budget: float = BUDGET) -> dict:
    """Replay ``steps`` in order; ``{"steps", "replayed", "first_failure", "per_step"}`` (docs/mind2web.md#replay).
    A step whose page is not the one shown (after a failure) starts by loading its recorded page. Steps not begun
    within ``budget`` seconds are not replayed (said in their why)."""
    per_step, deadline = [], time.monotonic() + budget
    browser = Browser(responder)
    try:
        for index, step in enumerate(steps):
            if time.monotonic() > deadline:
                why = f"not replayed: the replay ran out of time ({budget:.0f}s for all steps)"
                per_step.append({"action_uid": step.action_uid, "ok": False, "why": why})
                continue
            start = len(responder.missing)
            why = None
            if browser.location() != bare(step.url) and not browser.navigate(step.url):
                why = f"its page {step.url} could not be loaded"
            why = why or perform(browser, step)
            following = steps[index + 1].url if index + 1 < len(steps) else None
            if why is None and following and not browser.wait_for(following):
                why = f"the next recorded page {following} was not reached (the tab shows {browser.location() or '?'})"
            if why is None and not following:
                browser.cdp.pump(QUIET)
            missing = missing_since(responder, start)
            if missing:
                needed = "; ".join(f"{m} is not in the HAR" for m in missing[:5])
                why = (why + "; " if why else "") + f"it needs the network ({needed}: failed, nothing sent)"
            per_step.append({"action_uid": step.action_uid, "ok": why is None} | ({"why": why} if why else {}))
    finally:
        browser.close()
    failed = [i for i, s in enumerate(per_step, start=1) if not s["ok"]]
    return {
        "steps": len(steps),
        "replayed": sum(1 for s in per_step if s["ok"]),
        "first_failure": failed[0] if failed else None,
        "per_step": per_step,
    }
