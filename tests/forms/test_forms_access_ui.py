"""Access that ends when the grant ends, in a real headless Chromium against a live server: a worker opens a task
on their assignment page and another task's frame on its own (as in a second tab, or an agent's browser), fills
both in; meanwhile they are removed from the project, their account is deactivated, a qualification the batch
requires is revoked, or they are blocked from the batch; then they press the tasks' Submit buttons. Each frame
shows why nothing was stored, the assignment page around the first one reloads to say it too (a deactivated
account's page can no longer ask the server: its frame says why), nothing is stored and both slots go to the next
worker."""

import pytest
from django.test import Client
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By

from annotation.actions import forms, manage, quality
from annotation.actions.forms import gold
from annotation.models import Assignment, AssignmentStatus, Membership, Project, Role, Task
from tests.support.actors import make_user
from tests.support.browser import use_session, wait_for
from tests.support.forms_data import make_batch
from tests.support.forms_ui import READY

pytestmark = pytest.mark.browser

CSV = "topic,sentence\nweather,It rains.\nsport,They won.\n"


@pytest.fixture
def world(transactional_db, settings):
    settings.FORM_TASK_ASSET_SOURCES = ""
    project = Project.objects.create(name="team")
    people = {name: make_user(name, project, Role.ANNOTATOR) for name in ("ann", "abe")}
    people["ada"] = make_user("ada", project, Role.ADMIN)
    root = make_user("root")
    root.is_superuser = True
    root.save()
    people["root"] = root
    english = quality.do_create_qualification(project, "english")
    for name in ("ann", "abe"):
        quality.do_grant(english, people[name], 1.0, people["ada"])
    batch = make_batch(project, csv_text=CSV, assignments_per_task=1)
    quality.do_update_quality_settings(batch, {"requirements": [(english, 0.5)]})
    return project, people, english, batch


def removed(project, people, english, batch):
    manage.do_remove_member(project, Membership.objects.get(project=project, user=people["ann"]).pk)
    return "you are not a member of project 'team'"


def deactivated(project, people, english, batch):
    manage.do_set_active(people["root"], people["ann"].pk, False)
    return "your account is deactivated"


def revoked(project, people, english, batch):
    quality.do_revoke(english, people["ann"])
    return "requires qualifications you do not hold: english ≥ 0.5"


def blocked(project, people, english, batch):
    batch.gold_threshold = 0.5
    gold.block(batch, people["ann"], 0.2, 5)
    return "gold accuracy"


def fill_frame(browser, text: str) -> None:
    """Inside the current task frame: type into the short answer."""
    wait_for(browser, lambda d: d.find_elements(By.ID, "mturk_form"), timeout=30)
    field = browser.find_element(By.NAME, "short")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", field)
    field.send_keys(text)


def press_submit(browser) -> None:
    button = browser.find_element(By.CSS_SELECTOR, "#mturk_form input[type=submit]")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
    button.click()


def result_text(browser):
    """The frame's answer to the submission (in the current browsing context), or None while it is not there."""
    found = browser.find_elements(By.ID, "submit-result")
    return found[0].text if found else None


def page_or_frame_reason(browser):
    """The reason on the assignment page (reloaded) or, while it has not reloaded, in its frame's answer."""
    try:
        browser.switch_to.default_content()
        ended = browser.find_elements(By.ID, "ended-reason")
        if ended:
            return ("page", ended[0].text)
        frames = browser.find_elements(By.ID, "task-frame")
        if not frames:
            return None
        browser.switch_to.frame(frames[0])
        text = result_text(browser) or ""
        return ("frame", text) if "Nothing was stored" in text or "taken back" in text else None
    except WebDriverException:  # the page was replaced between two reads: ask again
        return None


