"""The recorder's first run as a new annotator meets it: the side panel asks for the server, checks it, then signs
in with a username and password (or a pasted token), and only then shows the project and the recording form.

One module-scoped platform and one Chromium with the extension loaded (as in ``test_recorder_ui.py``); the side panel
page is opened as a tab with no URL parameters, as a person opens it, and driven with Selenium. The texts asserted
are the ones a person reads; each state's screenshot is kept (``tests.support.panel_shots``).
"""

import json
import time
import urllib.error
import urllib.request

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from devtools.processes import free_port
from tests.support.loopback import loopback_server
from tests.support.panel_shots import save_panel_shot
from tests.support.recorder_harness import EXTENSION_ORIGIN, extension_browser, live_platform

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PROJECT = "recorder-connect"
PANEL_URL = f"{EXTENSION_ORIGIN}/sidepanel/sidepanel.html"
FIRST, SECOND = "first-annotator", "second-annotator"
PASSWORD = "Connect-Passw0rd-{}"  # each annotator's, by name
GUESSER = f"guesser-{time.time_ns()}"  # a fresh name: the failure count lives in Redis, across runs


# --------------------------------------------------------------------------------------------------------------
# Fixtures and helpers


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("recorder-connect-var"), "recorder_connect", FIRST, PROJECT) as running:
        running.tokens = annotators(running.platform, FIRST, SECOND, GUESSER)
        yield running


@pytest.fixture(scope="module")
def driver(live):
    with extension_browser() as (driver, _, _):
        yield driver


def annotators(platform, *usernames: str) -> dict[str, str]:
    """Annotators of ``PROJECT`` with their passwords (``PASSWORD``) and tokens, in one shell; ``{username: token}``."""
    code = (
        "import json\n"
        "from django.contrib.auth import get_user_model\n"
        "from annotation.models import Membership, Project\n"
        "from rest_framework.authtoken.models import Token\n"
        f"project = Project.objects.get(name={PROJECT!r})\n"
        "tokens = {}\n"
        f"for name in {list(usernames)!r}:\n"
        "    user, _ = get_user_model().objects.get_or_create(username=name)\n"
        f"    user.set_password({PASSWORD!r}.format(name)); user.save()\n"
        "    Membership.objects.get_or_create(project=project, user=user, defaults={'role': 'annotator'})\n"
        "    tokens[name] = Token.objects.get_or_create(user=user)[0].key\n"
        "print(json.dumps(tokens))\n"
    )
    result = platform.manage("shell", "-c", code)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def open_first_run(driver) -> None:
    """The panel as on a fresh install: nothing saved, no URL parameters."""
    driver.get(PANEL_URL)
    step_is(driver, None)  # its start-up done (it may write the config), then nothing saved:
    driver.execute_async_script("chrome.storage.local.clear().then(arguments[0])")
    driver.get(PANEL_URL)
    step_is(driver, "server")


def step_is(driver, step: str | None) -> None:
    """Wait until the panel shows the first-run step ``step`` (None: any step)."""

    def showing(d):
        shown_step = d.find_element(By.TAG_NAME, "body").get_attribute("data-signin-step")
        return shown_step == step if step else shown_step

    WebDriverWait(driver, 30).until(showing)


def shown(driver, element_id: str) -> bool:
    return driver.find_element(By.ID, element_id).is_displayed()


def text_of(driver, element_id: str) -> str:
    return driver.find_element(By.ID, element_id).text.strip()


def says(driver, element_id: str, expected: str, timeout: float = 30) -> str:
    """Wait until the element's text is ``expected`` (or contains it, for the longer messages)."""
    WebDriverWait(driver, timeout).until(lambda d: expected in text_of(d, element_id))
    return text_of(driver, element_id)


def submit_server(driver, typed: str) -> None:
    field = driver.find_element(By.ID, "server-url")
    field.clear()
    field.send_keys(typed)
    driver.find_element(By.CSS_SELECTOR, "#server-form button[type=submit]").click()


