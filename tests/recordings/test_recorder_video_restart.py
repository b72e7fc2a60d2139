"""The recorder extension's tab video and its recovery from a browser restart, in a real headless Chromium.

- Video: Chromium started with ``--allowlisted-extension-id`` (the tabCapture grant a toolbar click gives a real
  user) records a repainting page with ``video: true``; the platform gets consecutive WebM chunks whose
  ``started_at`` is on the recording clock.
- Restart: actions recorded while the platform is down stay in the profile (IndexedDB, ``chrome.storage``); after
  Chromium quits and starts again on the same profile with the platform back up, they are uploaded exactly once; a
  demonstration stopped before the quit is finished, one still running stays ``recording`` until stopped.
"""

import contextlib
import shutil
import tempfile
import time
import urllib.error

import pytest
from selenium.webdriver.common.by import By

from tests.support.browser import make_driver
from tests.support.recorder_browser import ALLOWLIST, ANIMATE
from tests.support.recorder_harness import (
    EXTENSION_DIR,
    BrowserCDP,
    LivePlatform,
    Recorder,
    api,
    blob_bytes,
    live_platform,
    stored_turns,
)
from tests.support.waits import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PROJECT = "recorder-video"
EBML_MAGIC = b"\x1a\x45\xdf\xa3"


# --------------------------------------------------------------------------------------------------------------
# The platform, the fixture pages, Chromium


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    var_dir = tmp_path_factory.mktemp("recorder-video-var")
    with live_platform(var_dir, "recvideo", "video-navigator", PROJECT) as running:
        yield running


def recorder_for(driver, live: LivePlatform) -> tuple[BrowserCDP, Recorder]:
    cdp = BrowserCDP(driver)
    wait_until(cdp.service_workers, 30, message="the extension's service worker")
    recorder = Recorder(cdp, live.url, live.token, PROJECT)
    recorder.open()
    return cdp, recorder


def start_recording(recorder: Recorder, live: LivePlatform, **config) -> str:
    """Start a demonstration and return its name once the server has created it."""
    known = {r["name"] for r in api(live.platform, f"/api/recordings/?project__name={PROJECT}", live.token)["results"]}
    recorder.start(task_description="Recorder video/restart test", **config)

    def created():
        session = recorder.status().get("session") or {}
        if session.get("demoName"):
            return session["demoName"]
        listed = api(live.platform, f"/api/recordings/?project__name={PROJECT}", live.token)["results"]
        fresh = [r["name"] for r in listed if r["name"] not in known]
        return fresh[0] if len(fresh) == 1 else None

    return wait_until(created, 60, interval=0.5, message="the recording created on the server")


def wait_for_url(driver, suffix: str, timeout: float = 20) -> None:
    wait_until(lambda: driver.current_url.endswith(suffix), timeout, message=f"url ending in {suffix}")


def element_id(turn: dict) -> str | None:
    return (((turn.get("arguments") or {}).get("element") or {}).get("attributes") or {}).get("id")


def describe(turns) -> str:
    return "\n".join(
        f"  {t.get('timestamp'):>8.3f} {t.get('intent') or t.get('speaker')} #{element_id(t)} {t['client_id'][:8]}"
        for t in turns
    )


def safe_api(live: LivePlatform, path: str):
    with contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError):
        return api(live.platform, path, live.token)
    return None


# --------------------------------------------------------------------------------------------------------------
# 1. Tab video


