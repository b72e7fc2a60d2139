"""The replay engine on its own (docs/mind2web.md#replay), in real headless Chromium with a hand-made HAR for a site
nobody serves: a typed value is replayed, a masked private value and a missing element are reported with why, and a
request the HAR lacks is failed (named in the step's why) instead of being sent."""

import json

import pytest

from tests.support.rawdump import har_entry
from workers.exports.replay.engine import MASK, ReplayStep, replay_steps
from workers.exports.replay.har import Responder

pytestmark = pytest.mark.browser

BASE = "http://127.0.0.1:9"  # the discard port: nothing answers there
FORM = """<!doctype html><html><body><form><input id="name" name="name"><input id="pw" name="pw" type="password">
</form><button id="load" type="button" onclick="fetch('/api/missing')">Load</button></body></html>"""


def page(url: str, html: str) -> dict:
    entry = har_entry(url)
    entry["response"].update(
        status=200,
        headers=[{"name": "Content-Type", "value": "text/html"}],
        content={"size": len(html), "mimeType": "text/html", "text": html},
    )
    return entry


def step(uid: str, op: str, value: str = "", tag: str = "input", element_id: str = "") -> ReplayStep:
    return ReplayStep(uid, op, op, value, f"{BASE}/form.html", tag=tag, attributes={"id": element_id or uid})


def test_steps_replay_or_say_why_and_nothing_reaches_the_network():
    responder = Responder([page(f"{BASE}/form.html", FORM)])
    steps = [
        step("name", "TYPE", "Ann"),
        step("pw", "TYPE", MASK),
        step("gone", "CLICK", tag="button"),
        step("load", "CLICK", tag="button"),
    ]
    result = replay_steps(steps, responder)
    assert (result["steps"], result["replayed"], result["first_failure"]) == (4, 1, 2), json.dumps(result)
    per_step = {s["action_uid"]: s for s in result["per_step"]}
    assert per_step["name"] == {"action_uid": "name", "ok": True}
    assert "masked" in per_step["pw"]["why"]
    assert "not on the page" in per_step["gone"]["why"]
    assert f"GET {BASE}/api/missing is not in the HAR" in per_step["load"]["why"]
    assert [m for m in responder.missing if not m.endswith("/favicon.ico")] == [f"GET {BASE}/api/missing"]
