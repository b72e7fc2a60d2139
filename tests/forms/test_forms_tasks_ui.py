"""Form tasks in a real headless Chromium against a live server, on real TurkingBench tasks: a person accepts,
fills text, textarea, radio, a checkbox group with two values, select and range, submits (Submit & next brings the
next task), skips and returns; a second worker never gets the first one's task; submitted work opens read-only;
every Answer field of the 28 tasks is a named control of the served page (or listed as created otherwise); and a
hostile template can neither read the app's cookies nor call the API as the worker.

Templates load scripts and styles from CDNs; the mapped ones are served from the vendored copies (``agents/vendor.py``),
so a template's jQuery runs here as on MTurk (Text Game Eval shows and requires a rating per category chosen). These
tests run with ``FORM_TASK_ASSET_SOURCES`` empty, its default, so the frames' CSP blocks every other outside request
(the tests never touch the network).
"""

import io
import json
import re

import pytest
from django.core.management import call_command
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from annotation.actions import forms
from annotation.models import Assignment, AssignmentStatus, Batch, Project, Role
from tests.support.actors import make_user
from tests.support.browser import text_of, use_session, wait_for
from tests.support.forms_data import make_batch, task_dir, task_dirs
from tests.support.forms_ui import READY, in_frame

pytestmark = pytest.mark.browser

GAME = "Text Game Eval"  # text, textarea, radio, a checkbox group, select; its own submit button
STYLE = "Full sentence style annotations"  # twenty ranges; no submit button (ours is added)

# Answer fields of the real tasks that are not named controls of the served page, and why.
NOT_CONTROLS = {
    # <crowd-form answer-format="flatten-objects"> reports a radio group as name.value booleans; crowd elements are
    # not rendered (nor in Turkle).
    "Reddit In-group Analysis": re.compile(r"option\d+\..+"),
    "Story Relations": re.compile(r"[a-z]+-\d\.\d"),
    "WikiHow goal linking": re.compile(r"candidate_\d+\.\d"),
    # Created by the template's script, one pair per question of the instance (the first has fewer than 23).
    "Creating Answers to Questions": re.compile(r"(in)?correctoptions-\d+"),
    # The gold was collected with an earlier template: it names the three hidden inputs Step1..Step3 now.
    "ATOMIC - Object Rationale": re.compile(r"Step"),
}


@pytest.fixture
def no_outside_assets(settings):
    assert settings.FORM_TASK_ASSET_SOURCES == ""  # the default


@pytest.fixture
def real_batches(transactional_db, no_outside_assets):
    project = Project.objects.create(name="tb")
    call_command("import_turkingbench", str(task_dir(GAME)), str(task_dir(STYLE)), project="tb", stdout=io.StringIO())
    return project, Batch.objects.get(name=GAME), Batch.objects.get(name=STYLE)


def worker(name, project):
    return make_user(name, project, Role.ANNOTATOR)


# --- Browser helpers -------------------------------------------------------------------------------------------


def open_work(browser, live_server):
    browser.get(live_server.url + "/work/")
    wait_for(browser, lambda d: d.find_elements(By.ID, "work-available"))


def accept(browser, batch):
    browser.find_element(By.CSS_SELECTOR, f'#available-batches tr[data-batch="{batch.pk}"] button.accept').click()
    return wait_assignment_page(browser)


def wait_assignment_page(browser, other_than=None) -> int:
    """Wait for an assignment page (a different one than ``other_than``) whose script is ready; its id."""

    def ready(d):
        try:  # one script call: the page may be replaced (Submit & next) between two element reads
            found = d.execute_script(READY)
        except WebDriverException:
            return None
        return found if found and found != str(other_than) else None

    return int(wait_for(browser, ready, timeout=30))


def by_name(browser, name, value=None):
    selector = f'[name="{name}"]' + (f'[value="{value}"]' if value is not None else "")
    return browser.find_element(By.CSS_SELECTOR, selector)


def click(browser, element):
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def fill_game(browser):
    """Fill the Text Game Eval form as a person does: every required field, two boxes of the checkbox group."""
    in_frame(browser)
    click(browser, by_name(browser, "tutorialA", "tutorialA-livingRoom"))
    summary = by_name(browser, "summary")
    click(browser, summary)
    summary.send_keys("The player opens the door.", Keys.ENTER, "Then leaves.")
    click(browser, by_name(browser, "moralSaliency", "salient"))
    click(browser, by_name(browser, "judgment", "goodOthers"))
    click(browser, by_name(browser, "judgment", "badSelf"))
    # The template's jQuery (vendored) shows and requires a rating and a rationale per category chosen.
    click(browser, by_name(browser, "goodOthersScore", "2"))
    click(browser, by_name(browser, "badSelfScore", "3"))
    rationale = by_name(browser, "goodOthersRationale")
    click(browser, rationale)
    rationale.send_keys("helps a friend")
    rationale = by_name(browser, "badSelfRationale")
    click(browser, rationale)
    rationale.send_keys("risks a fall")
    for name in ("annotatorGender", "annotatorAge", "annotatorRace", "annotatorPolitics"):
        Select(by_name(browser, name)).select_by_index(1)
    return {name: Select(by_name(browser, name)).first_selected_option.get_attribute("value") for name in
            ("annotatorGender", "annotatorAge", "annotatorRace", "annotatorPolitics")}  # fmt: skip


