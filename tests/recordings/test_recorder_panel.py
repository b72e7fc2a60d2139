"""The recorder's side panel as an annotator follows a recording: mode first, the live action list, Stop, offline.

One module-scoped platform and one Chromium with the extension (as ``test_recorder_ui.py``). The side panel page is
opened in a window of its own with ``?server=&token=&project=`` (sign-in is another test's subject) and driven with
Selenium as a person would: the mode chosen first shows only its controls; actions on a fixture page appear in the
panel's list with their labels and pages; chat turns are counted; Stop shows a confirmation naming the recording
with its upload state, a link that opens it in the app as that annotator, and an empty form; with the server
stopped the status line says the actions are kept, and after it is back, that all was sent. Each flow runs twice
in one project. A password typed on the page never shows in the panel or its chrome.storage.local. Each panel
state is saved as a screenshot (``tests/support/panel_shots.py``).
"""

import json
import re
import time
import urllib.parse

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.support.browser import sign_in_form
from tests.support.panel_shots import save_panel_shot
from tests.support.recorder_browser import choose, wait_for_url
from tests.support.recorder_harness import EXTENSION_ORIGIN, api, extension_browser, live_platform, stored_turns

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PROJECT = "recorder-panel"
USERNAME = "panel-annotator"
PASSWORD = "Walrus-Panel-Pass-93"  # the annotator's password for the app (signing in to open the link)
SECRET = "Qx9-typed-Secret-5150"  # typed into the fixture page's password field
SAVED = re.compile(r"^all (\d+) actions? saved$")
OFFLINE = re.compile(r"Offline — (\d+) actions? kept, will send when the server is back")


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("recorder-panel-var"), "recorder_panel", USERNAME, PROJECT) as running:
        code = (
            "from django.contrib.auth import get_user_model\n"
            f"user = get_user_model().objects.get(username={USERNAME!r})\n"
            f"user.set_password({PASSWORD!r}); user.save()\n"
        )
        done = running.platform.manage("shell", "-c", code)
        assert done.returncode == 0, done.stderr
        yield running


class Panel:
    """The side panel page in a window of its own; ``home`` is the window of the recorded pages."""

    def __init__(self, driver, live, test_name: str):
        self.driver, self.live, self.test_name = driver, live, test_name
        self.home = driver.current_window_handle
        driver.switch_to.new_window("window")
        self.handle = driver.current_window_handle
        driver.set_window_size(440, 1000)
        query = urllib.parse.urlencode({"server": live.url, "token": live.token, "project": PROJECT})
        driver.get(f"{EXTENSION_ORIGIN}/sidepanel/sidepanel.html?{query}")
        WebDriverWait(driver, 30).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-configured"))
        WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, "project").get_attribute("value") == PROJECT)
        WebDriverWait(driver, 30).until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-mode"))

    def show(self):
        self.driver.switch_to.window(self.handle)

    def page(self):
        self.driver.switch_to.window(self.home)

    def find(self, id_: str):
        return self.driver.find_element(By.ID, id_)

    def visible(self, id_: str) -> bool:
        return self.find(id_).is_displayed()

    def text(self, id_: str) -> str:
        return self.find(id_).text.strip()

    def wait(self, condition, timeout: float = 60, message: str = ""):
        return WebDriverWait(self.driver, timeout, poll_frequency=0.2).until(lambda d: condition(), message)

    def shot(self, state: str) -> None:
        save_panel_shot(self.driver, self.test_name, state)

    def choose_mode(self, mode: str) -> None:
        self.driver.find_element(By.CSS_SELECTOR, f"#mode-choice input[value={mode}]").click()

    def checked_mode(self) -> str:
        return self.driver.find_element(By.CSS_SELECTOR, "#mode-choice input:checked").get_attribute("value")

    def start(self, task: str) -> str:
        self.find("task-description").send_keys(task)
        self.find("websites").send_keys("127.0.0.1")
        self.find("start-button").click()
        self.wait(lambda: self.text("record-state") == "Recording", message="recording")
        self.wait(lambda: self.text("demo-name").startswith("("), message="the demo created on the server")
        return self.text("demo-name").strip("()")

    def items(self) -> list[str]:
        """The live list as shown: "type label page" per line, newest first."""
        # Read in one script: the panel redraws the list as actions arrive, so held elements would go stale.
        return self.driver.execute_script(
            "return [...document.querySelectorAll('#actions li.action')]"
            ".map((li) => li.innerText.replace(/\\s*\\n\\s*/g, ' ').trim())"
        )

    def storage(self) -> str:
        script = "const done = arguments[0]; chrome.storage.local.get(null).then((all) => done(JSON.stringify(all)));"
        return self.driver.execute_async_script(script)

    def stop(self) -> None:
        self.find("stop-button").click()
        self.wait(lambda: self.text("record-state") == "Not recording", message="stopped")
        self.wait(lambda: self.visible("saved"), message="the stop confirmation")

    def close(self) -> None:
        self.show()
        self.driver.close()
        self.driver.switch_to.window(self.home)


