"""Quality control in a real headless Chromium against a live server, three workers each time: a researcher rejects
work on the review page and the worker reads the reason in their history; a worker who fails the gold tasks is
blocked (told why) and gets no more tasks of that batch while the others go on; a batch that needs a qualification
is invisible to a worker without it and appears once an admin grants it on the qualifications page."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from annotation.actions import quality
from annotation.models import Assignment, Project, Role
from tests.support.actors import make_user
from tests.support.browser import use_session, wait_for
from tests.support.forms_data import make_batch

pytestmark = pytest.mark.browser

# Six tasks whose CSV carries known answers (Answer.polarity, Answer.level) for every one.
GOLD_CSV = "topic,sentence,Answer.polarity,Answer.level\n" + "".join(
    f"t{i},s{i},{'pos' if i % 2 else 'neg'},{'high' if i % 3 else 'low'}\n" for i in range(6)
)
READY = "const e = document.querySelector(\"#assignment[data-ready='true']\"); return e ? e.dataset.id : null;"


@pytest.fixture
def team(transactional_db, settings):
    assert settings.FORM_TASK_ASSET_SOURCES == ""  # the default: the frames load nothing from elsewhere
    project = Project.objects.create(name="qa")
    people = {name: make_user(name, project, Role.ANNOTATOR) for name in ("alice", "bob", "carol")}
    people["rhea"] = make_user("rhea", project, Role.RESEARCHER)
    people["adam"] = make_user("adam", project, Role.ADMIN)
    return project, people


def as_user(browser, live_server, user, path):
    use_session(browser, live_server.url, user)
    browser.get(live_server.url + path)


def open_work(browser, live_server) -> None:
    browser.get(live_server.url + "/work/")
    wait_for(browser, lambda d: d.find_elements(By.ID, "work-available"))


def accept(browser, batch) -> int:
    browser.find_element(By.CSS_SELECTOR, f'#available-batches tr[data-batch="{batch.pk}"] button.accept').click()
    return int(wait_for(browser, lambda d: d.execute_script(READY), timeout=30))


def answer(browser, polarity: str, level: str) -> None:
    """Fill the task frame's radio and select as a person does, and submit."""
    frame = wait_for(browser, lambda d: d.find_element(By.ID, "task-frame"))
    browser.switch_to.frame(frame)
    wait_for(browser, lambda d: d.find_elements(By.ID, "mturk_form"))
    browser.find_element(By.CSS_SELECTOR, f'[name="polarity"][value="{polarity}"]').click()
    Select(browser.find_element(By.NAME, "level")).select_by_value(level)
    browser.find_element(By.CSS_SELECTOR, "#submitButton, #mturk_form input[type=submit]").click()
    browser.switch_to.default_content()


def right(index: int) -> tuple[str, str]:
    return ("pos" if index % 2 else "neg"), ("high" if index % 3 else "low")


def wrong(index: int) -> tuple[str, str]:
    polarity, level = right(index)
    return ("neg" if polarity == "pos" else "pos"), ("low" if level == "high" else "high")


def submit_one(browser, live_server, worker, batch, choose) -> int:
    """``worker`` accepts the batch's next task on the work page and submits ``choose(task index)``."""
    use_session(browser, live_server.url, worker)
    open_work(browser, live_server)
    assignment = accept(browser, batch)
    answer(browser, *choose(Assignment.objects.get(pk=assignment).task.index))
    return assignment


def test_a_rejected_worker_reads_the_reason_in_their_history(team, browser, live_server):
    project, people = team
    batch = make_batch(project, name="sentiment", csv_text=GOLD_CSV, assignments_per_task=3)
    done = {}
    for name in ("alice", "bob", "carol"):
        done[name] = submit_one(browser, live_server, people[name], batch, right)
        wait_for(browser, lambda d, first=done[name]: d.execute_script(READY) not in (None, str(first)), timeout=30)
    as_user(browser, live_server, people["rhea"], f"/work/batches/{batch.pk}/decisions/")
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, f'tr[data-assignment="{done["bob"]}"]'))
    browser.find_element(By.CSS_SELECTOR, f'tr[data-assignment="{done["bob"]}"] input.row-select').click()
    browser.find_element(By.ID, "feedback").send_keys("The sentence is negative: read it again.")
    browser.find_element(By.ID, "reject-selected").click()
    wait_for(browser, lambda d: "Rejected 1 assignment" in d.find_element(By.TAG_NAME, "body").text)
    wait_for(browser, lambda d: d.execute_script("return document.body.dataset.reviewReady === 'true'"))
    browser.find_element(By.ID, "select-all").click()  # then approve every other pending row
    browser.find_element(By.CSS_SELECTOR, f'tr[data-assignment="{done["bob"]}"] input.row-select').click()
    browser.find_element(By.ID, "approve-selected").click()
    wait_for(browser, lambda d: "Approved 2 assignments" in d.find_element(By.TAG_NAME, "body").text)
    assert browser.find_element(By.ID, "count-rejected").text == "1"
    assert browser.find_element(By.ID, "count-approved").text == "2"
    use_session(browser, live_server.url, people["bob"])
    open_work(browser, live_server)
    row = browser.find_element(By.CSS_SELECTOR, f'#submitted-assignments tr[data-assignment="{done["bob"]}"]')
    assert row.get_attribute("data-review") == "rejected"
    assert row.find_element(By.CSS_SELECTOR, ".feedback").text == "The sentence is negative: read it again."
    row.find_element(By.TAG_NAME, "a").click()
    wait_for(browser, lambda d: "read it again" in d.find_element(By.ID, "assignment-review").text)
    use_session(browser, live_server.url, people["alice"])
    open_work(browser, live_server)
    mine = browser.find_element(By.CSS_SELECTOR, f'#submitted-assignments tr[data-assignment="{done["alice"]}"]')
    assert mine.get_attribute("data-review") == "approved"