def sign_in_with_password(driver, username: str, password: str) -> None:
    for field_id, value in (("username", username), ("password", password)):
        field = driver.find_element(By.ID, field_id)
        field.clear()
        field.send_keys(value)
    driver.find_element(By.CSS_SELECTOR, "#password-form button[type=submit]").click()


def sign_in_with_token(driver, token: str) -> None:
    if not driver.find_element(By.ID, "token").is_displayed():
        driver.find_element(By.CSS_SELECTOR, "#token-way summary").click()
    field = driver.find_element(By.ID, "token")
    field.clear()
    field.send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "#token-form button[type=submit]").click()


def stored(driver) -> dict:
    """Everything the extension keeps in chrome.storage.local, read by the panel page's own script."""
    script = "chrome.storage.local.get(null).then((all) => arguments[0](JSON.stringify(all)))"
    return json.loads(driver.execute_async_script(script))


def recording_form_hidden(driver) -> bool:
    return not shown(driver, "start") and not shown(driver, "tasks")


def signed_in_as(driver, live, username: str) -> None:
    says(driver, "signed-in-as", f"Signed in to {live.url} as {username}")
    step_is(driver, "signed-in")
    assert shown(driver, "start")
    assert shown(driver, "mode-choice")  # the mode comes first; the task list shows in step mode
    project = driver.find_element(By.ID, "project")
    WebDriverWait(driver, 10).until(lambda d: project.get_attribute("value") == PROJECT)
    assert says(driver, "project-role", "Your role: annotator") == "Your role: annotator"


# --------------------------------------------------------------------------------------------------------------
# Tests


def test_a_first_run_explains_each_wrong_server_then_signs_in_with_a_password(driver, live):
    shot = lambda state: save_panel_shot(driver, "first-run-password", state)  # noqa: E731
    open_first_run(driver)
    assert recording_form_hidden(driver)
    assert not shown(driver, "account")
    assert not shown(driver, "signed-in")
    shot("server")

    host = live.url.split("://", 1)[1]
    submit_server(driver, host)
    assert says(driver, "server-result", "Add http") == f"Add http:// or https:// in front: https://{host}"
    shot("scheme-missing")

    closed = f"http://127.0.0.1:{free_port()}"
    submit_server(driver, closed)
    expected = f"Cannot reach {closed}: is the address right and the server running?"
    assert says(driver, "server-result", "Cannot reach") == expected
    shot("unreachable")

    with loopback_server() as other:
        submit_server(driver, other.url)
        says(driver, "server-result", f"{other.url} answers, but it is not a demonstrations platform")
        shot("not-the-platform")
        assert [(r.method, r.path) for r in other.requests] == [("GET", "/healthz")]  # nothing else, no credentials
    step_is(driver, "server")
    assert recording_form_hidden(driver)

    submit_server(driver, live.url + "/")
    step_is(driver, "account")
    assert text_of(driver, "account-server") == live.url
    assert driver.find_element(By.ID, "token-page").get_attribute("href") == f"{live.url}/account/token/"
    assert recording_form_hidden(driver)
    shot("sign-in")

    sign_in_with_password(driver, FIRST, "not-the-password")
    assert says(driver, "signin-result", "Wrong") == "Wrong username or password."
    assert driver.find_element(By.ID, "password").get_attribute("value") == ""
    assert recording_form_hidden(driver)
    shot("wrong-password")

    sign_in_with_password(driver, FIRST, PASSWORD.format(FIRST))
    signed_in_as(driver, live, FIRST)
    assert driver.find_element(By.ID, "password").get_attribute("value") == ""
    shot("signed-in")
    everything = json.dumps(stored(driver))
    assert PASSWORD.format(FIRST) not in everything
    assert stored(driver)["webtasks.config"]["token"] == live.tokens[FIRST]  # the token the platform gave

    driver.refresh()  # the panel opened again: still signed in, nothing asked
    signed_in_as(driver, live, FIRST)