@pytest.fixture(scope="module")
def driver(live):
    with extension_browser() as (driver, _, _):
        yield driver


def shot_name(request) -> str:
    return request.node.name


def assert_only(panel: Panel, shown: set[str], hidden: set[str]) -> None:
    for id_ in shown:
        assert panel.visible(id_), f"#{id_} hidden in mode {panel.checked_mode()}"
    for id_ in hidden:
        assert not panel.visible(id_), f"#{id_} shown in mode {panel.checked_mode()}"


MODE_CONTROLS = {"instructor-sees-screen", "alt-click-note", "task-mhtml", "tasks"}


def check_saved(panel: Panel, name: str, task: str) -> int:
    """The confirmation names the recording and, once the server has it all, says how many actions were saved."""
    panel.wait(lambda: SAVED.match(panel.text("saved-state")), 120, "all saved")
    assert panel.text("saved-name") == name
    assert panel.text("saved-task") == task
    saved = int(SAVED.match(panel.text("saved-state")).group(1))
    assert saved == len(stored_turns(panel.live.platform, panel.live.token, name))
    link = panel.find("saved-link")
    assert link.is_displayed()
    assert link.get_attribute("href") == f"{panel.live.url}/review/{name}/"
    # The form is empty again: Start would not record the same task twice by accident.
    for id_ in ("task-description", "websites", "category", "region"):
        assert panel.find(id_).get_attribute("value") == "", id_
    return saved


def open_link_as_the_annotator(panel: Panel, name: str, signed_in: bool) -> None:
    """Follow the confirmation's link (a new tab) as the annotator signed in to the app: their demo's page."""
    driver = panel.driver
    if not signed_in:
        panel.page()
        sign_in_form(driver, panel.live.url, USERNAME, PASSWORD)
        panel.show()
    before = set(driver.window_handles)
    panel.find("saved-link").click()
    WebDriverWait(driver, 20).until(lambda d: len(set(d.window_handles) - before) == 1)
    (tab,) = set(driver.window_handles) - before
    driver.switch_to.window(tab)
    WebDriverWait(driver, 30).until(lambda d: name in d.page_source)
    assert driver.current_url == f"{panel.live.url}/review/{name}/", driver.current_url
    assert "Not found" not in driver.title
    driver.close()
    panel.show()


def new_recording(panel: Panel) -> None:
    panel.find("new-recording").click()
    panel.wait(lambda: not panel.visible("saved") and panel.visible("start"), message="the form again")


# --------------------------------------------------------------------------------------------------------------
# Solo task: mode first, the live list with labels, no private value anywhere, Stop with everything saved


