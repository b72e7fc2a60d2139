"""Step mode (Mind2Web's tool) end to end: the real extension in headless Chromium, the real platform.

A demonstration task (website → proposal → accepted, through the Mind2Web actions) is listed in the side panel
(its page opened in a window of its own); *Explore* opens the website without recording anything; *Start* starts a
step-mode recording of the task with MHTML snapshots. On the fixture page (``fixtures/step.html``, which counts
every pointer event and click that reaches it) each WebDriver click only selects its element: nothing reaches the
page. The panel's operations are then performed with trusted input — Click counts, Type replaces the text, Select
changes the select, Hover fires mouseover, Press Enter submits — while the fake click and Ignore leave the page
alone. After the annotator edits the description and stops, the platform holds one turn per operation (not for
Ignore) with the page, boxes, screenshot and MHTML before it, the task's assignment is submitted and the
recording's description is the edited one. A reviewer then discards one step and refines the description, and the
Mind2Web export has the refined task, each kept step's op and original op, the acted element marked in raw_html and
the step's MHTML beside it.
"""

import json

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

from annotation.lib.splits import MIND2WEB_SPLITS
from tests.support.recorder_browser import Panel, content_in_step_mode, element_id, op_button, select
from tests.support.recorder_harness import (
    Recorder,
    api,
    blob_bytes,
    create_member,
    exported_files,
    extension_browser,
    fixture_servers,
    live_platform,
    stored_turns,
)
from tests.support.waits import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PROJECT = "step-mode"
TASK = "Count once, search for blue shoes in large, and hover the box"
EDITED = "Count once, type blue shoes, pick Large, hover the box and search"
LAST_TAB = "webtasks.lastActiveTab"  # the extension's record of the active tab (lib/constants.js STORAGE.LAST_TAB)

MAKE_TASK = """
from django.contrib.auth import get_user_model
from annotation.actions.mind2web.proposals import do_screen, do_start_round, do_submit_round
from annotation.models import Membership, Project, Role, Website
User = get_user_model()
project = Project.objects.get(name={project!r})
annotator = User.objects.get(username="step-user")
reviewer, _ = User.objects.get_or_create(username="step-reviewer")
Membership.objects.get_or_create(project=project, user=reviewer, defaults={{"role": Role.REVIEWER}})
site = Website.objects.create(project=project, name="stepfixture", url={url!r}, domain="Shopping", subdomain="Fixture")
round_ = do_start_round(annotator, site)
proposal = do_submit_round(annotator, round_.pk, [{task!r}])[0]
accepted = do_screen(reviewer, proposal.pk, "accept")
print(accepted.demo_task.assignments.get().pk)
"""

VERIFY = """
from django.contrib.auth import get_user_model
from annotation.actions.review.access import review_of
from annotation.actions.review.curation import do_delete_turn, do_edit_metadata
from annotation.models import Demonstration, Turn
reviewer = get_user_model().objects.get(username="step-reviewer")
demo = Demonstration.objects.get(name={name!r})
do_delete_turn(reviewer, demo, review_of(demo).revision, Turn.objects.get(demonstration=demo, client_id={step!r}).pk)
demo.refresh_from_db()
do_edit_metadata(reviewer, demo, review_of(demo).revision, {{"refined_task": {refined!r}}})
print("verified")
"""
REFINED = "Type blue shoes, pick Large, hover the box and search"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("step-var"), "step_mode", "step-user", PROJECT) as running:
        yield running


def make_task(live, url: str) -> int:
    result = live.platform.manage("shell", "-c", MAKE_TASK.format(project=PROJECT, url=url, task=TASK))
    assert result.returncode == 0, result.stderr
    return int(result.stdout.strip().splitlines()[-1])


def page_number(driver, element_id: str) -> int:
    return int(driver.find_element(By.ID, element_id).text.strip() or 0)


