"""Attacks on the offline replay's states (docs/mind2web.md#replay): two requests at once queue exactly one replay;
a lost run's worker that finishes (or only starts) after a newer request stores nothing over the newer status, as
each request's run id is checked before storing; task ids with odd characters, over-long ones and another project's
are 404, never 500; the review page offers the button to researchers and admins only."""

import datetime as dt
import threading

import pytest
from django.db import connection
from django.urls import reverse

from annotation.actions.exports.replays import RUNNING_LOST_AFTER, do_start_replay, do_store_replay
from annotation.lib.formats import mind2web_task_id
from annotation.models import Demonstration
from tests.support.payloads import state_blobs, state_refs, step_turn
from tests.support.rawdump import har, har_blob, har_entry
from tests.support.recorder import finish, frame, post_bundle, start_demo
from workers.tasks import replay_task

pytestmark = pytest.mark.django_db(transaction=True)  # two requests at once, each on its own connection

BASE = "/api/projects/alpha/replays/"


@pytest.fixture
def task(owner, api_for) -> str:
    client = api_for(owner)
    demo, state = start_demo(client, client_id="replay-attack"), state_blobs(1)
    log = har_blob(har([har_entry("https://www.example.com/api/1")]))
    turn = step_turn("s1", timestamp=1.0, **state_refs(state), har=log.sha256)
    assert post_bundle(client, demo.name, frame([turn], [*state.values(), log])).status_code == 201
    assert finish(client, demo.name).status_code == 200
    return demo.name


def stored(name: str) -> dict:
    return Demonstration.objects.get(name=name).replay or {}


def test_two_requests_at_once_queue_exactly_one(task, researcher, admin, api_for):
    clients, answers, gate = [api_for(researcher), api_for(admin)], [], threading.Barrier(2)

    def press(client):
        gate.wait()
        try:
            answers.append(client.post(BASE, {"task": mind2web_task_id(task)}, format="json").status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=press, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers) == [202, 409]


def test_a_lost_runs_late_worker_does_not_overwrite_the_newer_request(task, researcher, api_for):
    api, task_id = api_for(researcher), mind2web_task_id(task)
    assert api.post(BASE, {"task": task_id}, format="json").status_code == 202
    old_run = stored(task)["run"]
    assert do_start_replay(Demonstration.objects.get(name=task), old_run)
    demo = Demonstration.objects.get(name=task)
    started = dt.datetime.fromisoformat(demo.replay["started_at"]) - RUNNING_LOST_AFTER - dt.timedelta(seconds=5)
    Demonstration.objects.filter(pk=demo.pk).update(replay=demo.replay | {"started_at": started.isoformat()})
    assert api.post(BASE, {"task": task_id}, format="json").status_code == 202  # lost: requested again
    newer = stored(task)
    assert newer["status"] == "queued"
    assert newer["run"] != old_run

    assert do_store_replay(demo, {"steps": 1, "replayed": 1, "first_failure": None, "per_step": []}, old_run) is False
    replay_task(demo.pk, old_run)  # the old message delivered again: takes nothing, stores nothing
    assert stored(task) == newer
    assert api.get(f"{BASE}{task_id}/").json()["status"] == "queued"

    assert do_start_replay(Demonstration.objects.get(name=task), newer["run"])
    assert do_store_replay(demo, {"steps": 1, "replayed": 1, "first_failure": None, "per_step": []}, newer["run"])
    assert api.get(f"{BASE}{task_id}/").json()["status"] == "done"
    assert do_start_replay(Demonstration.objects.get(name=task), newer["run"]) is False  # a duplicate delivery


@pytest.mark.parametrize(
    "odd",
    ["x" * 65, "x" * 5000, "%00", "a%2Fb", "..%2F..", "'%20OR%201=1--", "%E2%80%AE", "%F0%9F%92%A9", "%20"],
)
def test_odd_task_ids_are_404(task, researcher, api_for, odd):
    assert api_for(researcher).get(f"{BASE}{odd}/").status_code == 404


def test_another_projects_task_and_foreign_members_get_404(task, researcher, outsider, api_for):
    task_id = mind2web_task_id(task)
    assert api_for(researcher).get(f"/api/projects/beta/replays/{task_id}/").status_code in (403, 404)
    assert api_for(outsider).get(f"{BASE}{task_id}/").status_code == 404
    assert api_for(outsider).post(BASE, {"task": task_id}, format="json").status_code == 404
    assert stored(task) == {}


def test_the_review_button_only_for_roles_that_may_replay(task, owner, reviewer, researcher, client):
    for user in (owner, reviewer):  # the navigator and a reviewer: no button, and a forged POST queues nothing
        client.force_login(user)
        assert 'id="btn-replay"' not in client.get(f"/review/{task}/").content.decode(), user.username
        assert client.post(reverse("review-replay", args=[task])).status_code in (302, 403, 404)
        assert stored(task) == {}, user.username
    client.force_login(researcher)
    assert 'id="btn-replay"' in client.get(f"/review/{task}/").content.decode()
    assert client.post(reverse("review-replay", args=[task])).status_code == 302
    assert stored(task)["status"] == "queued"
