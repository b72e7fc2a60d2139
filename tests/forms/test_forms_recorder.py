"""Recording a HIT: the real recorder extension in headless Chromium records a person doing a form task on its
assignment page (the platform as `make run` starts it). Its content script runs in the sandboxed, opaque-origin
task frame, so the typing, checkbox, select and submit in the frame are turns like on any page; the recording names
the assignment it was made on, and it exports as WebLINX like any demonstration."""

import json

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.support.browser import sign_in_form, wait_for
from tests.support.recorder_harness import (
    api,
    create_member,
    exported_files,
    extension_browser,
    live_platform,
    stored_turns,
)
from tests.support.waits import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.processes]

PROJECT = "formrec"
USER, PASSWORD = "formworker", "Formworker-Passw0rd!"
SETUP = """
from django.contrib.auth import get_user_model
from annotation.actions.forms import BatchSettings, do_create_form_batch, parse_batch
from annotation.models import Project
user = get_user_model().objects.get(username={user!r})
user.set_password({password!r})
user.save()
template = '''<p>Say something about ${{topic}}.</p>
<input type="text" name="comment" id="comment">
<label><input type="checkbox" name="tags" value="red" id="tag-red"> red</label>
<label><input type="checkbox" name="tags" value="blue" id="tag-blue"> blue</label>
<select name="mood" id="mood"><option value="">choose</option><option value="happy">happy</option></select>'''
csv = "topic\\nthe sea\\nthe sky\\n"
parsed = parse_batch(template.encode(), csv.encode(), "topics.csv")
batch = do_create_form_batch(user, Project.objects.get(name={project!r}), "topics", parsed, BatchSettings())
print(batch.pk)
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    with live_platform(tmp_path_factory.mktemp("form-recorder"), "formrec", USER, PROJECT) as running:
        done = running.platform.manage("shell", "-c", SETUP.format(user=USER, password=PASSWORD, project=PROJECT))
        assert done.returncode == 0, done.stderr
        running.batch_id = int(done.stdout.strip().splitlines()[-1])
        yield running


def frame_element(driver, element_id):
    return driver.find_element(By.ID, element_id)


def test_a_person_doing_a_form_task_is_recorded_in_the_task_frame_and_names_the_assignment(live):
    with extension_browser(live, PROJECT) as (driver, _cdp, recorder):
        sign_in_form(driver, live.url, USER, PASSWORD)
        driver.get(f"{live.url}/work/")
        driver.find_element(By.CSS_SELECTOR, f'tr[data-batch="{live.batch_id}"] button.accept').click()
        page = wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#assignment[data-ready='true']"))[0]
        assignment = int(page.get_attribute("data-id"))

        recorder.start(task_description="Fill the topics form", mode="task", assignment=assignment)
        name = wait_until(lambda: (recorder.status().get("session") or {}).get("demoName"), 60, message="demo")
        driver.switch_to.frame(driver.find_element(By.ID, "task-frame"))
        comment = frame_element(driver, "comment")
        comment.click()
        comment.send_keys("calm and blue")
        frame_element(driver, "tag-red").click()
        frame_element(driver, "tag-blue").click()
        mood = frame_element(driver, "mood")
        mood.send_keys("happy")  # real key events (Selenium's Select dispatches untrusted ones the recorder ignores)
        assert Select(mood).first_selected_option.get_attribute("value") == "happy"
        frame_element(driver, "submitButton").click()
        driver.switch_to.default_content()
        wait_for(driver, lambda d: d.find_element(By.ID, "assignment").get_attribute("data-id") != str(assignment))
        recorder.stop()
        recorder.wait_idle(180)

    wait_until(
        lambda: api(live.platform, f"/api/recordings/{name}/", live.token)["status"] == "recorded", 120, message="end"
    )
    demo = api(live.platform, f"/api/recordings/{name}/", live.token)
    assert demo["assignment"] == assignment
    turns = [t for t in stored_turns(live.platform, live.token, name) if t["type"] == "browser"]
    in_frame = [t for t in turns if "/forms/assignments/" in (t["arguments"]["metadata"].get("frameUrl") or "")]
    intents = [t["intent"] for t in in_frame]
    assert any(t["intent"] == "textInput" and t["arguments"].get("text") == "calm and blue" for t in in_frame), intents
    changes = {t["arguments"].get("value") for t in in_frame if t["intent"] == "change"}
    assert {"happy"} <= changes, intents
    changed = {t["arguments"]["element"]["attributes"].get("id") for t in in_frame if t["intent"] == "change"}
    assert {"tag-red", "tag-blue", "mood"} <= changed, intents
    assert "submit" in intents or any(
        t["intent"] == "click" and t["arguments"]["element"]["attributes"].get("id") == "submitButton" for t in in_frame
    ), intents
    assert all(t.get("screenshot") for t in in_frame if t["intent"] in ("click", "textInput", "change"))

    researcher = create_member(live.platform, "form-researcher", PROJECT, "researcher")
    replay = json.loads(
        exported_files(live.platform, researcher, PROJECT, "weblinx")[f"demonstrations/{name}/replay.json"]
    )
    assert "calm and blue" in json.dumps(replay)
