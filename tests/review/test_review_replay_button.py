"""The task page's "Replay offline" button (docs/mind2web.md#replay): shown to researchers and admins of the project
for a task with recorded traffic; it queues the replay (the worker runs it: tests/recordings/test_recordings_replay.py)
and the page shows its status. Reviewers get no button and a 403, outsiders a 404, a task without traffic is refused
on the page."""

import pytest

from annotation.models import Demonstration
from tests.support.recorder import record_step_task

pytestmark = pytest.mark.django_db


def record(client, index: int, traffic: bool) -> str:
    return record_step_task(client, index, "replay", traffic)


@pytest.fixture
def tasks(owner, api_for):
    recorder = api_for(owner)
    return record(recorder, 1, traffic=True), record(recorder, 2, traffic=False)


def test_a_researcher_queues_a_replay_from_the_task_page(tasks, researcher, client):
    with_traffic, without = tasks
    client.force_login(researcher)
    page = client.get(f"/review/{with_traffic}/")
    assert page.status_code == 200
    assert b'id="btn-replay"' in page.content
    answer = client.post(f"/review/{with_traffic}/replay")
    assert (answer.status_code, answer["Location"]) == (302, f"/review/{with_traffic}/")
    assert Demonstration.objects.get(name=with_traffic).replay["status"] == "queued"
    assert b"replay queued" in client.get(f"/review/{with_traffic}/").content

    assert b'id="btn-replay"' not in client.get(f"/review/{without}/").content
    refused = client.post(f"/review/{without}/replay", follow=True)
    assert b"no recorded traffic" in refused.content
    assert Demonstration.objects.get(name=without).replay is None


def test_reviewers_and_outsiders_cannot_replay(tasks, reviewer, outsider, client):
    with_traffic, _ = tasks
    client.force_login(reviewer)
    assert b'id="btn-replay"' not in client.get(f"/review/{with_traffic}/").content
    assert client.post(f"/review/{with_traffic}/replay").status_code == 403
    client.force_login(outsider)
    assert client.post(f"/review/{with_traffic}/replay").status_code == 404
    assert Demonstration.objects.get(name=with_traffic).replay is None
