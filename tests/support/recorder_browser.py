"""The recorder extension in real Chromium: start and stop a recording, read its turns back, and the page
helpers (typing, choosing, waiting for a URL, step mode, screenshots and video) its tests share."""

import io
import time
from dataclasses import dataclass

from PIL import Image
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

from tests.support.recorder_harness import EXTENSION_ID, BrowserCDP, LivePlatform, Recorder, api, http_get, stored_turns
from tests.support.waits import wait_until

PROJECT = "recorder"


VIEWPORT = (1280, 800)


@dataclass
class Browser:
    driver: object
    cdp: BrowserCDP
    recorder: Recorder


def start_recording(browser: Browser, live: LivePlatform, **config) -> str:
    """Start a demonstration (in the recorder's project) and return its name once the server has created it."""
    listing = f"/api/recordings/?project__name={browser.recorder.project}"
    known = {r["name"] for r in api(live.platform, listing, live.token)["results"]}
    browser.recorder.start(task_description="Recorder end-to-end test", **config)

    def created():
        session = browser.recorder.status().get("session") or {}
        if session.get("demoName"):
            return session["demoName"]
        listed = api(live.platform, listing, live.token)["results"]
        fresh = [r["name"] for r in listed if r["name"] not in known]
        return fresh[0] if len(fresh) == 1 else None

    return wait_until(created, 60, interval=0.5, message="the recording created on the server")


def stop_and_collect(browser: Browser, live: LivePlatform, name: str, timeout: float = 180) -> list[dict]:
    """Stop, wait until the recorder uploaded everything and the server marked the demo recorded; its turns."""
    failed = (browser.recorder.status().get("counters") or {}).get("failed", 0)
    browser.recorder.stop()
    status = browser.recorder.wait_idle(timeout)
    assert status["counters"].get("failed", 0) == failed, f"turns refused by the server: {status}"
    wait_until(
        lambda: api(live.platform, f"/api/recordings/{name}/", live.token)["status"] == "recorded",
        timeout,
        interval=0.5,
        message=f"demo {name} finished",
    )
    return stored_turns(live.platform, live.token, name)


def pause(seconds: float = 0.35) -> None:
    time.sleep(seconds)


def element_id(turn: dict) -> str | None:
    return (((turn.get("arguments") or {}).get("element") or {}).get("attributes") or {}).get("id")


def browser_turns(turns, intent=None, id_=None) -> list[dict]:
    return [
        t
        for t in turns
        if t["type"] == "browser"
        and (intent is None or t["intent"] == intent)
        and (id_ is None or element_id(t) == id_)
    ]


def url_of(turn) -> str:
    arguments = turn.get("arguments") or {}
    return (arguments.get("properties") or {}).get("url") or (arguments.get("metadata") or {}).get("url") or ""


def tab_of(turn) -> int | None:
    arguments = turn.get("arguments") or {}
    if turn.get("intent") in ("load", "tabcreate", "tabremove", "tabswitch"):
        tab = (arguments.get("properties") or {}).get("tabId")
        if tab is not None:
            return tab
    return (arguments.get("metadata") or {}).get("tabId")


def describe(turns) -> str:
    """One line per turn, for assertion messages."""
    lines = []
    for t in turns:
        if t["type"] == "chat":
            lines.append(f"  {t['timestamp']:8.3f} chat {t.get('speaker')}: {t.get('utterance')!r}")
            continue
        a = t.get("arguments") or {}
        extra = {k: a[k] for k in ("text", "value", "scrollX", "scrollY", "selected", "pasted") if k in a}
        props = a.get("properties") or {}
        if t["intent"] in ("load", "tabcreate", "tabremove", "tabswitch"):
            extra |= {k: props.get(k) for k in ("url", "transitionType", "tabId", "tabIdOrigin") if k in props}
        lines.append(
            f"  {t['timestamp']:8.3f} {t['intent']:<10} #{element_id(t) or '-':<15} tab={tab_of(t)} {extra} "
            f"{(a.get('metadata') or {}).get('url', '')}"
        )
    return "\n".join(lines)


def key_chord(driver, key: str) -> None:
    ActionChains(driver).key_down(Keys.CONTROL).send_keys(key).key_up(Keys.CONTROL).perform()


def choose(select, label: str) -> None:
    """Pick an option by typing its label into the focused <select>: real key events. Selenium's ``Select``
    clicks the <option> through ChromeDriver's script atoms, whose events are untrusted (the recorder, rightly,
    ignores untrusted events)."""
    select.send_keys(label)
    assert Select(select).first_selected_option.text == label


def wait_for_url(driver, suffix: str, timeout: float = 20) -> None:
    WebDriverWait(driver, timeout).until(
        lambda d: d.current_url.endswith(suffix) and d.execute_script("return document.readyState") == "complete"
    )


def frame_content_offset(driver, iframe) -> dict:
    """Where an iframe's viewport starts in the page's viewport: its box plus its border."""
    return driver.execute_script(
        "const f = arguments[0], r = f.getBoundingClientRect(); return {x: r.x + f.clientLeft, y: r.y + f.clientTop};",
        iframe,
    )


