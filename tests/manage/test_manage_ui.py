"""Management and research pages in a real headless Chromium against the running platform (Daphne + a Celery
worker): a project admin adds a member and changes their role; a person creates, copies and rotates their API
token; a researcher starts an export from the page, watches its progress bar reach done and downloads it."""

import datetime as dt
import urllib.error
import urllib.request

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.support.browser import RECORD_CSP_VIOLATIONS, click_and_confirm, make_driver, sign_in_form, wait_for
from tests.support.recorder_harness import api, live_platform

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PASSWORDS = {"mgadmin": "Admin-Passw0rd!", "mgnew": "Newcomer-Passw0rd!"}
ACCOUNTS = """
from django.contrib.auth import get_user_model
from annotation.models import Membership, Project, Role
project = Project.objects.get(name="mgmt")
for name, password in {passwords!r}.items():
    user, _ = get_user_model().objects.get_or_create(username=name)
    user.set_password(password)
    user.save()
Membership.objects.get_or_create(project=project, user=get_user_model().objects.get(username="mgadmin"),
                                 defaults={{"role": Role.ADMIN}})
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("manage-ui"), "manage", "mgnav", "mgmt") as running:
        done = running.platform.manage("shell", "-c", ACCOUNTS.format(passwords=PASSWORDS))
        assert done.returncode == 0, done.stderr
        yield running


@pytest.fixture
def driver():
    started = make_driver(width=1300, height=900)
    started.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_CSP_VIOLATIONS})
    yield started
    started.quit()


def no_csp_violation(driver) -> None:
    assert driver.execute_script("return window.__cspViolations") == [], driver.current_url


def api_status(server, token: str) -> int:
    request = urllib.request.Request(server.url + "/api/projects/", headers={"Authorization": f"Token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def member_row(driver, username):
    rows = driver.find_elements(By.CSS_SELECTOR, f'#members tr[data-username="{username}"]')
    return rows[0] if rows else None


def test_an_admin_adds_a_member_and_changes_their_role(server, driver):
    sign_in_form(driver, server.url, "mgadmin", PASSWORDS["mgadmin"])
    driver.get(server.url + "/projects/")
    driver.find_element(By.CSS_SELECTOR, 'tr[data-project="mgmt"]').find_element(By.LINK_TEXT, "Members").click()
    wait_for(driver, lambda d: d.current_url.endswith("/projects/mgmt/members/"))
    driver.find_element(By.CSS_SELECTOR, "#member-add input[name=username]").send_keys("mgnew")
    Select(driver.find_element(By.CSS_SELECTOR, "#member-add select[name=role]")).select_by_value("reviewer")
    driver.find_element(By.CSS_SELECTOR, "#member-add button").click()
    row = wait_for(driver, lambda d: member_row(d, "mgnew"))
    assert Select(row.find_element(By.NAME, "role")).first_selected_option.text == "Reviewer"
    assert "mgnew is now Reviewer." in driver.find_element(By.ID, "messages").text

    Select(row.find_element(By.NAME, "role")).select_by_value("researcher")
    row.find_element(By.CSS_SELECTOR, ".role-form button").click()
    wait_for(driver, lambda d: "is now Researcher" in d.find_element(By.ID, "messages").text)
    row = member_row(driver, "mgnew")
    assert Select(row.find_element(By.NAME, "role")).first_selected_option.text == "Researcher"
    no_csp_violation(driver)


def test_a_token_is_created_copied_and_rotated(server, driver):
    sign_in_form(driver, server.url, "mgnew", PASSWORDS["mgnew"])
    driver.get(server.url + "/account/token/")
    driver.find_element(By.ID, "create-token").click()
    first = wait_for(driver, lambda d: d.find_element(By.ID, "token-key")).get_attribute("value")
    driver.find_element(By.ID, "copy-token").click()
    wait_for(driver, lambda d: d.find_element(By.ID, "copy-token").text == "Copied")
    assert api_status(server, first) == 200

    question = click_and_confirm(driver, driver.find_element(By.ID, "rotate-token"))
    assert "stops working" in question
    second = wait_for(
        driver,
        lambda d: d.find_elements(By.ID, "token-key") and d.find_element(By.ID, "token-key").get_attribute("value"),
    )
    assert second != first
    assert (api_status(server, first), api_status(server, second)) == (401, 200)
    driver.get(server.url + "/account/token/")  # shown once
    assert not driver.find_elements(By.ID, "token-key")
    assert second[-4:] in driver.find_element(By.ID, "token-state").text
    no_csp_violation(driver)


def recorded_demo(server, client_id="manage-e2e-1") -> str:
    body = {
        "client_id": client_id,
        "project": "mgmt",
        "mode": "chat",
        "task_description": "Find a train",
        "recording_start": dt.datetime.now(dt.UTC).isoformat(),
    }
    name = api(server.platform, "/api/recordings/", server.token, body)["name"]
    chat = {"client_id": "c-1", "type": "chat", "timestamp": 0.5, "speaker": "instructor", "utterance": "Hi"}
    api(server.platform, f"/api/recordings/{name}/turns/", server.token, {"turns": [chat]})
    api(server.platform, f"/api/recordings/{name}/finish/", server.token, {})
    return name


DOWNLOAD = """
const done = arguments[arguments.length - 1];
fetch(arguments[0], {credentials: "same-origin"})
  .then(async (r) => done([r.status, (await r.arrayBuffer()).byteLength, r.headers.get("Content-Disposition")]))
  .catch((e) => done([0, 0, String(e)]));