def test_a_step_mode_demonstration_of_an_assigned_task(live):
    with fixture_servers() as (main, _), extension_browser() as (driver, cdp, _):
        url = f"{main}/step.html"
        task_id = make_task(live, url)
        recorder = Recorder(cdp, live.url, live.token, PROJECT)
        recorder.open()
        panel = Panel(recorder)

        # Step mode chosen first: its task list shows. The assigned task is listed; Explore opens its website and
        # records nothing.
        wait_until(lambda: panel.quietly("document.body.dataset.mode"), 30, message="the panel's mode shown")
        panel.js("document.querySelector('#mode-choice input[value=step]').click(), true")
        assert panel.js(
            "!document.getElementById('tasks').hidden && !document.getElementById('task-mhtml').closest('[hidden]')"
        )
        wait_until(lambda: panel.quietly("document.querySelectorAll('#task-list li').length") == 1, 60, message="task")
        assert panel.js("document.querySelector('#task-list li').dataset.task") == str(task_id)
        assert TASK in panel.js("document.querySelector('#task-list li .task-text').textContent")
        active = recorder.storage(LAST_TAB)
        panel.js("document.querySelector('#task-list .task-explore').click(), true")
        explored = wait_until(lambda: [t for t in cdp.targets() if t.get("url") == url], 30, message="explore tab")
        active = wait_until(lambda: (tab := recorder.storage(LAST_TAB)) != active and tab, 30, message="explore active")
        cdp.close_target(explored[0]["targetId"])
        # the first tab active again, as the extension saw it: else that switch may come after the start, recorded
        wait_until(lambda: recorder.storage(LAST_TAB) != active, 30, message="the first tab active again")
        recordings = f"/api/recordings/?project__name={PROJECT}"
        assert api(live.platform, recordings, live.token)["results"] == []

        # Start: a step-mode recording of the task, with MHTML snapshots.
        panel.js(
            "document.getElementById('task-mhtml').checked = true; document.querySelector('.task-start').click(); true"
        )
        status = wait_until(
            lambda: (s := recorder.status()).get("session") and s["session"].get("demoName") and s,
            60,
            message="started",
        )
        assert status["session"]["step"] is True
        assert status["session"]["mhtml"] is True
        name = status["session"]["demoName"]
        demo = api(live.platform, f"/api/recordings/{name}/", live.token)
        assert (demo["assignment"], demo["mode"], demo["task_description"]) == (task_id, "task", TASK)
        assert wait_until(lambda: not panel.quietly("document.getElementById('step').hidden"), 30, message="step UI")

        driver.get(url)
        wait_until(lambda: content_in_step_mode(driver), 30, message="the page's content script in step mode")

        # Click: the selecting click does not reach the page; the operation does.
        select(driver, panel, "counter")
        assert [page_number(driver, i) for i in ("pointer-events", "clicks", "count")] == [0, 0, 0]
        panel.operate(op_button("click"))
        wait_until(lambda: page_number(driver, "count") == 1, 30, message="the click executed")

        # Type replaces the field's text.
        select(driver, panel, "query")
        assert driver.find_element(By.ID, "query").get_property("value") == "old text"
        panel.operate(
            "document.getElementById('step-type-value').value = 'blue shoes';"
            "document.getElementById('step-type-form').requestSubmit()"
        )
        wait_until(
            lambda: driver.find_element(By.ID, "query").get_property("value") == "blue shoes", 30, message="typed"
        )

        # Select: the panel lists the options; the chosen one is set and the page sees the change.
        select(driver, panel, "size")
        options = panel.js("[...document.getElementById('step-select-value').options].map(o => o.value + ':' + o.text)")
        assert options == ["s:Small", "m:Medium", "l:Large"]
        panel.operate(
            "document.getElementById('step-select-value').value = 'l';"
            "document.getElementById('step-select-form').requestSubmit()"
        )
        wait_until(lambda: driver.find_element(By.ID, "changed").text == "l", 30, message="selected")

        # Hover: the pointer is moved away after selecting; the operation brings a mouseover.
        select(driver, panel, "hover-target")
        ActionChains(driver).move_to_element(driver.find_element(By.ID, "away")).perform()
        hovers = page_number(driver, "hovers")
        panel.operate(op_button("hover"))
        wait_until(lambda: page_number(driver, "hovers") == hovers + 1, 30, message="hovered")

        # Press Enter submits the search form.
        select(driver, panel, "search-box")
        panel.operate(op_button("enter"))
        wait_until(lambda: driver.find_element(By.ID, "submitted").text == "shoes", 30, message="submitted")

        # The fake click is recorded and never executed; Ignore records nothing.
        clicks = page_number(driver, "clicks")
        select(driver, panel, "delete")
        panel.operate(op_button("fake"))
        select(driver, panel, "counter")
        panel.operate(op_button("ignore"))
        assert page_number(driver, "deleted") == 0
        assert page_number(driver, "count") == 1
        assert page_number(driver, "clicks") == clicks, "no click reached the page after the executed ones"

        # The annotator edits the description and stops from the panel.
        panel.js(f"document.getElementById('step-task').value = {json.dumps(EDITED)}; true")
        panel.js("document.getElementById('stop-button').click(), true")
        recorder.wait_idle(180)
        wait_until(
            lambda: api(live.platform, f"/api/recordings/{name}/", live.token)["status"] == "recorded",
            120,
            interval=0.5,
            message="recorded",
        )

    demo = api(live.platform, f"/api/recordings/{name}/", live.token)
    assert demo["task_description"] == EDITED
    assert api(live.platform, "/api/demonstration-tasks/", live.token) == [], "finishing submitted the task"

    turns = [
        t for t in stored_turns(live.platform, live.token, name) if t["type"] == "browser" and t["intent"] != "load"
    ]
    steps = [(t["intent"], t["arguments"]["properties"].get("stepOp"), element_id(t)) for t in turns]
    assert steps == [
        ("click", "CLICK", "counter"),
        ("textInput", "TYPE", "query"),
        ("change", "SELECT", "size"),
        ("hover", "HOVER", "hover-target"),
        ("submit", "ENTER", "search-box"),
        ("click", "CLICK", "delete"),
    ], steps
    by_element = {element_id(t): t for t in turns}
    assert by_element["query"]["arguments"]["text"] == "blue shoes"
    assert by_element["size"]["arguments"]["value"] == "l"
    assert by_element["size"]["arguments"]["properties"]["optionText"] == "Large"
    assert by_element["delete"]["arguments"]["properties"]["fakeClick"] is True
    assert not by_element["counter"]["arguments"]["properties"].get("fakeClick")
    for turn in turns:
        assert all(turn[field] for field in ("screenshot", "page", "bboxes")), turn
        page = blob_bytes(live.platform, live.token, turn["page"]).decode()
        uid = turn["arguments"]["element"]["attributes"]["data-webtasks-id"]
        assert f'data-webtasks-id="{uid}"' in page
        assert "data-webtasks-highlight" not in page, "the page before the step, without the highlight"
        mhtml = blob_bytes(live.platform, live.token, turn["arguments"]["properties"]["mhtml"])
        assert b"multipart/related" in mhtml[:2000]
        assert b"Step mode fixture" in mhtml
        assert b"data-webtasks-highlight" not in mhtml
    # The page before the Type step still had the old text (the turn is the state BEFORE the operation).
    query_page = blob_bytes(live.platform, live.token, by_element["query"]["page"]).decode()
    assert "blue shoes" not in query_page

    # Verification (a reviewer): the counter click is discarded as a step, the description refined. Then the
    # Mind2Web export: the refined task, one action per kept step with its op and original op, the acted element
    # marked in raw_html, and each step's MHTML where the raw dump keeps it.
    verified = live.platform.manage(
        "shell", "-c", VERIFY.format(name=name, step=by_element["counter"]["client_id"], refined=REFINED)
    )
    assert verified.returncode == 0, verified.stderr
    assert "verified" in verified.stdout
    researcher = create_member(live.platform, "step-researcher", PROJECT, "researcher")
    files = exported_files(live.platform, researcher, PROJECT, "mind2web")
    records = [record for split in MIND2WEB_SPLITS for record in json.loads(files.get(f"{split}.json", b"[]"))]
    assert [record["confirmed_task"] for record in records] == [REFINED]
    record = records[0]
    assert [tuple(action["operation"].values()) for action in record["actions"]] == [
        ("TYPE", "TYPE", "blue shoes"),
        ("SELECT", "SELECT", "Large"),
        ("CLICK", "HOVER", ""),
        ("CLICK", "ENTER", ""),
        ("CLICK", "CLICK", ""),
    ], [action["operation"] for action in record["actions"]]
    snapshots = f"task/{record['annotation_id']}/processed/snapshots"
    for action in record["actions"]:
        assert f'data_pw_testid_buckeye="{action["action_uid"]}"' in action["raw_html"]
        assert b"Step mode fixture" in files[f"{snapshots}/{action['action_uid']}_before.mhtml"]
