"""A live session in two real headless Chromiums against the running platform (Daphne, channel layer from the
environment): the navigator's web page and the instructor's page chat both ways, the instructor joins by the
invitation link, sees each new screenshot the recorder uploads, and ends the demonstration; the stored timeline
interleaves chat and browser turns by time."""

import contextlib
import datetime as dt
import json
import time
import urllib.request

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

from tests.support import payloads
from tests.support.browser import click_and_confirm, make_driver, sign_in_form, wait_for
from tests.support.recorder_harness import Recorder, api, extension_browser, live_platform, stored_turns
from tests.support.waits import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PASSWORDS = {"livenav": "Navigator-Passw0rd!", "liveins": "Instructor-Passw0rd!"}
ACCOUNTS = """
from django.contrib.auth import get_user_model
from annotation.models import Membership, Project, Role
project = Project.objects.get(name="live")
for name, password in {passwords!r}.items():
    user, _ = get_user_model().objects.get_or_create(username=name)
    user.set_password(password)
    user.save()
    Membership.objects.get_or_create(project=project, user=user, defaults={{"role": Role.ANNOTATOR}})
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("live-session"), "live", "livenav", "live") as running:
        done = running.platform.manage("shell", "-c", ACCOUNTS.format(passwords=PASSWORDS))
        assert done.returncode == 0, done.stderr
        yield running


@pytest.fixture
def drivers():
    started = [make_driver(width=1100, height=900), make_driver(width=1100, height=900)]
    yield started
    for driver in started:
        driver.quit()


def sign_in(driver, url: str, username: str) -> None:
    sign_in_form(driver, url, username, PASSWORDS[username])


def messages(driver) -> list[str]:
    return [item.text for item in driver.find_elements(By.CSS_SELECTOR, "#messages li:not(.pending)")]


def send(driver, text: str) -> None:
    driver.find_element(By.ID, "chat-input").send_keys(text)
    driver.find_element(By.CSS_SELECTOR, "#chat-form button").click()


def upload_browser_turn(server, demo: str, client_id: str, timestamp: float, seed: int) -> str:
    """Upload a screenshot, page and boxes and a click turn using them, as the recorder does; the screenshot's sha."""
    blobs = payloads.state_blobs(seed)
    for blob in blobs.values():
        request = urllib.request.Request(
            f"{server.url}/api/blobs/{blob.sha256}?project=live",
            data=blob.data,
            method="PUT",
            headers={"Authorization": f"Token {server.token}", "Content-Type": blob.media_type},
        )
        urllib.request.urlopen(request, timeout=30).close()
    refs = payloads.state_refs(blobs)
    turn = payloads.browser_turn(client_id, "click", timestamp, **refs)
    api(server.platform, f"/api/recordings/{demo}/turns/", server.token, {"turns": [turn]})
    return refs["screenshot"]


def shown_screenshot(driver) -> str | None:
    image = driver.find_element(By.ID, "screen-shot")
    loaded = driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", image)
    return image.get_attribute("data-sha256") if loaded and image.is_displayed() else None


RECORD_SOCKET_MESSAGES = """
window.__received = [];
const NativeWebSocket = window.WebSocket;
window.WebSocket = class extends NativeWebSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener("message", (event) => window.__received.push(event.data));
  }
};
"""