def content_in_step_mode(driver) -> bool:
    """The page's content script itself is in step mode (its page-bridge replies carry its own state)."""
    script = """
        const done = arguments[0];
        const id = "step-" + Math.random();
        addEventListener("message", function on(e) {
          if (e.data && e.data.type === "webtasks-bridge" && e.data.id === id && "reply" in e.data) {
            removeEventListener("message", on);
            done(!!(e.data.content && e.data.content.step));
          }
        });
        postMessage({type: "webtasks-bridge", id, request: {type: "hello"}}, "*");
    """
    return driver.execute_async_script(script)


class Panel:
    """The side panel page, driven through its own buttons and fields."""

    def __init__(self, recorder: Recorder):
        self.recorder = recorder

    def js(self, expression: str):
        return self.recorder.evaluate(expression)

    def quietly(self, expression: str):
        return self.recorder.evaluate_quietly(expression)

    def phase(self) -> str:
        return self.quietly("document.body.dataset.stepPhase || ''") or ""

    def selected(self, label: str) -> bool:
        text = self.quietly("document.getElementById('step-selected').textContent") or ""
        return self.phase() == "selected" and label in text

    def operate(self, script: str) -> None:
        self.js(f"(() => {{ {script}; return true; }})()")
        wait_until(lambda: self.phase() == "idle", 60, message="the step performed")


def select(driver, panel: Panel, element_id: str) -> None:
    """A real click on the page's element: only selects it (the panel names it)."""
    driver.find_element(By.ID, element_id).click()
    wait_until(lambda: panel.selected(f"#{element_id}>"), 30, message=f"#{element_id} selected in the panel")


def op_button(op: str) -> str:
    return f"document.querySelector('#step-ops [data-op={op}]').click()"


ALLOWLIST = f"--allowlisted-extension-id={EXTENSION_ID}"


# Keeps the page repainting (tab capture only yields frames on repaints).
ANIMATE = """
const box = document.createElement('div');
box.id = 'spinner';
box.style.cssText = 'position:fixed;left:20px;bottom:20px;width:120px;height:120px;background:#c33;';
document.body.appendChild(box);
let n = 0;
window.__spin = setInterval(() => {
  n += 1;
  box.style.transform = `translateX(${(n * 7) % 600}px) rotate(${n * 9}deg)`;
  box.style.background = `hsl(${(n * 13) % 360}, 70%, 50%)`;
}, 30);
"""


def inset(rect: dict, by: int = 2) -> tuple:
    left, top = int(rect["x"]), int(rect["y"])
    return (left + by, top + by, int(rect["x"] + rect["width"]) - by, int(rect["y"] + rect["height"]) - by)


def screenshots_of(turns: list[dict]) -> dict:
    """Every screenshot stored for the recording: sha256 → what it was taken for."""
    shots = {}
    for turn in browser_turns(turns):
        where = f"{turn['intent']} at {turn['timestamp']:.3f}"
        if turn.get("screenshot"):
            shots[turn["screenshot"]] = where
        for frame in turn.get("frames") or []:
            shots.setdefault(frame["screenshot"], f"{frame.get('label')} frame of {where}")
    return shots


def first_video_run(live, name: str) -> bytes:
    """The recording's first run of tab video (its chunks through the API, in order), one WebM."""
    chunks = sorted(api(live.platform, f"/api/recordings/{name}/video/", live.token), key=lambda c: c["index"])
    assert chunks, "no video"
    first_run = [c for c in chunks if c["started_at"] == chunks[0]["started_at"]]
    return b"".join(http_get(live.platform, f"/api/blobs/{c['blob']}", live.token) for c in first_run)


def frame_area(frame: Image.Image, rect: dict, by: int) -> Image.Image:
    """The part of a video frame that shows ``rect`` (tab-viewport CSS px) inset by ``by``. Tab capture fits the page
    into its frame size, centred (e.g. 1280 × 800 in 800 × 600: black bars above and below)."""
    scale = min(frame.width / VIEWPORT[0], frame.height / VIEWPORT[1])
    dx, dy = (frame.width - VIEWPORT[0] * scale) / 2, (frame.height - VIEWPORT[1] * scale) / 2
    x0, y0, x1, y1 = inset(rect, by)
    return frame.crop(tuple(round(v) for v in (dx + x0 * scale, dy + y0 * scale, dx + x1 * scale, dy + y1 * scale)))


def last_video_frame(webm: bytes) -> Image.Image:
    """The last frame of a WebM run (decoded forward: MediaRecorder WebM has no index)."""
    import av

    last = None
    with av.open(io.BytesIO(webm)) as container:
        for frame in container.decode(video=0):
            last = frame
    assert last is not None, "no decodable frame"
    return last.to_image().convert("RGB")


def background_of(png: bytes) -> tuple:
    """The colour of the page's bottom-right corner (below and beside the fixture's content)."""
    with Image.open(io.BytesIO(png)) as image:
        image.load()
        assert image.format == "PNG"
        assert image.size == VIEWPORT
        return image.convert("RGB").getpixel((VIEWPORT[0] - 5, VIEWPORT[1] - 5))