@pytest.mark.parametrize("change", [removed, deactivated, revoked, blocked], ids=lambda change: change.__name__)
def test_a_task_open_in_the_browser_is_refused_once_the_grant_ends(change, world, browser, live_server):
    project, people, english, batch = world
    ann = people["ann"]
    use_session(browser, live_server.url, ann)
    browser.get(live_server.url + "/work/")
    browser.find_element(By.CSS_SELECTOR, f'#available-batches tr[data-batch="{batch.pk}"] button.accept').click()
    on_page = int(wait_for(browser, lambda d: d.execute_script(READY), timeout=30))
    other = forms.do_accept_task(ann, batch.tasks.exclude(assignments__pk=on_page).get())
    page_tab = browser.current_window_handle

    # the second task's frame on its own, in another tab, filled in
    browser.switch_to.new_window("tab")
    frame_tab = browser.current_window_handle
    browser.get(live_server.url + forms.work_frame_url(other))
    fill_frame(browser, "from the second tab")
    # the first, in its assignment page's sandboxed frame
    browser.switch_to.window(page_tab)
    browser.switch_to.frame(browser.find_element(By.ID, "task-frame"))
    fill_frame(browser, "from the page")

    reason = change(project, people, english, batch)

    press_submit(browser)  # in the assignment page's frame
    if change is deactivated:  # the page cannot ask the server any more (signed out): the frame says why
        source, text = wait_for(browser, page_or_frame_reason, timeout=60)
    else:
        source, text = wait_for(browser, lambda d: (r := page_or_frame_reason(d)) and r[0] == "page" and r, 60)
        assert "Nothing was stored" in text
    assert reason in text, (source, text)

    browser.switch_to.default_content()
    browser.switch_to.window(frame_tab)
    press_submit(browser)
    said = wait_for(browser, result_text, timeout=60)
    assert reason in said
    assert "stored" in said or "taken back" in said
    browser.close()
    browser.switch_to.window(page_tab)

    for assignment_id in (on_page, other.pk):
        assignment = Assignment.objects.get(pk=assignment_id)
        assert assignment.status == AssignmentStatus.RETURNED
        assert assignment.answers == {}
        assert reason in assignment.ended_reason
    assert list(Task.objects.filter(batch=batch).values_list("taken", flat=True)) == [0, 0]
    # both slots go to the next worker, who submits through the frame
    abe = people["abe"]
    for _ in range(2):
        theirs = forms.do_accept_next(abe, batch)
        assert Client().post(forms.work_url(theirs), {"short": "abe's"}).status_code == 200
    assert forms.do_accept_next(abe, batch) is None


GOLD_CSV = "topic,sentence,Answer.short\n" + "".join(f"t{i},s{i},right\n" for i in range(4))


def test_the_submission_that_blocks_lands_on_the_confirmed_work_saying_why(world, browser, live_server):
    project, people, english, _ = world
    batch = make_batch(project, csv_text=GOLD_CSV, name="graded", assignments_per_task=2)
    quality.do_mark_gold(batch, quality.check_gold_request(batch, {"tasks": [0, 1, 2, 3]}))
    quality.do_update_quality_settings(batch, {"gold_rate": 1.0, "gold_threshold": 0.5, "gold_min_answers": 1})
    use_session(browser, live_server.url, people["abe"])
    browser.get(live_server.url + "/work/")
    browser.find_element(By.CSS_SELECTOR, f'#available-batches tr[data-batch="{batch.pk}"] button.accept').click()
    first = int(wait_for(browser, lambda d: d.execute_script(READY), timeout=30))
    assert browser.find_element(By.ID, "auto-accept").is_selected()  # Submit & next is on
    browser.switch_to.frame(browser.find_element(By.ID, "task-frame"))
    fill_frame(browser, "wrong")
    press_submit(browser)
    browser.switch_to.default_content()

    def confirmed(d):
        try:
            stop = d.find_elements(By.ID, "stop-reason")
            return stop[0].text if stop and d.execute_script(READY) == str(first) else None
        except WebDriverException:
            return None

    said = wait_for(browser, confirmed, timeout=60)
    assert "You can take no more tasks of this batch" in said
    assert "gold accuracy" in said
    assert "Submitted task" in browser.find_element(By.ID, "messages").text
    assert not browser.find_elements(By.ID, "next-task")
    assert "?submitted=1" in browser.current_url
    done = Assignment.objects.get(pk=first)
    assert done.status == AssignmentStatus.SUBMITTED
    assert done.answers["short"] == "wrong"
    assert gold.block_reason(people["abe"], batch) is not None
