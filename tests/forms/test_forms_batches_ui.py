"""Batch management and working comfort in a real headless Chromium against a live server, with three workers and a
researcher: the batch page's task table shows every worker's assignment; pausing keeps a third worker from getting
a task and resuming gives it; adding assignments per task and extending the time let more workers in; the task
frame is as tall as its content (one scrollbar); submitting is confirmed on the next page; ``?`` opens the list of
keys; a failed upload keeps what was typed and chosen."""

import re

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from annotation.models import Membership, Project, Role
from tests.support.actors import make_user
from tests.support.browser import text_of, use_session, wait_for
from tests.support.forms_data import TEMPLATE, make_batch
from tests.support.forms_ui import READY, in_frame

pytestmark = pytest.mark.browser

# A task taller than the window: the frame must grow to it, the page scrolls once.
TALL = TEMPLATE + "".join(f"<p class='filler'>Paragraph {i} of the long instructions.</p>" for i in range(80))
ONE_TASK = "topic,sentence\nweather,It rains.\n"


@pytest.fixture
def team(transactional_db, settings):
    assert settings.FORM_TASK_ASSET_SOURCES == ""  # the default: the frames load nothing from elsewhere
    project = Project.objects.create(name="team")
    people = {name: make_user(name, project, Role.ANNOTATOR) for name in ("ann", "abe", "amy")}
    people["rex"] = make_user("rex", project, Role.RESEARCHER)
    return project, people


def as_user(browser, live_server, user, path):
    use_session(browser, live_server.url, user)
    browser.get(live_server.url + path)


def available(browser, batch) -> bool:
    wait_for(browser, lambda d: d.find_elements(By.ID, "work-available"))
    return bool(browser.find_elements(By.CSS_SELECTOR, f'#available-batches tr[data-batch="{batch.pk}"]'))


def accept(browser, live_server, user, batch) -> int:
    as_user(browser, live_server, user, "/work/")
    assert available(browser, batch), f"{user.username} sees no work in {batch.name}"
    browser.find_element(By.CSS_SELECTOR, f'#available-batches tr[data-batch="{batch.pk}"] button.accept').click()
    return int(wait_for(browser, lambda d: d.execute_script(READY), timeout=30))


def fill_and_submit(browser, short: str):
    in_frame(browser)
    field = browser.find_element(By.NAME, "short")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", field)
    field.send_keys(short)
    button = browser.find_element(By.CSS_SELECTOR, "#mturk_form input[type=submit]")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
    button.click()
    browser.switch_to.default_content()


def manage(browser, live_server, rex, batch, form_id, **fields):
    """The researcher fills one of the batch page's forms and sends it; back on the batch page."""
    as_user(browser, live_server, rex, f"/work/batches/{batch.pk}/")
    form = browser.find_element(By.ID, form_id)
    for name, value in fields.items():
        box = form.find_element(By.NAME, name)
        box.clear()
        box.send_keys(value)
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_for(browser, lambda d: d.find_elements(By.ID, "messages"))
    return browser.find_element(By.ID, "messages").text


def table_rows(browser) -> list[tuple[str, str, str]]:
    rows = browser.find_elements(By.CSS_SELECTOR, "#task-table tr[data-assignment]")
    return [
        (r.get_attribute("data-task"), r.get_attribute("data-worker"), r.get_attribute("data-status")) for r in rows
    ]


def test_three_workers_pause_resume_add_and_extend(team, browser, live_server):
    project, people = team
    batch = make_batch(project, people["rex"], csv_text=ONE_TASK, assignments_per_task=2, allotted_seconds=600)

    # two workers do the one task; the confirmation is on the page after the submission
    for name in ("ann", "abe"):
        accept(browser, live_server, people[name], batch)
        fill_and_submit(browser, f"answer of {name}")
        wait_for(browser, lambda d: "Submitted task 0 " in (text_of(d, "messages") or ""))
    # the batch is complete: the third worker has nothing
    as_user(browser, live_server, people["amy"], "/work/")
    assert not available(browser, batch)

    # one more assignment per task lets her in, but first the researcher pauses the batch
    assert "now has 3 assignments per task" in manage(browser, live_server, people["rex"], batch, "add-form", count="1")
    browser.find_element(By.ID, "batch-pause").click()
    wait_for(browser, lambda d: (text_of(d, "batch-state") or "") == "paused")
    as_user(browser, live_server, people["amy"], "/work/")
    assert not available(browser, batch)  # paused: no new assignment for the third worker
    as_user(browser, live_server, people["rex"], f"/work/batches/{batch.pk}/")
    browser.find_element(By.ID, "batch-resume").click()
    wait_for(browser, lambda d: (text_of(d, "batch-state") or "") == "open")

    third = accept(browser, live_server, people["amy"], batch)
    countdown = wait_for(browser, lambda d: re.fullmatch(r"\d\d:\d\d", text_of(d, "countdown") or "") and d)
    assert int(countdown.find_element(By.ID, "countdown").text.split(":")[0]) < 11  # ten minutes per assignment

    # her time runs: the researcher gives the active assignments an hour more
    message = manage(browser, live_server, people["rex"], batch, "extend-form", active_extra_minutes="60")
    assert "60 more min for 1 active assignment" in message
    as_user(browser, live_server, people["amy"], f"/work/assignments/{third}/")
    wait_for(browser, lambda d: re.fullmatch(r"1:\d\d:\d\d", text_of(d, "countdown") or ""))
    fill_and_submit(browser, "answer of amy")
    wait_for(browser, lambda d: "Submitted task 0 " in (text_of(d, "messages") or ""), timeout=30)

    # the per-task table shows the three workers' assignments, each opening its own page
    as_user(browser, live_server, people["rex"], f"/work/batches/{batch.pk}/")
    rows = table_rows(browser)
    assert sorted(rows) == [("0", "abe", "submitted"), ("0", "amy", "submitted"), ("0", "ann", "submitted")]
    browser.find_element(By.CSS_SELECTOR, '#task-table tr[data-worker="amy"] a').click()
    wait_for(browser, lambda d: (text_of(d, "assignment-worker") or "") == "amy")
    assert "answer of amy" in browser.find_element(By.ID, "assignment-answers").text
    assert "It rains." in browser.find_element(By.ID, "assignment-inputs").text