def test_tab_video_is_recorded_as_webm_chunks_on_the_recording_clock(live, servers):
    base, _ = servers
    began = time.monotonic()
    driver = make_driver(extension_dir=str(EXTENSION_DIR), extra_args=(ALLOWLIST,))
    cdp = None
    try:
        cdp, recorder = recorder_for(driver, live)
        driver.get(base + "/second.html")
        wait_for_url(driver, "/second.html")
        driver.execute_script(ANIMATE)
        # No focusing of Selenium's window: the side panel page, opened in a window of its own, is the last focused
        # one, and the recorder must still record the web page's tab (lib/video.js activeTabId).
        name = start_recording(recorder, live, video=True)
        wait_until(
            lambda: (recorder.status().get("video") or {}).get("recording"),
            30,
            message="the tab video recording",
        )
        # Pacing on the video's clock: the clicks a second apart, then more than two timeslices (VIDEO_TIMESLICE_MS,
        # 2 s, a constant of the extension) of animation; the video has no state a test could wait on.
        time.sleep(1.0)
        driver.find_element(By.ID, "second-button").click()
        time.sleep(1.0)
        driver.find_element(By.ID, "title").click()
        time.sleep(4.5)
        video_state = recorder.status().get("video")
        recorded_url = recorder.evaluate(f"chrome.tabs.get({int(video_state['tabId'])}).then(t => t.url)")
        assert recorded_url == base + "/second.html", (video_state, recorded_url)
        recorder.stop()
        recorder.wait_idle(120)
        wait_until(
            lambda: api(live.platform, f"/api/recordings/{name}/", live.token)["status"] == "recorded",
            120,
            message=f"demo {name} finished",
        )
        chunks = wait_until(
            lambda: api(live.platform, f"/api/recordings/{name}/video/", live.token),
            30,
            message="video chunks listed",
        )
        turns = stored_turns(live.platform, live.token, name)
        print(f"\n{name} video={video_state}\nchunks={chunks}\n{describe(turns)}")
        assert len(chunks) >= 2, chunks
        indexes = [c["index"] for c in chunks]
        assert indexes == list(range(len(chunks))), indexes  # a fresh session's chunks: 0, 1, 2 ...
        assert all(c["started_at"] is not None and float(c["started_at"]) >= 0 for c in chunks), chunks
        first = min(chunks, key=lambda c: c["index"])
        data = blob_bytes(live.platform, live.token, first["blob"])
        assert data[:4] == EBML_MAGIC, data[:16]
        actions = [t for t in turns if t["type"] == "browser" and t["intent"] == "click"]
        assert actions, describe(turns)
        first_action = min(float(t["timestamp"]) for t in actions)
        assert float(first["started_at"]) <= first_action + 3.0, (first, first_action)
    finally:
        if cdp:
            cdp.close()
        driver.quit()
    print(f"video test: {time.monotonic() - began:.1f}s")


# --------------------------------------------------------------------------------------------------------------
# 2. Browser restart with turns captured while the server was down


EXPECTED_OFFLINE = [("click", "name"), ("textInput", "name"), ("click", "agree"), ("click", "title")]


def record_offline_and_restart(live: LivePlatform, base: str, profile: str, stop_before_quit: bool):
    """Start a demo (platform up), stop the platform, act on form.html, optionally stop the demo, quit Chromium,
    start the platform and then Chromium again on the same profile. Returns (name, driver, cdp) of the new one."""
    driver = make_driver(extension_dir=str(EXTENSION_DIR), profile=profile)
    cdp = None
    try:
        cdp, recorder = recorder_for(driver, live)
        driver.get(base + "/second.html")
        wait_for_url(driver, "/second.html")
        name = start_recording(recorder, live)
        time.sleep(1.0)  # the new recording settles before the platform goes down; no state shows when
        live.stop()
        try:
            driver.get(base + "/form.html")
            wait_for_url(driver, "/form.html")
            time.sleep(1.0)  # the page's content scripts injected; nothing shows when
            driver.find_element(By.ID, "name").click()
            driver.find_element(By.ID, "name").send_keys("Offline")
            driver.find_element(By.ID, "agree").click()
            driver.find_element(By.ID, "title").click()
            # Stays a pause: Chrome must have written the extension's storage (its queue, the session) before it is
            # quit, which shows nothing a test could wait on; the counters below are read only after it.
            time.sleep(1.0)
            if stop_before_quit:
                recorder.stop()
            time.sleep(1.5)
            status = recorder.status()
            print(f"\nbefore quit: {status.get('counters')} outbox={status.get('outbox')}")
            assert status["counters"]["queued"] > 0, status
            assert bool(status.get("outbox")) == stop_before_quit, status
            assert (status.get("session") is not None) != stop_before_quit, status
        finally:
            cdp.close()
            cdp = None
            driver.quit()
            live.start()  # same folder, database and port
    except BaseException:
        if cdp:
            cdp.close()
        with contextlib.suppress(Exception):
            driver.quit()
        raise
    driver = make_driver(extension_dir=str(EXTENSION_DIR), profile=profile)
    cdp = BrowserCDP(driver)
    wait_until(cdp.service_workers, 30, message="the extension's service worker after the restart")
    return name, driver, cdp


