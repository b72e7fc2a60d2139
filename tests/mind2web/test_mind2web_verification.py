"""Mind2Web verification on the review page (discard the task, discard steps, refine the description with the
recorded one kept) and what the Mind2Web export makes of it: a demonstration of an accepted proposal, recorded
through the demonstration-task API, verified through the review page's endpoint, exported as an export job does."""

import json

import pytest

from annotation.actions import mind2web
from annotation.lib.splits import MIND2WEB_SPLITS
from annotation.models import Demonstration, DemoStatus
from tests.support.mind2web_data import propose, review, website
from tests.support.payloads import browser_turn, state_blobs, state_refs
from tests.support.recorder import finish, post_turns, upload_blobs
from workers.exports.dataset import export_demos, storage_blobs
from workers.exports.exporters.mind2web import Mind2WebExporter

RECORDED = "Track the order I placed yesterday"
REFINED = "Track the status of yesterday's order of running shoes"
INTENTS = ("click", "hover", "submit", "textInput", "change")


@pytest.fixture
def demo(api_for, alpha, owner, reviewer) -> Demonstration:
    """A recorded demonstration of an accepted proposal: one turn per step intent, each with its page."""
    site = website(alpha)
    body = propose(api_for(owner), site, ["Track my order"])
    review(api_for(reviewer), body["proposals"][0]["id"], "accept", RECORDED)
    client = api_for(owner)
    task = client.get("/api/demonstration-tasks/").json()[0]
    started = client.post(f"/api/demonstration-tasks/{task['id']}/start/", {"client_id": "rec-v"}, format="json")
    name = started.json()["name"]
    blobs = state_blobs()
    upload_blobs(client, blobs.values())
    turns = [browser_turn(f"{intent}-{i}", intent, 1.0 + i, **state_refs(blobs)) for i, intent in enumerate(INTENTS)]
    assert post_turns(client, name, turns).status_code == 201
    assert finish(client, name).status_code == 200
    return Demonstration.objects.get(name=name)


def edit(client, demo, op, **body):
    revision = json.loads(client.get(f"/review/{demo.name}/revision").content)["revision"]
    body = json.dumps({"op": op, "revision": revision, **body})
    return client.post(f"/review/{demo.name}/edit", body, "application/json")


def exported(project, tmp_path) -> list:
    """Every record of a Mind2Web export of the project's recorded and in-review demos."""
    demos = export_demos(project, "mind2web", statuses=[DemoStatus.RECORDED, DemoStatus.IN_REVIEW])
    Mind2WebExporter().export(demos, tmp_path, storage_blobs())
    return [record for split in MIND2WEB_SPLITS for record in json.loads((tmp_path / f"{split}.json").read_text())]


def test_the_review_page_offers_the_three_checks(client, reviewer, demo):
    client.force_login(reviewer)
    page = client.get(f"/review/{demo.name}/").content.decode()
    assert 'id="verification-form"' in page
    assert 'name="refined_task"' in page
    assert 'name="discarded"' in page
    assert RECORDED in page


def test_verification_refines_the_description_discards_steps_and_the_export_follows(
    client, reviewer, demo, alpha, tmp_path
):
    client.force_login(reviewer)
    change = demo.turns.get(intent="change")
    assert edit(client, demo, "delete", turn=change.pk).status_code == 200
    assert edit(client, demo, "edit_metadata", fields={"refined_task": REFINED}).status_code == 200
    demo.refresh_from_db()
    assert (demo.task_description, demo.refined_task) == (RECORDED, REFINED)  # the recorded one is kept

    [record] = exported(alpha, tmp_path)
    assert record["confirmed_task"] == REFINED
    assert (record["website"], record["domain"], record["subdomain"]) == ("exploretock", "Travel", "Restaurant")
    operations = [action["operation"] for action in record["actions"]]
    assert operations == [
        {"op": "CLICK", "original_op": "CLICK", "value": ""},
        {"op": "CLICK", "original_op": "HOVER", "value": ""},
        {"op": "CLICK", "original_op": "ENTER", "value": ""},
        {"op": "TYPE", "original_op": "TYPE", "value": "weather in Montreal"},
    ]
    for action in record["actions"]:
        assert f'data_pw_testid_buckeye="{action["action_uid"]}"' in action["raw_html"]
    assert mind2web.verification_counts(alpha) == {
        "tasks": 1,
        "discarded": 0,
        "refined": 1,
        "with_steps_discarded": 1,
    }


def test_a_discarded_task_is_left_out_of_the_export_and_counted(client, reviewer, demo, alpha, tmp_path):
    client.force_login(reviewer)
    assert edit(client, demo, "edit_metadata", fields={"discarded": True}).status_code == 200
    assert exported(alpha, tmp_path) == []
    assert mind2web.verification_counts(alpha)["discarded"] == 1
    assert edit(client, demo, "edit_metadata", fields={"discarded": "yes"}).status_code == 400


def test_discarding_is_undoable(client, reviewer, demo, alpha, tmp_path):
    client.force_login(reviewer)
    edit_id = json.loads(edit(client, demo, "edit_metadata", fields={"discarded": True}).content)["id"]
    assert edit(client, demo, "undo", edit=edit_id).status_code == 200
    assert len(exported(alpha, tmp_path)) == 1


def test_annotators_cannot_verify(client, owner, demo):
    client.force_login(owner)
    response = edit(client, demo, "edit_metadata", fields={"discarded": True})
    assert response.status_code == 403
    demo.refresh_from_db()
    assert not demo.discarded
