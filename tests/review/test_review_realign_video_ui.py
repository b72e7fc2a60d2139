"""Screenshot re-alignment on the tab video the real recorder uploads, in a real headless Chromium.

The recorder extension records a page whose background colour the test changes between clicks, with video (the
tabCapture grant through ``--allowlisted-extension-id``). Each click's "before" frame shows the previous colour,
so the no-video rule (last frame before the action) picks the wrong one; the platform's own worker runs
``workers.realign_demo`` on the uploaded chunks (header chunk + continuation chunks) and must suggest, for every
click, a frame of the colour the page showed at that moment.
"""

import ast
import io
import json
import logging
import re
import time
from types import SimpleNamespace

import pytest
from PIL import Image
from selenium.webdriver.common.by import By

from tests.support.browser import make_driver
from tests.support.recorder_harness import (
    EXTENSION_DIR,
    EXTENSION_ID,
    BrowserCDP,
    Recorder,
    api,
    blob_bytes,
    live_platform,
    stored_turns,
)
from tests.support.waits import wait_until
from workers.review import realign

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PROJECT = "realign-video"
COLOURS = [(240, 230, 40), (30, 30, 200), (220, 30, 30), (40, 220, 220)]  # distinct in grey too
ENQUEUE = """
from annotation.models import Demonstration
from workers.tasks import realign_demo
realign_demo.delay(Demonstration.objects.get(name={name!r}).pk)
"""
SUGGESTIONS = """
import json
import logging
from annotation.models import DemoReview, TurnCuration
review = DemoReview.objects.filter(demonstration__name={name!r}, realigned=True).exists()
rows = TurnCuration.objects.filter(demonstration__name={name!r}).values_list("turn__client_id", "suggested_screenshot")
print(json.dumps({{"realigned": review, "suggested": dict(rows)}}))
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    var_dir = tmp_path_factory.mktemp("realign-video-var")
    with live_platform(var_dir, "realignvideo", "realign-navigator", PROJECT) as running:
        yield running


def colour_of(png: bytes) -> tuple[int, int, int]:
    """The page's background colour in a screenshot (a corner, away from the button and the tick)."""
    return Image.open(io.BytesIO(png)).convert("RGB").getpixel((8, 8))


def near(a, b, tolerance=40) -> bool:
    return all(abs(x - y) <= tolerance for x, y in zip(a, b, strict=True))


def manage_json(live, script: str) -> dict:
    result = live.platform.manage("shell", "-c", script)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def record_colour_clicks(live, base: str) -> str:
    """Record clicks on colors.html with video, the colour changed 0.8 s before each click, and the video
    recorder restarted after the first half (a second run: new header, new ``started_at``); the demo name.

    A run's first click comes about 1.3 s after its start (in its first 2 s chunk), the second after its first
    chunk."""
    driver = make_driver(extension_dir=str(EXTENSION_DIR), extra_args=(f"--allowlisted-extension-id={EXTENSION_ID}",))
    cdp = None
    try:
        cdp = BrowserCDP(driver)
        wait_until(cdp.service_workers, 30, message="the extension's service worker")
        recorder = Recorder(cdp, live.url, live.token, PROJECT)
        recorder.open()
        driver.get(base + "/colors.html")
        wait_until(lambda: driver.current_url.endswith("/colors.html"), 20, message="colors.html")
        recorder.start(task_description="Realign on real video", video=True)
        name = wait_until(lambda: (recorder.status().get("session") or {}).get("demoName"), 60, message="the demo")
        for run, half in enumerate((COLOURS[:2], COLOURS[2:])):
            if run:
                restart_video(cdp, recorder.status()["video"]["tabId"])
            wait_until(lambda: (recorder.status().get("video") or {}).get("recording"), 30, message="the tab video")
            for colour in half:
                driver.execute_script(f"setColour('rgb{colour}')")
                time.sleep(0.8)
                driver.find_element(By.ID, "act").click()
                time.sleep(1.2)  # the colour stays on screen for the video's frames: realignment reads them
        recorder.stop()
        recorder.wait_idle(120)
    finally:
        if cdp:
            cdp.close()
        driver.quit()
    wait_until(
        lambda: api(live.platform, f"/api/recordings/{name}/", live.token)["status"] == "recorded",
        120,
        message=f"demo {name} finished",
    )
    return name


RESTART_VIDEO = """(async () => {
  const { recorder } = await ready;
  const session = await recorder.session();
  await video.stop();
  await video.start(session, TAB_ID);
  return true;
})()"""


def restart_video(cdp: BrowserCDP, tab_id: int) -> None:
    """Stop the tab video and start it again in the service worker, as after the capture ended and the toolbar
    button was clicked again (``service_worker.js``: ``video.start(session, tab.id)``)."""
    worker = cdp.service_workers()[0]["targetId"]
    assert cdp.evaluate(worker, RESTART_VIDEO.replace("TAB_ID", str(int(tab_id)))) is True


@pytest.fixture(scope="module")
def recorded(live, servers):
    """The name of a demo recorded on colors.html with video (recorded once for the module)."""
    return record_colour_clicks(live, servers[0])


