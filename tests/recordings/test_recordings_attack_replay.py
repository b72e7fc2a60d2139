"""Attacks on the replay API (docs/mind2web.md#replay): hostile annotation_ids and bodies get a 4xx naming the task,
another project's task is a 404, and a researcher spamming replays of one task queues it once (each replay is a
Chromium on the workers)."""

import pytest
from django.core.management import CommandError, call_command

from annotation.lib.formats import mind2web_task_id
from annotation.models import Demonstration
from tests.support.recorder import record_step_task

pytestmark = pytest.mark.django_db


def record(client, index: int) -> str:
    """A step-mode task with recorded traffic, through the ingest API."""
    return record_step_task(client, index, "attack-replay")


@pytest.fixture
def task(owner, api_for):
    return record(api_for(owner), 1)


def test_hostile_task_ids_and_bodies_are_4xx(task, researcher, outsider, beta, api_for):
    api = api_for(researcher)
    base = "/api/projects/alpha/replays/"
    for hostile in ("..", "%2e%2e", "%00", "x" * 5000, "%F0%9F%92%A9", "a%2Fb"):
        assert api.get(f"{base}{hostile}/").status_code == 404, hostile
    for body in ({"task": 5}, {"task": ""}, {"task": None}, [], {"task": ["x"]}, {"task": {"a": 1}}):
        answer = api.post(base, body, format="json")
        assert answer.status_code == 400, (body, answer.content)
        assert b"task" in answer.content
    for hostile in ("\u0000", "..", "x" * 5000):
        assert api.post(base, {"task": hostile}, format="json").status_code == 404
    # another project's task, through this project or the other
    assert api.post("/api/projects/beta/replays/", {"task": mind2web_task_id(task)}, format="json").status_code == 404
    assert api_for(outsider).post(base, {"task": mind2web_task_id(task)}, format="json").status_code == 404
    assert Demonstration.objects.get(name=task).replay is None


def test_a_spammed_replay_is_queued_once(task, researcher, api_for):
    api, body = api_for(researcher), {"task": mind2web_task_id(task)}
    first = api.post("/api/projects/alpha/replays/", body, format="json")
    assert (first.status_code, first.json()["status"]) == (202, "queued")
    again = api.post("/api/projects/alpha/replays/", body, format="json")
    assert again.status_code == 409, again.content
    assert b"already queued" in again.content


@pytest.mark.parametrize("where", ["a directory", "missing/dir/result.json"])
def test_a_bad_json_path_is_refused_before_the_replay(where, task, researcher, tmp_path):
    """``--json`` naming a directory or a missing folder crashed with a traceback after the whole replay had run."""
    path = tmp_path if where == "a directory" else tmp_path / where
    with pytest.raises(CommandError, match="--json"):
        call_command("replay", project="alpha", task=mind2web_task_id(task), user=researcher.username, json=path)
    assert Demonstration.objects.get(name=task).replay is None
