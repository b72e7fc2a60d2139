"""Labels in review, end to end: the real extension in headless Chromium records a click on a labelled text field,
typing into it and into a password field, a select change and a form submit on ``form.html``; a reviewer then
reads the review page as they would (signed in through the login form) and finds every action named, by the
field's label, the chosen option and the submit button, and the typed password nowhere."""

import html
import re

import pytest
from selenium.webdriver.common.by import By

from tests.support.recorder_browser import (
    PROJECT,
    Browser,
    choose,
    describe,
    pause,
    start_recording,
    stop_and_collect,
    wait_for_url,
)
from tests.support.recorder_harness import create_member, extension_browser, live_platform
from tests.support.site_client import Client

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PASSWORD = "Lbl-Secr3t-9081"
REVIEWER_PASSWORD = "review-labels-pass-1"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("recorder-labels-var"), "reclabels", "navigator", PROJECT) as running:
        yield running


@pytest.fixture(scope="module")
def browser(live):
    with extension_browser(live, PROJECT) as (driver, cdp, recorder):
        yield Browser(driver, cdp, recorder)


@pytest.fixture(scope="module")
def reviewer(live):
    """A reviewer of the project, signed in through the login form."""
    create_member(live.platform, "label-reviewer", PROJECT, role="reviewer")
    code = (
        "from django.contrib.auth import get_user_model\n"
        "user = get_user_model().objects.get(username='label-reviewer')\n"
        f"user.set_password({REVIEWER_PASSWORD!r})\n"
        "user.save()\n"
    )
    assert live.platform.manage("shell", "-c", code).returncode == 0
    client = Client(live.url, name="label-reviewer")
    assert client.sign_in("label-reviewer", REVIEWER_PASSWORD).status == 302
    return client


def record_form(browser, live, servers) -> tuple[str, list]:
    base, _ = servers
    driver = browser.driver
    driver.get(base + "/form.html")
    wait_for_url(driver, "/form.html")
    pause(1.0)
    name = start_recording(browser, live)
    find = driver.find_element
    find(By.ID, "name").click()
    find(By.ID, "name").send_keys("Ada Lovelace")
    pause()
    find(By.ID, "password").click()
    find(By.ID, "password").send_keys(PASSWORD)
    pause()
    choose(find(By.ID, "color"), "Blue")
    pause()
    find(By.ID, "submit").click()
    wait_for_url(driver, "/second.html")
    pause(2.0)
    return name, stop_and_collect(browser, live, name)


def shown_labels(reviewer, name: str) -> tuple[list, str]:
    response = reviewer.get(f"/review/{name}/")
    assert response.status == 200, response.status
    labels = [html.unescape(text) for text in re.findall(r'<div class="element">(.*?)</div>', response.text)]
    return labels, response.text


def in_order(wanted: list, shown: list) -> bool:
    rest = iter(shown)
    return all(any(label == item for item in rest) for label in wanted)


def test_the_review_page_names_each_recorded_action_by_its_label(browser, live, servers, reviewer):
    name, turns = record_form(browser, live, servers)
    labels, page = shown_labels(reviewer, name)

    wanted = [
        "input “Name”",  # the click on the field wrapped by <label>Name …
        "input “Name”",  # the text typed into it
        "input “Password”",
        "select “Colour: Blue”",
        "button “Send order”",
        "form “Send order”",  # the submit: its button's text, not the options' "RedGreenBlue"
    ]
    assert in_order(wanted, labels), f"{labels}\n{describe(turns)}"
    assert not any("RedGreenBlue" in label.replace(" ", "") for label in labels)
    assert PASSWORD not in page
    stored = {t["intent"] for t in turns if t["type"] == "browser"}
    assert {"click", "textInput", "change", "submit"} <= stored, describe(turns)