def submit_in_frame(browser):
    click(browser, browser.find_element(By.CSS_SELECTOR, "#mturk_form input[type=submit]"))
    browser.switch_to.default_content()


def stored(assignment_id) -> Assignment:
    return Assignment.objects.select_related("task").get(pk=assignment_id)


# --- A person at work ------------------------------------------------------------------------------------------


def test_a_worker_fills_every_kind_of_field_submits_and_next_skips_and_returns(real_batches, browser, live_server):
    project, game, style = real_batches
    person = worker("alice", project)
    use_session(browser, live_server.url, person)
    open_work(browser, live_server)

    first = accept(browser, game)
    assert re.fullmatch(r"\d+:\d\d:\d\d|\d\d:\d\d", browser.find_element(By.ID, "countdown").text)
    selects = fill_game(browser)
    submit_in_frame(browser)
    second = wait_assignment_page(browser, other_than=first)  # Submit & next (on by default)
    done = stored(first)
    assert done.status == AssignmentStatus.SUBMITTED
    assert done.task.index == 0
    assert done.answers["judgment"] == ["goodOthers", "badSelf"]  # both values, in form order
    assert done.answers["summary"] == "The player opens the door.\r\nThen leaves."
    assert done.answers["tutorialA"] == "tutorialA-livingRoom"
    assert done.answers["moralSaliency"] == "salient"
    assert done.answers["goodOthersRationale"] == "helps a friend"
    assert (done.answers["goodOthersScore"], done.answers["badSelfScore"]) == ("2", "3")
    assert {name: done.answers[name] for name in selects} == selects
    assert stored(second).task.index == 1

    browser.find_element(By.ID, "skip").click()
    third = wait_assignment_page(browser, other_than=second)
    assert stored(second).status == AssignmentStatus.SKIPPED
    assert stored(third).task.index == 2

    browser.find_element(By.ID, "return").click()
    wait_for(browser, lambda d: d.current_url.endswith("/work/"))
    assert stored(third).status == AssignmentStatus.RETURNED
    assert "Returned task 2 " in browser.find_element(By.ID, "messages").text

    range_first = accept(browser, style)
    in_frame(browser)
    slider = by_name(browser, "formality0")
    click(browser, slider)
    before = int(slider.get_attribute("value") or 0)
    slider.send_keys(Keys.ARROW_RIGHT, Keys.ARROW_RIGHT)
    moved = int(browser.execute_script("return arguments[0].value", slider))
    assert moved != before
    submit_in_frame(browser)  # the template has no submit button: the platform's #submitButton
    wait_assignment_page(browser, other_than=range_first)
    assert stored(range_first).answers["formality0"] == str(moved)
    assert stored(range_first).status == AssignmentStatus.SUBMITTED


def test_a_second_worker_never_gets_a_task_the_first_holds_or_did(real_batches, browser, live_server):
    project, game, _ = real_batches
    first, second = worker("alice", project), worker("bob", project)
    use_session(browser, live_server.url, first)
    open_work(browser, live_server)
    held = accept(browser, game)

    use_session(browser, live_server.url, second)
    open_work(browser, live_server)
    assert browser.find_element(By.CSS_SELECTOR, f'tr[data-batch="{game.pk}"] .available').text == str(
        game.tasks.count() - 1
    )
    theirs = accept(browser, game)
    assert stored(theirs).task_id != stored(held).task_id
    assert stored(held).status == AssignmentStatus.ACTIVE


def test_submitting_with_submit_and_next_off_shows_the_work_read_only(real_batches, browser, live_server):
    project, game, _ = real_batches
    use_session(browser, live_server.url, worker("alice", project))
    open_work(browser, live_server)
    first = accept(browser, game)
    browser.find_element(By.ID, "auto-accept").click()  # Submit & next off
    wait_for(browser, lambda d: not d.find_element(By.ID, "auto-accept").is_selected())
    fill_game(browser)
    submit_in_frame(browser)
    wait_for(browser, lambda d: "read-only" in (text_of(d, "assignment-state") or ""), timeout=30)
    assert browser.find_element(By.ID, "assignment").get_attribute("data-id") == str(first)
    in_frame(browser)
    wait_for(browser, lambda d: by_name(d, "judgment", "badSelf").is_selected())
    assert by_name(browser, "judgment", "goodOthers").is_selected()
    assert not by_name(browser, "judgment", "goodSelf").is_selected()
    assert by_name(browser, "summary").get_attribute("value").startswith("The player opens the door.")
    assert not by_name(browser, "summary").is_enabled()
    browser.switch_to.default_content()
    assert Assignment.objects.filter(worker__username="alice", status=AssignmentStatus.ACTIVE).count() == 0