def frame_fits(browser) -> dict | None:
    """Once the frame says it was sized: its height, and its document's scroll and client heights."""
    browser.switch_to.default_content()
    frame = browser.find_element(By.ID, "task-frame")
    if frame.get_attribute("data-sized") != "true":
        return None
    outer = browser.execute_script("return arguments[0].getBoundingClientRect().height", frame)
    browser.switch_to.frame(frame)
    inner = browser.execute_script(
        "const r = document.documentElement; return {scroll: r.scrollHeight, client: r.clientHeight};"
    )
    browser.switch_to.default_content()
    return {"outer": outer, **inner}


def test_the_task_frame_is_as_tall_as_its_task_and_the_page_has_one_scrollbar(team, browser, live_server):
    project, people = team
    batch = make_batch(project, people["rex"], template=TALL, csv_text=ONE_TASK, name="tall")
    accept(browser, live_server, people["ann"], batch)

    def fitted(d):
        """The frame's document does not scroll (its whole content is shown) and the frame is the content's height
        (+ border). Waited for as a whole: the frame reports its height again whenever its content changes (a
        font or image arriving late on a loaded machine), and the parent follows a moment later."""
        sizes = frame_fits(d)
        if not sizes or sizes["client"] <= 1000:
            return None
        return sizes if sizes["scroll"] == sizes["client"] and abs(sizes["outer"] - sizes["client"]) <= 2 else None

    sizes = wait_for(browser, fitted)
    viewport = browser.execute_script("return window.innerHeight")
    assert sizes["client"] > viewport  # taller than the window ...
    page = browser.execute_script("return document.scrollingElement.scrollHeight")
    assert page > sizes["client"]  # ... so the page scrolls, once, around it
    # the submit button at the bottom is reached by scrolling the page, not the frame
    in_frame(browser)
    assert browser.execute_script("return window.scrollY") == 0
    browser.switch_to.default_content()


def test_question_mark_lists_the_keys_on_the_assignment_page_and_esc_closes(team, browser, live_server):
    project, people = team
    batch = make_batch(project, people["rex"], csv_text=ONE_TASK)
    accept(browser, live_server, people["abe"], batch)
    dialog = browser.find_element(By.ID, "shortcuts-dialog")
    wait_for(browser, lambda d: dialog.get_attribute("data-ready") == "true")
    assert not dialog.is_displayed()
    browser.find_element(By.TAG_NAME, "body").send_keys("?")
    wait_for(browser, lambda d: dialog.is_displayed())
    assert "Tab" in dialog.text
    assert "close this list" in dialog.text
    dialog.send_keys(Keys.ESCAPE)
    wait_for(browser, lambda d: not dialog.is_displayed())
    # typing "?" in a field of the page is text, not the shortcut
    in_frame(browser)
    browser.find_element(By.NAME, "short").send_keys("why?")
    browser.switch_to.default_content()
    assert not dialog.is_displayed()


def test_a_failed_upload_keeps_what_was_typed_and_chosen(team, browser, live_server, tmp_path):
    project, people = team
    other = Project.objects.create(name="second")
    Membership.objects.create(project=other, user=people["rex"], role=Role.ADMIN)
    template = tmp_path / "task.html"
    template.write_text("<p>${missing_column}</p>")
    csv = tmp_path / "inputs.csv"
    csv.write_text("topic\n")  # a header and no task: refused
    as_user(browser, live_server, people["rex"], "/work/")
    browser.find_element(By.ID, "upload-batch").click()
    form = wait_for(browser, lambda d: d.find_element(By.ID, "batch-upload"))
    Select(form.find_element(By.NAME, "project")).select_by_value("second")
    form.find_element(By.NAME, "name").send_keys("my batch")
    form.find_element(By.NAME, "template").send_keys(str(template))
    form.find_element(By.NAME, "csv").send_keys(str(csv))
    for name, value in (("assignments_per_task", "3"), ("allotted_minutes", "45")):
        form.find_element(By.NAME, name).clear()
        form.find_element(By.NAME, name).send_keys(value)
    form.find_element(By.NAME, "description").send_keys("Read the sentence twice.")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()

    wait_for(browser, lambda d: d.find_elements(By.ID, "upload-not-stored"))
    form = browser.find_element(By.ID, "batch-upload")
    assert Select(form.find_element(By.NAME, "project")).first_selected_option.get_attribute("value") == "second"
    assert form.find_element(By.NAME, "name").get_attribute("value") == "my batch"
    assert form.find_element(By.NAME, "assignments_per_task").get_attribute("value") == "3"
    assert form.find_element(By.NAME, "allotted_minutes").get_attribute("value") == "45"
    assert form.find_element(By.NAME, "description").get_attribute("value") == "Read the sentence twice."
    notes = [n.get_attribute("data-field") for n in form.find_elements(By.CSS_SELECTOR, ".file-again")]
    assert notes == ["template", "csv"]
    assert form.find_elements(By.CSS_SELECTOR, ".field-error, #upload-errors")