def test_the_worker_suggests_the_frame_the_video_shows_at_each_click(live, recorded):
    began = time.monotonic()
    name = recorded
    chunks = api(live.platform, f"/api/recordings/{name}/video/", live.token)
    assert len(chunks) >= 2, chunks  # a header chunk and continuation chunks
    runs = {}
    for chunk in sorted(chunks, key=lambda c: c["index"]):
        data = blob_bytes(live.platform, live.token, chunk["blob"])
        runs.setdefault(chunk["started_at"], []).append(data.startswith(realign.EBML_MAGIC))
    # Two recorder runs, each a header chunk and header-less continuation chunks.
    assert [headers[:2] for headers in runs.values()] == [[True, False], [True, False]], runs
    assert not any(headers[1:].count(True) for headers in runs.values()), runs

    manage_json(live, ENQUEUE.format(name=name) + "\nprint('{}')")
    done = wait_until(
        lambda: (result := manage_json(live, SUGGESTIONS.format(name=name)))["realigned"] and result,
        120,
        interval=1.0,
        message="the worker's realign task",
    )
    clicks = [t for t in stored_turns(live.platform, live.token, name) if t.get("intent") == "click"]
    assert len(clicks) == len(COLOURS), [t.get("intent") for t in stored_turns(live.platform, live.token, name)]
    fallback_wrong = 0
    for click, expected in zip(clicks, COLOURS, strict=True):
        suggested = done["suggested"][click["client_id"]]
        got = colour_of(blob_bytes(live.platform, live.token, suggested))
        print(f"click at {click['timestamp']:.2f}s: expected {expected}, suggested {got}, frames {click['frames']}")
        assert near(got, expected), (click, got, expected)
        fallback = realign.last_before(click["timestamp"], click["screenshot"], click["frames"])
        fallback_wrong += not near(colour_of(blob_bytes(live.platform, live.token, fallback)), expected)
    assert fallback_wrong >= 1  # the no-video rule would have got it wrong: the video decided
    log = live.platform.log.read_text()
    counts = re.findall(rf"realign {name}: (\{{.*?\}})", log)
    assert counts, log[-3000:]
    assert ast.literal_eval(counts[-1])["video"] >= len(COLOURS), counts
    assert "cut short" not in log, log[-3000:]
    print(f"realign video test: {time.monotonic() - began:.1f}s")


def test_real_recorder_chunks_joined_per_run_and_broken_chunks(live, recorded, caplog):
    """The pure pipeline on the real chunks: both runs again later, the second run without its header chunk,
    and a corrupt or missing second chunk in the first run (the video up to it, the no-video rule after it; the
    second run unaffected)."""
    chunks = sorted(api(live.platform, f"/api/recordings/{recorded}/video/", live.token), key=lambda c: c["index"])
    clicks = [t for t in stored_turns(live.platform, live.token, recorded) if t.get("intent") == "click"]
    blobs = {c["blob"]: blob_bytes(live.platform, live.token, c["blob"]) for c in chunks}
    for click in clicks:
        for sha, _ in realign.candidates(click["screenshot"], click["frames"]):
            blobs[sha] = blob_bytes(live.platform, live.token, sha)
    rows = [(c["index"], c["blob"], float(c["started_at"])) for c in chunks]
    first_run = [row for row in rows if row[2] == rows[0][2]]
    second_run = rows[len(first_run) :]
    assert len(first_run) >= 2, rows
    turns = [
        SimpleNamespace(screenshot_id=t["screenshot"], frames=t["frames"], timestamp=t["timestamp"]) for t in clicks
    ]
    print(f"rows {rows}\nclicks at {[t.timestamp for t in turns]}")

    def hows(rows, read=blobs.__getitem__, turns=turns, label=""):
        chosen = realign.suggestions(turns, read, realign.video_runs(rows), label=label)
        pairs = zip(chosen, COLOURS * 2, strict=False)
        assert all(near(colour_of(blobs[sha]), want) for (sha, how), want in pairs if how == realign.VIDEO), chosen
        return [how for _, how in chosen]

    later = 60.0
    again = [(index + len(rows), sha, started_at + later) for index, sha, started_at in rows]
    shifted = [SimpleNamespace(**{**vars(t), "timestamp": t.timestamp + later}) for t in turns]
    assert hows(rows + again, turns=turns + shifted) == [realign.VIDEO] * 8

    assert hows(first_run + second_run[1:]) == [realign.VIDEO] * 2 + [realign.LAST_BEFORE] * 2

    # The chunk to break: one between the first run's two clicks, so the video decides the click before it and the
    # no-video rule the click after it. Which chunk that is depends on when the recorder's chunks were cut (a busy
    # machine starts the recorder later after the click that turned it on), so it is found, not assumed: the first
    # chunk k where the run ending before it covers the first click and not the second.
    ended = {k: hows(first_run[:k] + second_run) for k in range(1, len(first_run))}
    cut = next((k for k, got in ended.items() if got[:2] == [realign.VIDEO, realign.LAST_BEFORE]), None)
    assert cut is not None, f"no chunk of the first run lies between its clicks: {ended}"
    assert ended[cut][2:] == [realign.VIDEO] * 2, ended[cut]
    broken = first_run[cut]
    corrupt = {**blobs, broken[1]: bytes(len(blobs[broken[1]]))}
    for label, kept, read in [
        ("corrupt", rows, corrupt.__getitem__),
        ("missing", [row for row in rows if row != broken], blobs.__getitem__),
    ]:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="workers.review.realign"):
            # A broken chunk ends its run's video there: the same suggestions as a run that ended before it.
            assert hows(kept, read, label=label) == ended[cut]
        assert f"realign {label}: video run at {rows[0][2]:.3f}s cut short (chunk {broken[0]} " in caplog.text