def test_an_assignment_expiring_on_its_page_says_so(transactional_db, no_outside_assets, browser, live_server):
    project = Project.objects.create(name="tb")
    batch = make_batch(project, allotted_seconds=3)
    use_session(browser, live_server.url, worker("alice", project))
    open_work(browser, live_server)
    assignment = accept(browser, batch)
    wait_for(browser, lambda d: "expired" in (text_of(d, "assignment-state") or ""), timeout=30)
    assert stored(assignment).status == AssignmentStatus.EXPIRED


# --- The 28 real tasks as agents see them ---------------------------------------------------------------------------


def test_every_answer_field_of_the_28_tasks_is_a_named_control_of_the_preview(
    transactional_db, no_outside_assets, browser, live_server
):
    call_command("import_turkingbench", *[str(d) for d in task_dirs()], project="tb", stdout=io.StringIO())
    named = "return Array.from(document.querySelectorAll('input[name], select[name], textarea[name]')).map(e => e.name)"
    for batch in Batch.objects.filter(project__name="tb").order_by("name"):
        browser.get(live_server.url + forms.preview_url(batch.tasks.get(index=0)))
        wait_for(browser, lambda d: d.execute_script("return document.readyState") == "complete")
        assert browser.find_element(By.ID, "mturk_form").get_attribute("name") == "mturk_form"
        controls = set(browser.execute_script(named))
        allowed = NOT_CONTROLS.get(batch.name)
        for column in batch.answer_columns:
            field = column.removeprefix("Answer.")
            assert field in controls or (allowed and allowed.fullmatch(field)), f"{batch.name}: {field}"


# --- A hostile template -------------------------------------------------------------------------------------------

HOSTILE = """<input name="answer" value="x">
<pre id="probe"></pre>
<script>
(async function () {
  var out = {};
  function record(key, fn) { try { out[key] = String(fn()); } catch (e) { out[key] = "blocked: " + e.name; } }
  record("cookie", function () { return document.cookie; });
  record("storage", function () { return window.localStorage.length; });
  record("parent", function () { return window.parent.document.cookie; });
  record("top", function () { return window.top.location.href; });
  try {
    var response = await fetch("/api/assignments/", {credentials: "include"});
    out.api = "status " + response.status + " " + (await response.text()).slice(0, 200);
  } catch (e) { out.api = "blocked: " + e.name; }
  try {
    var accept = await fetch("/work/auto-accept", {method: "POST", credentials: "include", body: "on=0"});
    out.post = "status " + accept.status;
  } catch (e) { out.post = "blocked: " + e.name; }
  document.getElementById("probe").textContent = JSON.stringify(out);
})();
</script>
"""


def probe(browser) -> dict:
    text = wait_for(browser, lambda d: d.find_element(By.ID, "probe").text)
    return json.loads(text)


def test_a_hostile_template_cannot_read_the_apps_cookies_or_call_the_api_as_the_worker(
    transactional_db, no_outside_assets, browser, live_server
):
    project = Project.objects.create(name="tb")
    batch = make_batch(project, template=HOSTILE, csv_text="x\n1\n", name="hostile")
    person = worker("alice", project)
    use_session(browser, live_server.url, person)
    open_work(browser, live_server)
    assert browser.get_cookie("csrftoken")  # the app's own pages do have cookies
    assignment = accept(browser, batch)
    in_frame(browser)
    seen = probe(browser)
    assert seen["cookie"].startswith("blocked: SecurityError")
    assert seen["storage"].startswith("blocked: SecurityError")
    assert seen["parent"].startswith("blocked: SecurityError")
    assert seen["top"].startswith("blocked: SecurityError")
    assert seen["api"].startswith("blocked")
    assert seen["post"].startswith("blocked")
    browser.switch_to.default_content()
    assert browser.find_element(By.ID, "auto-accept").is_selected()  # the POST never reached the app
    assert stored(assignment).status == AssignmentStatus.ACTIVE

    browser.get(live_server.url + forms.preview_url(batch.tasks.get()))  # opened top-level, as agents do
    seen = probe(browser)
    assert seen["cookie"].startswith("blocked: SecurityError")
    assert seen["api"].startswith("blocked")