def test_a_blocked_worker_gets_no_more_tasks_of_that_batch(team, browser, live_server):
    project, people = team
    batch = make_batch(project, name="screened", csv_text=GOLD_CSV, assignments_per_task=3)
    quality.do_mark_gold(batch, quality.check_gold_request(batch, {"tasks": [0, 1]}))
    settings = {"gold_rate": 0.5, "gold_threshold": 0.6, "gold_min_answers": 1}
    quality.do_update_quality_settings(batch, quality.check_quality_settings(batch, settings))
    other = make_batch(project, name="other")
    # carol answers her first (gold) task wrong; Submit & next asks for the next one and is refused, saying why
    first = submit_one(browser, live_server, people["carol"], batch, wrong)
    assert Assignment.objects.get(pk=first).task.is_gold
    wait_for(browser, lambda d: "blocked" in d.find_element(By.TAG_NAME, "body").text, timeout=30)
    assert "gold accuracy" in browser.find_element(By.TAG_NAME, "body").text
    open_work(browser, live_server)
    assert not browser.find_elements(By.CSS_SELECTOR, f'#available-batches tr[data-batch="{batch.pk}"]')
    assert browser.find_elements(By.CSS_SELECTOR, f'#available-batches tr[data-batch="{other.pk}"]')
    blocked = browser.find_element(By.CSS_SELECTOR, f'#blocked-batches li[data-blocked-batch="{batch.pk}"]')
    assert "below the batch's threshold" in blocked.text
    browser.get(live_server.url + f"/work/batches/{batch.pk}/preview/")
    assert "blocked" in browser.find_element(By.TAG_NAME, "body").text
    # the others answer right and go on getting tasks of the batch
    for name in ("alice", "bob"):
        first = submit_one(browser, live_server, people[name], batch, right)
        wait_for(browser, lambda d, first=first: d.execute_script(READY) not in (None, str(first)), timeout=30)
        open_work(browser, live_server)
        assert browser.find_elements(By.CSS_SELECTOR, f'#available-batches tr[data-batch="{batch.pk}"]'), name
    as_user(browser, live_server, people["rhea"], f"/work/batches/{batch.pk}/decisions/?flagged=true")
    flagged = browser.find_elements(By.CSS_SELECTOR, "#review-rows tbody tr")
    assert [row.get_attribute("data-worker") for row in flagged] == ["carol"]
    assert browser.find_element(By.CSS_SELECTOR, '#blocked-workers tr[data-worker="carol"]')


def test_a_batch_that_needs_a_qualification_appears_once_granted(team, browser, live_server):
    project, people = team
    batch = make_batch(project, name="experts-only")
    qualification = quality.do_create_qualification(project, "expert")
    requirement = {"requirements": [{"qualification": "expert", "min_score": 0.8}]}
    quality.do_update_quality_settings(batch, quality.check_quality_settings(batch, requirement))
    for name in ("alice", "bob", "carol"):
        use_session(browser, live_server.url, people[name])
        open_work(browser, live_server)
        assert not browser.find_elements(By.CSS_SELECTOR, f'tr[data-batch="{batch.pk}"]'), name
    as_user(browser, live_server, people["adam"], f"/projects/{project.name}/qualifications/")
    grant = browser.find_element(By.CSS_SELECTOR, f"#qualification-{qualification.pk} form.grant")
    Select(grant.find_element(By.NAME, "worker")).select_by_value("bob")
    score = grant.find_element(By.NAME, "score")
    score.clear()
    score.send_keys("0.9")
    grant.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '.scores tr[data-worker="bob"]'))
    use_session(browser, live_server.url, people["bob"])
    open_work(browser, live_server)
    assert browser.find_elements(By.CSS_SELECTOR, f'#available-batches tr[data-batch="{batch.pk}"]')
    assert accept(browser, batch)
    for name in ("alice", "carol"):
        use_session(browser, live_server.url, people[name])
        open_work(browser, live_server)
        assert not browser.find_elements(By.CSS_SELECTOR, f'tr[data-batch="{batch.pk}"]'), name