def test_solo_recordings_list_their_actions_and_stop_with_all_saved_and_a_link(driver, live, servers, request):
    main, _ = servers
    panel = Panel(driver, live, shot_name(request))
    try:
        assert panel.checked_mode() == "task", "solo task is the default for someone recording alone"
        for mode, shown in (
            ("task", {"alt-click-note"}),
            ("step", {"task-mhtml", "tasks"}),
            ("chat", {"instructor-sees-screen"}),
            ("task", {"alt-click-note"}),
        ):
            panel.choose_mode(mode)
            assert_only(panel, shown, MODE_CONTROLS - shown)
            panel.shot(f"start-{mode}")
        host = urllib.parse.urlsplit(main).netloc
        for run in (1, 2):
            task = f"Solo run {run}: fill in the form and go to the second page"
            name = panel.start(task)
            assert_only(panel, {"actions", "stop-button"}, {"chat-form", "chat-count", "start"})
            panel.shot(f"run{run}-recording-empty")

            panel.page()
            driver.get(f"{main}/form.html")
            wait_for_url(driver, "/form.html")
            time.sleep(0.6)
            driver.find_element(By.ID, "name").click()
            driver.find_element(By.ID, "name").send_keys(f"Ada {run}")
            time.sleep(0.6)
            driver.find_element(By.ID, "password").click()
            driver.find_element(By.ID, "password").send_keys(SECRET)
            time.sleep(0.6)
            choose(driver.find_element(By.ID, "color"), "Blue")
            time.sleep(0.6)
            driver.find_element(By.ID, "to-second").click()
            wait_for_url(driver, "/second.html")
            time.sleep(0.6)

            panel.show()
            expected = [  # newest first
                f"load {host}/second.html",
                f"click Second page {host}/form.html",
                f"select color {host}/form.html",
                f"type password {host}/form.html",
            ]
            panel.wait(
                lambda expected=expected: all(line in panel.items() for line in expected),
                60,
                f"the list shows {expected}",
            )
            items = panel.items()
            assert [items.index(line) for line in expected] == sorted(items.index(line) for line in expected), items
            assert len(items) <= 10, items
            panel.shot(f"run{run}-recording-actions")
            assert SECRET not in driver.page_source
            stored = panel.storage()
            assert "password" in stored
            assert SECRET not in stored

            panel.stop()
            saved = check_saved(panel, name, task)
            assert saved >= len(expected)
            panel.shot(f"run{run}-stopped-all-saved")
            open_link_as_the_annotator(panel, name, signed_in=run > 1)
            new_recording(panel)
            assert panel.checked_mode() == "task"
            panel.shot(f"run{run}-new-recording")
        names = {
            r["task_description"]
            for r in api(live.platform, f"/api/recordings/?project__name={PROJECT}", live.token)["results"]
        }
        assert {f"Solo run {run}: fill in the form and go to the second page" for run in (1, 2)} <= names
    finally:
        panel.close()


# --------------------------------------------------------------------------------------------------------------
# Chat with an instructor: its controls, chat turns counted and listed, the mode remembered


def send_chat(panel: Panel, speaker: str, utterance: str) -> None:
    choose(panel.find("chat-speaker"), speaker)
    panel.find("chat-utterance").send_keys(utterance)
    panel.driver.find_element(By.CSS_SELECTOR, "#chat-form button[type=submit]").click()
    panel.wait(lambda: panel.find("chat-utterance").get_attribute("value") == "", 30, "the message sent")


