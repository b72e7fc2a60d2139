"""The home page in a real headless Chromium against the running platform (Daphne): an annotator finds their
recording and opens its session from the home page and chats there; a reviewer follows the review queue into a
review page."""

import datetime as dt

import pytest
from selenium.webdriver.common.by import By

from tests.support.browser import make_driver, sign_in_form, wait_for
from tests.support.recorder_harness import api, live_platform, stored_turns

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PASSWORDS = {"homenav": "Navigator-Passw0rd!", "homerev": "Reviewer-Passw0rd!"}
ACCOUNTS = """
from django.contrib.auth import get_user_model
from annotation.models import Membership, Project, Role
project = Project.objects.get(name="home")
roles = {{"homenav": Role.ANNOTATOR, "homerev": Role.REVIEWER}}
for name, password in {passwords!r}.items():
    user, _ = get_user_model().objects.get_or_create(username=name)
    user.set_password(password)
    user.save()
    Membership.objects.get_or_create(project=project, user=user, defaults={{"role": roles[name]}})
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("home-ui"), "home", "homenav", "home") as running:
        done = running.platform.manage("shell", "-c", ACCOUNTS.format(passwords=PASSWORDS))
        assert done.returncode == 0, done.stderr
        yield running


@pytest.fixture
def driver():
    started = make_driver(width=1200, height=900)
    yield started
    started.quit()


def sign_in(driver, url: str, username: str) -> None:
    sign_in_form(driver, url, username, PASSWORDS[username])


def start_recording(server, client_id: str, task: str) -> str:
    body = {
        "client_id": client_id,
        "project": "home",
        "mode": "chat",
        "task_description": task,
        "recording_start": dt.datetime.now(dt.UTC).isoformat(),
    }
    return api(server.platform, "/api/recordings/", server.token, body)["name"]


def test_an_annotator_opens_their_session_from_the_home_page_and_chats(server, driver):
    demo = start_recording(server, "home-e2e-1", "Find a recipe")
    sign_in(driver, server.url, "homenav")
    driver.get(server.url + "/")
    item = wait_for(driver, lambda d: d.find_element(By.CSS_SELECTOR, "#navigating li"))
    assert demo in item.text
    assert "/sessions/join/" in item.find_element(By.CSS_SELECTOR, ".invite-url").get_attribute("value")
    item.find_element(By.LINK_TEXT, "Open session").click()
    wait_for(driver, lambda d: d.current_url.endswith(f"/sessions/{demo}/navigate"))
    wait_for(driver, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live")
    driver.find_element(By.ID, "chat-input").send_keys("Hello from the home page")
    driver.find_element(By.CSS_SELECTOR, "#chat-form button").click()
    shown = "#messages li:not(.pending)"
    wait_for(driver, lambda d: [li.text for li in d.find_elements(By.CSS_SELECTOR, shown)] != [])
    assert driver.find_element(By.CSS_SELECTOR, shown).text.endswith("Hello from the home page")
    timeline = stored_turns(server.platform, server.token, demo)
    assert [(t["type"], t.get("speaker"), t.get("utterance")) for t in timeline] == [
        ("chat", "navigator", "Hello from the home page")
    ]


def test_a_reviewer_follows_the_queue_into_a_review_page(server, driver):
    demo = start_recording(server, "home-e2e-2", "Book a table")
    api(server.platform, f"/api/recordings/{demo}/finish/", server.token, {})
    sign_in(driver, server.url, "homerev")
    driver.get(server.url + "/")
    queue = wait_for(driver, lambda d: d.find_element(By.CSS_SELECTOR, '#queue-counts a[data-status="recorded"]'))
    assert queue.find_element(By.XPATH, "..").text == "Recorded 1"
    queue.click()
    wait_for(driver, lambda d: d.current_url.endswith("/review/?project=home&status=recorded"))
    driver.find_element(By.CSS_SELECTOR, f'tr[data-name="{demo}"] a').click()
    wait_for(driver, lambda d: d.current_url.endswith(f"/review/{demo}/"))
    assert driver.find_element(By.ID, "status").text == "Recorded"
    assert driver.find_element(By.ID, "task").text == "Book a table"