def test_the_second_annotator_signs_out_the_first_and_signs_in_with_a_token(driver, live):
    shot = lambda state: save_panel_shot(driver, "second-annotator-token", state)  # noqa: E731
    open_first_run(driver)
    submit_server(driver, live.url)
    step_is(driver, "account")
    sign_in_with_password(driver, FIRST, PASSWORD.format(FIRST))
    signed_in_as(driver, live, FIRST)

    driver.find_element(By.ID, "sign-out").click()
    step_is(driver, "account")
    assert says(driver, "signin-result", "Signed out.") == "Signed out."
    assert "token" not in stored(driver)["webtasks.config"]
    assert recording_form_hidden(driver)
    shot("signed-out")

    sign_in_with_token(driver, "0" * 40)
    message = says(driver, "signin-result", "This token does not work")
    assert message.startswith(f"This token does not work on {live.url}: copy it again from your token page")
    assert "401" not in message
    assert "HTTP" not in message
    assert driver.find_element(By.ID, "token").get_attribute("value") == ""
    assert recording_form_hidden(driver)
    shot("wrong-token")

    sign_in_with_token(driver, live.tokens[SECOND])
    signed_in_as(driver, live, SECOND)  # the same project, another annotator
    assert stored(driver)["webtasks.config"]["token"] == live.tokens[SECOND]
    shot("second-annotator")

    driver.find_element(By.ID, "sign-out").click()
    step_is(driver, "account")
    driver.find_element(By.ID, "change-server").click()
    step_is(driver, "server")
    assert driver.find_element(By.ID, "server-url").get_attribute("value") == live.url
    shot("change-server")


def test_too_many_wrong_passwords_say_when_to_try_again(driver, live):
    for _ in range(10):  # LOGIN_FAILURE_LIMIT's default
        body = json.dumps({"username": GUESSER, "password": "wrong"}).encode()
        request = urllib.request.Request(
            f"{live.url}/api/auth/token/", body, {"Content-Type": "application/json"}, method="POST"
        )
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(request, timeout=30)

    open_first_run(driver)
    submit_server(driver, live.url)
    step_is(driver, "account")
    sign_in_with_password(driver, GUESSER, PASSWORD.format(GUESSER))  # the right one, too late
    message = says(driver, "signin-result", "Too many failed sign-ins")
    assert message.startswith("Too many failed sign-ins for this username: try again in "), message
    assert message.endswith("minutes.") or message.endswith("minute."), message
    assert recording_form_hidden(driver)
    save_panel_shot(driver, "too-many-failures", "throttled")


def test_a_kept_token_is_checked_when_the_panel_opens_again(driver, live):
    """A token rotated since is forgotten and asked for again; a server not answering keeps it for the next try."""
    open_first_run(driver)
    stale = {"serverUrl": live.url, "token": "f" * 40, "user": FIRST, "project": PROJECT}
    driver.execute_async_script(
        f"chrome.storage.local.set({{'webtasks.config': {json.dumps(stale)}}}).then(arguments[0])"
    )
    driver.refresh()
    step_is(driver, "account")
    assert says(driver, "signin-result", "This token does not work").startswith(
        f"This token does not work on {live.url}"
    )
    assert "token" not in stored(driver)["webtasks.config"]
    assert recording_form_hidden(driver)

    closed = f"http://127.0.0.1:{free_port()}"
    away = {**stale, "serverUrl": closed, "token": live.tokens[FIRST]}
    driver.execute_async_script(
        f"chrome.storage.local.set({{'webtasks.config': {json.dumps(away)}}}).then(arguments[0])"
    )
    driver.refresh()
    step_is(driver, "server")
    assert says(driver, "server-result", "Cannot reach") == (
        f"Cannot reach {closed}: is the address right and the server running?"
    )
    assert driver.find_element(By.ID, "server-url").get_attribute("value") == closed
    assert stored(driver)["webtasks.config"]["token"] == live.tokens[FIRST]  # kept for when it answers
    assert recording_form_hidden(driver)
    save_panel_shot(driver, "kept-token", "server-not-answering")