def test_chat_recordings_show_the_chat_and_count_its_turns(driver, live, servers, request):
    main, _ = servers
    panel = Panel(driver, live, shot_name(request))
    try:
        for run in (1, 2):
            if run == 1:
                panel.choose_mode("chat")
            else:  # the last mode chosen is kept for the next time the panel opens
                driver.refresh()
                panel.wait(lambda: panel.checked_mode() == "chat", 30, "chat mode remembered")
                panel.wait(lambda: panel.find("project").get_attribute("value") == PROJECT, 30, "signed in")
            assert_only(panel, {"instructor-sees-screen"}, MODE_CONTROLS - {"instructor-sees-screen"})
            task = f"Chat run {run}: ask the instructor, then open the second page"
            name = panel.start(task)
            assert_only(panel, {"chat-form", "chat-count", "actions"}, {"step"})
            speakers = [
                o.get_attribute("value") for o in panel.driver.find_elements(By.CSS_SELECTOR, "#chat-speaker option")
            ]
            assert speakers == ["navigator", "instructor"]
            assert panel.text("chat-count") == "No chat messages yet"
            send_chat(panel, "Navigator", "Which page first?")
            send_chat(panel, "Instructor", "The second one.")
            send_chat(panel, "Navigator", "Opening it now.")
            panel.wait(lambda: panel.text("chat-count") == "3 chat messages", 60, "3 chat messages")
            panel.shot(f"run{run}-chat-counted")

            panel.page()
            driver.get(f"{main}/form.html")
            wait_for_url(driver, "/form.html")
            time.sleep(0.6)
            driver.find_element(By.ID, "to-second").click()
            wait_for_url(driver, "/second.html")
            time.sleep(0.6)
            panel.show()
            panel.wait(lambda: any(i.startswith("click Second page") for i in panel.items()), 60, "the click listed")
            chats = [i for i in panel.items() if i.startswith("chat ")]
            assert sorted(chats) == ["chat Instructor", "chat Navigator", "chat Navigator"], panel.items()
            assert panel.text("chat-count") == "3 chat messages"
            panel.shot(f"run{run}-chat-actions")

            panel.stop()
            check_saved(panel, name, task)
            turns = stored_turns(live.platform, live.token, name)
            assert sorted(t["utterance"] for t in turns if t["type"] == "chat") == [
                "Opening it now.",
                "The second one.",
                "Which page first?",
            ]
            assert api(live.platform, f"/api/recordings/{name}/", live.token)["mode"] == "chat"
            panel.shot(f"run{run}-stopped")
            new_recording(panel)
    finally:
        panel.choose_mode("task")  # the next test starts from the default
        panel.close()


# --------------------------------------------------------------------------------------------------------------
# Offline: the server stopped mid-recording, Stop with uploads waiting, the server back


def test_offline_the_panel_says_actions_are_kept_and_all_sent_once_the_server_is_back(driver, live, servers, request):
    main, _ = servers
    panel = Panel(driver, live, shot_name(request))
    try:
        for run in (1, 2):
            task = f"Offline run {run}: click while the server is down"
            panel.choose_mode("task")
            name = panel.start(task)
            panel.page()
            driver.get(f"{main}/second.html")
            wait_for_url(driver, "/second.html")
            time.sleep(0.6)
            driver.find_element(By.ID, "second-button").click()
            panel.show()
            panel.wait(lambda: "All sent" in panel.text("status-line"), 60, "the first actions sent")

            live.stop()
            try:
                panel.page()
                for _ in range(3):
                    driver.find_element(By.ID, "second-button").click()
                    time.sleep(0.7)
                panel.show()
                panel.wait(lambda: OFFLINE.search(panel.text("status-line")), 90, "the offline line")
                line = panel.text("status-line")
                assert line.startswith("Recording · Offline — "), line
                assert int(OFFLINE.search(line).group(1)) >= 3, line
                assert "/api/" not in line, line
                assert "fetch" not in line.lower(), line
                details = panel.find("upload-details")
                assert details.get_attribute("open") is None  # the technical error, collapsed
                assert not panel.visible("last-error")
                panel.shot(f"run{run}-offline-recording")

                panel.stop()
                panel.wait(lambda: re.match(r"^\d+ waiting to upload$", panel.text("saved-state")), 30, "waiting")
                assert panel.text("saved-task") == task
                assert not panel.visible("saved-link")  # the app has no page for it until it is all there
                assert panel.find("task-description").get_attribute("value") == ""
                assert OFFLINE.search(panel.text("status-line"))
                assert panel.text("status-line").startswith("Not recording · Offline — ")
                panel.shot(f"run{run}-stopped-waiting")
            finally:
                live.start()
            panel.find("upload-now").click()  # as a person would, rather than wait for the next retry
            saved = check_saved(panel, name, task)
            assert saved >= 5
            panel.wait(lambda: panel.text("status-line") == "Not recording · All sent", 60, "all sent")
            clicks = [t for t in stored_turns(live.platform, live.token, name) if t.get("intent") == "click"]
            assert len(clicks) == 4, json.dumps(clicks)[:2000]
            panel.shot(f"run{run}-all-sent")
            new_recording(panel)
    finally:
        panel.close()