def wait_for_offline_turns(live: LivePlatform, name: str, status: str) -> list[dict]:
    """Poll the API until the demo has ``status`` and every turn recorded offline; its turns, checked for once-ness."""

    def uploaded():
        demo = safe_api(live, f"/api/recordings/{name}/")
        if not demo or demo["status"] != status:
            return None
        turns = stored_turns(live.platform, live.token, name)
        have = {(t.get("intent"), element_id(t)) for t in turns}
        return turns if set(EXPECTED_OFFLINE) <= have else None

    restarted = time.monotonic()
    wait_until(uploaded, 180, interval=1.0, message=f"demo {name} uploaded ({status})")
    print(f"\nuploaded ({status}) {time.monotonic() - restarted:.1f}s after the restart")
    time.sleep(3.0)  # an absence (nothing uploaded twice) has no event to wait on: a retry would have come by now
    turns = stored_turns(live.platform, live.token, name)
    print(f"{name}:\n{describe(turns)}")
    client_ids = [t["client_id"] for t in turns]
    assert len(client_ids) == len(set(client_ids)), client_ids
    summary = [(t.get("intent"), element_id(t)) for t in turns if t["type"] == "browser"]
    for expected in EXPECTED_OFFLINE:
        assert summary.count(expected) == 1, (expected, summary)
    order = [summary.index(e) for e in [("click", "name"), ("click", "agree"), ("click", "title")]]
    assert order == sorted(order), summary
    loads = [t for t in turns if t.get("intent") == "load" and "/form.html" in str(t.get("arguments"))]
    assert len(loads) == 1, describe(turns)
    typed = [t for t in turns if t.get("intent") == "textInput" and t["arguments"].get("text") == "Offline"]
    assert len(typed) == 1, describe(turns)
    return turns


def test_turns_captured_offline_are_uploaded_once_after_a_browser_restart(live, servers):
    """Stopped before the quit: after the restart everything is uploaded once and the demo is finished."""
    base, _ = servers
    began = time.monotonic()
    profile = tempfile.mkdtemp(prefix="chromium-restart-profile-")
    driver = cdp = None
    try:
        name, driver, cdp = record_offline_and_restart(live, base, profile, stop_before_quit=True)
        wait_for_offline_turns(live, name, "recorded")
    finally:
        if cdp:
            cdp.close()
        if driver:
            driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    print(f"restart test (stopped before quit): {time.monotonic() - began:.1f}s")


def test_a_recording_still_running_at_the_quit_uploads_after_the_restart_and_can_be_stopped(live, servers):
    """Not stopped before the quit: after the restart the offline turns are uploaded once, the demo stays
    ``recording`` until it is stopped in the restarted browser, and then it is finished."""
    base, _ = servers
    began = time.monotonic()
    profile = tempfile.mkdtemp(prefix="chromium-restart-profile-")
    driver = cdp = None
    try:
        name, driver, cdp = record_offline_and_restart(live, base, profile, stop_before_quit=False)
        wait_for_offline_turns(live, name, "recording")
        recorder = Recorder(cdp, live.url, live.token, PROJECT)
        recorder.open()
        session = recorder.status().get("session") or {}
        assert session.get("demoName") == name, session
        recorder.stop()
        recorder.wait_idle(120)
        wait_for_offline_turns(live, name, "recorded")
    finally:
        if cdp:
            cdp.close()
        if driver:
            driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    print(f"restart test (recording at quit): {time.monotonic() - began:.1f}s")