def test_instructor_and_navigator_chat_and_the_instructor_watches_the_screen(server, drivers):
    navigator, instructor = drivers
    started = dt.datetime.now(dt.UTC)
    demo = api(
        server.platform,
        "/api/recordings/",
        server.token,
        {"client_id": "live-e2e-1", "project": "live", "mode": "chat", "recording_start": started.isoformat()},
    )["name"]
    clock = lambda: (dt.datetime.now(dt.UTC) - started).total_seconds()  # noqa: E731 (the recording clock)

    sign_in(navigator, server.url, "livenav")
    navigator.get(f"{server.url}/sessions/{demo}/navigate")
    wait_for(navigator, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live")
    invite = navigator.find_element(By.ID, "invite-url").get_attribute("value")

    sign_in(instructor, server.url, "liveins")
    instructor.get(invite)
    instructor.find_element(By.ID, "join-button").click()
    wait_for(instructor, lambda d: d.current_url.endswith(f"/sessions/{demo}/instruct"))
    wait_for(instructor, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live")
    wait_for(instructor, lambda d: "livenav is here" in d.find_element(By.ID, "presence-navigator").text)
    wait_for(navigator, lambda d: "liveins is here" in d.find_element(By.ID, "presence-instructor").text)

    send(instructor, "Open the weather site")
    wait_for(navigator, lambda d: messages(d) == ["Instructor: Open the weather site"])
    first = upload_browser_turn(server, demo, "click-1", clock(), seed=1)
    wait_for(instructor, lambda d: shown_screenshot(d) == first)
    assert payloads.URL in instructor.find_element(By.ID, "screen-url").text
    send(navigator, "I clicked search")
    wait_for(instructor, lambda d: messages(d) == ["You: Open the weather site", "Navigator: I clicked search"])
    time.sleep(0.05)
    second = upload_browser_turn(server, demo, "click-2", clock(), seed=2)
    wait_for(instructor, lambda d: shown_screenshot(d) == second)
    send(instructor, "Thanks, that's all")
    wait_for(navigator, lambda d: len(messages(d)) == 3)

    click_and_confirm(instructor, instructor.find_element(By.ID, "end-button"))
    for driver in drivers:
        wait_for(driver, lambda d: d.find_element(By.ID, "ended").is_displayed())

    recording = api(server.platform, f"/api/recordings/{demo}/", server.token)
    assert recording["status"] == "recorded"
    timeline = stored_turns(server.platform, server.token, demo)
    assert [(t["type"], t.get("speaker") or t.get("intent")) for t in timeline] == [
        ("chat", "instructor"),
        ("browser", "click"),
        ("chat", "navigator"),
        ("browser", "click"),
        ("chat", "instructor"),
    ]
    times = [t["timestamp"] for t in timeline]
    assert times == sorted(times)


def test_a_no_vision_instructor_page_never_receives_the_screen(server, drivers):
    navigator, instructor = drivers
    demo = api(
        server.platform,
        "/api/recordings/",
        server.token,
        {"client_id": "live-e2e-2", "project": "live", "mode": "chat", "instructor_sees_screen": False},
    )["name"]
    sign_in(navigator, server.url, "livenav")
    navigator.get(f"{server.url}/sessions/{demo}/navigate")
    invite = navigator.find_element(By.ID, "invite-url").get_attribute("value")
    sign_in(instructor, server.url, "liveins")
    # Keep every message the instructor page's socket receives.
    instructor.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_SOCKET_MESSAGES})
    instructor.get(invite)
    instructor.find_element(By.ID, "join-button").click()
    wait_for(instructor, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live")
    assert instructor.find_element(By.ID, "no-vision").is_displayed()
    sha = upload_browser_turn(server, demo, "click-1", 1.0, seed=5)
    send(navigator, "I am on the results page")
    wait_for(instructor, lambda d: messages(d) == ["Navigator: I am on the results page"])
    received = "\n".join(instructor.execute_script("return window.__received"))
    assert '"type": "turn"' in received
    assert sha not in received
    assert payloads.URL not in received
    assert '"intent"' not in received
    assert instructor.find_elements(By.ID, "screen-shot") == []
    fetch_status = "fetch(arguments[0]).then((response) => arguments[1](response.status))"
    assert instructor.execute_async_script(fetch_status, f"/sessions/{demo}/screenshots/{sha}") == 404
    assert navigator.execute_async_script(fetch_status, f"/sessions/{demo}/screenshots/{sha}") == 200


def test_the_navigator_page_revokes_its_link_and_the_old_one_says_so(server, drivers):
    navigator, instructor = drivers
    demo = api(server.platform, "/api/recordings/", server.token, {"client_id": "live-e2e-revoke", "project": "live"})
    sign_in(navigator, server.url, "livenav")
    navigator.get(f"{server.url}/sessions/{demo['name']}/navigate")
    old_field = navigator.find_element(By.ID, "invite-url")
    old = old_field.get_attribute("value")

    click_and_confirm(navigator, navigator.find_element(By.ID, "revoke-invite"))  # a form post: the page is replaced
    wait_for(navigator, EC.staleness_of(old_field))
    new = wait_for(navigator, lambda d: d.find_element(By.ID, "invite-url").get_attribute("value"))
    assert new != old

    sign_in(instructor, server.url, "liveins")
    instructor.get(old)
    assert "revoked" in instructor.find_element(By.ID, "join-error").text
    assert instructor.find_elements(By.ID, "join-button") == []
    instructor.get(new)
    instructor.find_element(By.ID, "join-button").click()
    wait_for(instructor, lambda d: d.current_url.endswith(f"/sessions/{demo['name']}/instruct"))
    instructor.get(new)  # following it again as the instructor: back to the instructor's page
    wait_for(instructor, lambda d: d.current_url.endswith(f"/sessions/{demo['name']}/instruct"))
    wait_for(navigator, lambda d: not d.find_element(By.ID, "invitation").is_displayed())  # used: the link goes


def start_session(server, navigator, instructor, client_id: str) -> str:
    """A chat-mode demonstration with the navigator's page and the instructor's (joined by invitation) live."""
    demo = api(server.platform, "/api/recordings/", server.token, {"client_id": client_id, "project": "live"})["name"]
    sign_in(navigator, server.url, "livenav")
    navigator.get(f"{server.url}/sessions/{demo}/navigate")
    invite = navigator.find_element(By.ID, "invite-url").get_attribute("value")
    sign_in(instructor, server.url, "liveins")
    instructor.get(invite)
    instructor.find_element(By.ID, "join-button").click()
    for driver in (navigator, instructor):
        wait_for(driver, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live")
    return demo


def test_pages_reconnect_after_a_server_restart_and_deliver_a_message_written_meanwhile_once(server, drivers):
    navigator, instructor = drivers
    demo = start_session(server, navigator, instructor, "live-e2e-restart")
    send(instructor, "Before the restart")
    wait_for(navigator, lambda d: messages(d) == ["Instructor: Before the restart"])

    server.stop()
    for driver in drivers:
        wait_for(driver, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "reconnecting")
    send(instructor, "Written while the server was down")
    assert instructor.find_elements(By.CSS_SELECTOR, "#messages li.pending")
    server.start()

    for driver in drivers:
        wait_for(driver, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live", 60)
    expected = ["Instructor: Before the restart", "Instructor: Written while the server was down"]
    wait_for(navigator, lambda d: messages(d) == expected, 30)
    wait_for(
        instructor, lambda d: [m.split(": ", 1)[1] for m in messages(d)] == [e.split(": ", 1)[1] for e in expected]
    )
    send(navigator, "Back again")
    wait_for(instructor, lambda d: len(messages(d)) == 3)
    chat = [t["utterance"] for t in stored_turns(server.platform, server.token, demo) if t["type"] == "chat"]
    assert chat == ["Before the restart", "Written while the server was down", "Back again"]


def test_a_message_unacknowledged_when_the_page_is_closed_is_sent_when_it_is_opened_again(server, drivers):
    navigator, instructor = drivers
    demo = start_session(server, navigator, instructor, "live-e2e-closed-page")
    send(instructor, "Before the outage")
    wait_for(navigator, lambda d: messages(d) == ["Instructor: Before the outage"])

    server.stop()
    wait_for(instructor, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "reconnecting")
    send(instructor, "Typed while the server was down")
    assert instructor.find_elements(By.CSS_SELECTOR, "#messages li.pending")
    instructor.get("about:blank")  # the page is closed with the message unacknowledged
    server.start()

    wait_for(navigator, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live", 60)
    time.sleep(1)  # an absence has no event to wait on: a message wrongly replayed would have arrived by now
    assert messages(navigator) == ["Instructor: Before the outage"]  # nobody had it
    instructor.get(f"{server.url}/sessions/{demo}/instruct")
    expected = ["Instructor: Before the outage", "Instructor: Typed while the server was down"]
    wait_for(navigator, lambda d: messages(d) == expected, 30)
    wait_for(instructor, lambda d: len(messages(d)) == 2)
    instructor.refresh()  # sent and acknowledged: a second visit sends nothing again
    wait_for(instructor, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live")
    wait_for(instructor, lambda d: len(messages(d)) == 2)
    left = instructor.execute_script("return Object.keys(localStorage).filter((k) => k.startsWith('webtasks.live'))")
    assert left == []
    chat = [t["utterance"] for t in stored_turns(server.platform, server.token, demo) if t["type"] == "chat"]
    assert chat == ["Before the outage", "Typed while the server was down"]


def panel_messages(recorder: Recorder) -> list[str]:
    return recorder.evaluate(
        "[...document.querySelectorAll('#live-messages li:not(.pending)')].map(li => li.textContent)"
    )


def panel_invite(recorder: Recorder) -> str:
    return recorder.evaluate("document.getElementById('live-invite').value")


def panel_text(recorder: Recorder, element_id: str) -> str:
    return recorder.evaluate(f"document.getElementById({element_id!r}).textContent")


@contextlib.contextmanager
def chat_recording(server, instructor, task: str):
    """The real extension recording a chat-mode demo, its side panel joined to the session, and the instructor's
    browser joined through the panel's invitation; yields ``(cdp, recorder, demo name)``."""
    with extension_browser(server, "live") as (_, cdp, recorder):
        recorder.start(task_description=task, mode="chat")
        demo = wait_until(lambda: (recorder.status().get("session") or {}).get("demoName"), 60, message="demo")
        wait_until(lambda: panel_text(recorder, "live-state") == "connected", 30, message="panel joined")
        first = wait_until(lambda: recorder.evaluate("document.getElementById('live-invite').value"), 10)
        # The panel's "Revoke link": the server answers with a new link, and the first one stops working.
        recorder.evaluate("document.getElementById('live-revoke-invite').click()")
        invite = wait_until(lambda: (value := panel_invite(recorder)) != first and value, 10, message="new link")
        sign_in(instructor, server.url, "liveins")
        instructor.get(first)
        assert "revoked" in instructor.find_element(By.ID, "join-error").text
        instructor.get(invite)
        instructor.find_element(By.ID, "join-button").click()
        wait_for(instructor, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live")
        yield cdp, recorder, demo


def test_the_side_panel_chats_with_the_instructor_over_the_session(server, drivers):
    """The real extension: a chat-mode recording's side panel joins the session with its token, shows the
    instructor's messages, sends the navigator's, and stops the recording when the instructor ends it."""
    instructor = drivers[0]
    with chat_recording(server, instructor, "Chat with the instructor") as (_, recorder, demo):
        wait_until(lambda: "liveins is here" in panel_text(recorder, "live-instructor"), 20, message="presence")

        send(instructor, "Open the first result")
        wait_until(
            lambda: panel_messages(recorder) == ["Instructor: Open the first result"], 20, message="panel got it"
        )
        captured = recorder.status()["counters"]["captured"]
        recorder.evaluate(
            "document.getElementById('chat-utterance').value = 'Opening it now';"
            "document.getElementById('chat-form').requestSubmit(); true"
        )
        wait_for(instructor, lambda d: messages(d) == ["You: Open the first result", "Navigator: Opening it now"])
        wait_until(lambda: len(panel_messages(recorder)) == 2, 20, message="panel shows its own message")
        assert recorder.status()["counters"]["captured"] == captured  # sent over the socket, not the recorder's path

        # The panel's pings carry its recording-clock reading (seconds since the session's startedAt).
        recorder.evaluate(
            "window.__sent = []; const send = WebSocket.prototype.send;"
            "WebSocket.prototype.send = function (data) { window.__sent.push(data); return send.call(this, data); };"
            "true"
        )
        ping = wait_until(
            lambda: next((m for m in map(json.loads, recorder.evaluate("window.__sent")) if m["type"] == "ping"), None),
            25,
            message="a ping from the panel",
        )
        started_at = recorder.status()["session"]["startedAt"]
        now = recorder.evaluate("Date.now()")
        assert 0 <= (now - started_at) / 1000 - ping["clock"] < 20

        click_and_confirm(instructor, instructor.find_element(By.ID, "end-button"))
        wait_for(instructor, lambda d: d.find_element(By.ID, "ended").is_displayed())
        wait_until(lambda: not recorder.status().get("state", {}).get("recording"), 30, message="recording stopped")
        chat = [t for t in stored_turns(server.platform, server.token, demo) if t["type"] == "chat"]
        assert [(t["speaker"], t["utterance"]) for t in chat] == [
            ("instructor", "Open the first result"),
            ("navigator", "Opening it now"),
        ]


def test_ending_from_the_instructor_page_keeps_the_recorders_queued_turns(server, drivers):
    """The recorder still holds turns (their upload is blocked) when the instructor ends the demonstration: the
    panel stops the recording, and once uploads go through again, they are stored and the finish succeeds."""
    instructor = drivers[0]
    with chat_recording(server, instructor, "End while uploads wait") as (cdp, recorder, demo):
        worker = cdp.service_workers()[0]
        # Hold the recorder's turn uploads (the service worker's requests), then record a turn on its own path.
        worker_session = cdp.send("Target.attachToTarget", {"targetId": worker["targetId"], "flatten": True})
        worker_session = worker_session["sessionId"]
        cdp.send("Network.enable", session_id=worker_session)
        held = [f"*/api/recordings/{demo}/turns/*", f"*/api/recordings/{demo}/bundle/*"]  # bundle: turns with blobs
        cdp.send("Network.setBlockedURLs", {"urls": held}, session_id=worker_session)
        recorder.evaluate(
            "document.getElementById('chat-speaker').value = 'instructor';"
            "document.getElementById('chat-utterance').value = 'Transcribed before the end';"
            "document.getElementById('chat-form').requestSubmit(); true"
        )
        wait_until(lambda: recorder.status()["counters"]["queued"] >= 1, 20, message="a queued turn")
        time.sleep(0.5)

        click_and_confirm(instructor, instructor.find_element(By.ID, "end-button"))
        wait_until(lambda: not recorder.status().get("state", {}).get("recording"), 30, message="recording stopped")
        assert stored_turns(server.platform, server.token, demo) == []  # still held by the recorder
        cdp.send("Network.setBlockedURLs", {"urls": []}, session_id=worker_session)

        status = recorder.wait_idle(120)
        assert status["counters"]["failed"] == 0, status
        timeline = stored_turns(server.platform, server.token, demo)
        assert [(t["speaker"], t["utterance"]) for t in timeline] == [("instructor", "Transcribed before the end")]
        recording = api(server.platform, f"/api/recordings/{demo}/", server.token)
        assert recording["status"] == "recorded"
        cdp.send("Target.detachFromTarget", {"sessionId": worker_session})