"""


FINISHED_PAGE = """
const link = document.getElementById("download"), bar = document.getElementById("job-progress");
const cancel = document.getElementById("cancel-job");
if (!link || !bar || !link.offsetParent) return null;
return {href: link.href, progress: bar.getAttribute("value"), cancelHidden: !cancel || !cancel.offsetParent};
"""


def test_an_export_started_from_the_page_shows_progress_to_done_and_downloads(server, driver):
    recorded_demo(server)
    sign_in_form(driver, server.url, "mgadmin", PASSWORDS["mgadmin"])
    driver.get(server.url + "/")
    driver.find_element(By.CSS_SELECTOR, '#splits a[href="/projects/mgmt/exports/"]').click()
    wait_for(driver, lambda d: d.current_url.endswith("/projects/mgmt/exports/"))
    Select(driver.find_element(By.NAME, "format")).select_by_value("weblinx")
    for box in driver.find_elements(By.CSS_SELECTOR, '#export-statuses input[name="statuses"]'):
        if (box.get_attribute("value") in ("recorded", "validated")) != box.is_selected():
            box.click()
    driver.find_element(By.ID, "start-export").click()
    wait_for(driver, lambda d: "/projects/mgmt/exports/" in d.current_url and d.find_elements(By.ID, "job"))

    # Read in one script: the page's poller replaces the job element, so a found element may be gone when read.
    status = "return (document.getElementById('job') || {dataset: {}}).dataset.status"
    wait_for(driver, lambda d: d.execute_script(status) == "done", timeout=120)
    # The page reloads itself once the job is done: read the finished page in one script, polled until it shows.
    finished = wait_for(driver, lambda d: d.execute_script(FINISHED_PAGE))
    assert float(finished["progress"]) == 1.0
    assert finished["cancelHidden"]
    job_id = int(driver.current_url.rstrip("/").rsplit("/", 1)[1])
    job = api(server.platform, f"/api/exports/{job_id}/", admin_token(server))
    assert job["counts"]["demos"] == 1
    status, size, disposition = driver.execute_async_script(DOWNLOAD, finished["href"])
    assert (status, size) == (200, job["size"])
    assert f"mgmt-weblinx-{job_id}.tar.gz" in disposition
    no_csp_violation(driver)


SHOWN = """
const shown = (id) => { const e = document.getElementById(id); return !!e && !!e.offsetParent; };
return {statuses: shown("export-statuses"), forms: shown("export-form-filters")};
"""


def test_the_export_form_shows_only_the_chosen_formats_filters(server, driver):
    sign_in_form(driver, server.url, "mgadmin", PASSWORDS["mgadmin"])
    driver.get(server.url + "/projects/mgmt/exports/")
    assert driver.execute_script(SHOWN) == {"statuses": True, "forms": False}  # WebLINX comes first
    Select(driver.find_element(By.NAME, "format")).select_by_value("turkingbench")
    assert driver.execute_script(SHOWN) == {"statuses": False, "forms": True}
    Select(driver.find_element(By.NAME, "format")).select_by_value("mind2web")
    assert driver.execute_script(SHOWN) == {"statuses": True, "forms": False}
    no_csp_violation(driver)


def test_a_selection_from_the_review_list_is_exported_alone(server, driver):
    chosen, left = recorded_demo(server, "manage-e2e-pick"), recorded_demo(server, "manage-e2e-leave")
    sign_in_form(driver, server.url, "mgadmin", PASSWORDS["mgadmin"])
    driver.get(server.url + "/review/?project=mgmt")
    wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, f'tr[data-name="{left}"]'))
    driver.find_element(By.CSS_SELECTOR, f'tr[data-name="{chosen}"] input.pick').click()
    wait_for(driver, lambda d: d.find_element(By.ID, "selected-count").text == "1 selected")
    Select(driver.find_element(By.ID, "bulk-format")).select_by_value("weblinx")
    driver.find_element(By.ID, "btn-bulk-export").click()
    wait_for(driver, lambda d: "/projects/mgmt/exports/" in d.current_url and d.find_elements(By.ID, "job"))
    # Read through scripts only: the page reloads itself once the job is done, so a found element may go stale.
    status = "return (document.getElementById('job') || {dataset: {}}).dataset.status"
    wait_for(driver, lambda d: d.execute_script(status) == "done", timeout=120)
    demos = "return (document.getElementById('export-demos') || {}).textContent || ''"
    wait_for(driver, lambda d: "1 selected" in d.execute_script(demos))
    job_id = int(driver.current_url.rstrip("/").rsplit("/", 1)[1])
    job = api(server.platform, f"/api/exports/{job_id}/", admin_token(server))
    assert (job["demos"], job["counts"]["demos"]) == ([chosen], 1)
    no_csp_violation(driver)


def admin_token(server) -> str:
    code = (
        "from django.contrib.auth import get_user_model\n"
        "from rest_framework.authtoken.models import Token\n"
        "print(Token.objects.get_or_create(user=get_user_model().objects.get(username='mgadmin'))[0].key)\n"
    )
    result = server.platform.manage("shell", "-c", code)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]
