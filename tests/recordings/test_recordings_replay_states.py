"""A replay's life through the API and the task page (docs/mind2web.md#replay): queued, then running once the worker
takes it (with when it started), then done or failed. A queued replay no worker took within QUEUED_LOST_AFTER, or a
running one not finished within RUNNING_LOST_AFTER, is shown as lost and may be requested again; until then a
second request is a 409. A task is found by its annotation_id with the same queries however many demos the
project has (by the stored, indexed ``task_uuid``)."""

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.actions.exports.replays import QUEUED_LOST_AFTER, RUNNING_LOST_AFTER, do_start_replay
from annotation.lib.formats import mind2web_task_id
from annotation.models import Demonstration
from tests.support.recorder import record_step_task

pytestmark = pytest.mark.django_db

BASE = "/api/projects/alpha/replays/"


def record(client, index: int) -> str:
    """A step-mode task with recorded traffic, through the ingest API."""
    return record_step_task(client, index, "replay-state")


@pytest.fixture
def task(owner, api_for):
    return record(api_for(owner), 1)


def aged(name: str, key: str, by: dt.timedelta) -> None:
    """The stored replay as it would be ``by`` later: its ``key`` time moved back (the clock is not faked)."""
    demo = Demonstration.objects.get(name=name)
    moment = dt.datetime.fromisoformat(demo.replay[key]) - by
    Demonstration.objects.filter(pk=demo.pk).update(replay=demo.replay | {key: moment.isoformat()})


def test_a_replay_is_queued_then_running_then_may_be_requested_again_only_once_lost(task, researcher, api_for, client):
    api, task_id = api_for(researcher), mind2web_task_id(task)
    queued = api.post(BASE, {"task": task_id}, format="json")
    assert (queued.status_code, queued.json()["status"], queued.json()["lost"]) == (202, "queued", False)
    do_start_replay(Demonstration.objects.get(name=task))  # what the worker does as it takes the job
    running = api.get(f"{BASE}{task_id}/").json()
    assert (running["status"], running["lost"]) == ("running", False), running
    assert running["at"] == queued.json()["at"]
    assert running["started_at"] >= running["at"]
    again = api.post(BASE, {"task": task_id}, format="json")
    assert (again.status_code, again.json()["errors"][0]["message"]) == (409, "already running"), again.content
    client.force_login(researcher)
    page = client.get(f"/review/{task}/").content.decode()
    assert "replay running since" in page
    assert 'id="btn-replay" title="Replay the task' in page
    assert page.split('id="btn-replay"')[1].split(">")[0].endswith(" disabled")

    aged(task, "started_at", RUNNING_LOST_AFTER + dt.timedelta(seconds=5))
    lost = api.get(f"{BASE}{task_id}/").json()
    assert (lost["status"], lost["lost"]) == ("running", True), lost
    page = client.get(f"/review/{task}/").content.decode()
    assert "lost: replay again" in page
    assert not page.split('id="btn-replay"')[1].split(">")[0].endswith(" disabled")
    requeued = api.post(BASE, {"task": task_id}, format="json")
    assert (requeued.status_code, requeued.json()["status"]) == (202, "queued"), requeued.content


def test_a_queued_replay_no_worker_took_is_lost_after_the_short_bound(task, researcher, api_for):
    api, task_id = api_for(researcher), mind2web_task_id(task)
    assert api.post(BASE, {"task": task_id}, format="json").status_code == 202
    aged(task, "at", QUEUED_LOST_AFTER - dt.timedelta(seconds=30))
    assert api.post(BASE, {"task": task_id}, format="json").status_code == 409  # not yet
    assert api.get(f"{BASE}{task_id}/").json()["lost"] is False
    aged(task, "at", dt.timedelta(seconds=60))
    assert api.get(f"{BASE}{task_id}/").json()["lost"] is True
    assert api.post(BASE, {"task": task_id}, format="json").status_code == 202


def test_done_and_failed_replays_are_not_lost_and_may_be_run_again(task, researcher, api_for):
    api, task_id = api_for(researcher), mind2web_task_id(task)
    Demonstration.objects.filter(name=task).update(replay={"status": "failed", "error": "x", "at": "2020-01-01"})
    failed = api.get(f"{BASE}{task_id}/").json()
    assert failed["status"] == "failed"
    assert "lost" not in failed
    assert api.post(BASE, {"task": task_id}, format="json").status_code == 202


def test_a_task_is_found_with_the_same_queries_however_many_demos_the_project_has(owner, researcher, api_for):
    recorder, api = api_for(owner), api_for(researcher)
    first = record(recorder, 10)

    def queries_for(name: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            answer = api.get(f"{BASE}{mind2web_task_id(name)}/")
        assert (answer.status_code, answer.json()["task"]) == (200, mind2web_task_id(name))
        assert any('"task_uuid" = ' in query["sql"] for query in captured), "found by its stored, indexed id"
        return len(captured)

    alone = queries_for(first)
    names = [record(recorder, 11 + index) for index in range(6)]
    assert {queries_for(name) for name in [first, *names]} == {alone}
    assert api.get(f"{BASE}{mind2web_task_id('nosuchdemo')}/").status_code == 404
