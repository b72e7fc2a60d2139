"""The review page's background work on a real Celery worker: opening a demo enqueues thumbnails and the
realign + quality task (after commit), the worker makes them, and the page and list then show them."""

import time

import pytest
from django.core.cache import cache
from django.db import connection

from annotation.models import DemoReview, Turn, TurnCuration
from devtools.processes import celery_worker, database_url
from tests.review_data import recorded_demo

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(media_storage, tmp_path):
    env = {"DATABASE_URL": database_url(connection.settings_dict), "MEDIA_ROOT": str(media_storage)}
    with celery_worker(env, tmp_path / "worker.log") as process:
        yield process


def wait_for(check, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError("the worker did not finish in time")


def test_opening_a_demo_gets_thumbnails_suggestions_and_quality_from_the_worker(client, reviewer, worker):
    demo = recorded_demo()
    cache.delete(f"review-work:{demo.pk}")  # the once-a-minute enqueue guard may remember an earlier test's demo
    framed = Turn.objects.get(demonstration=demo, client_id="framed-turn")
    client.force_login(reviewer)
    assert client.get(f"/review/{demo.name}/").status_code == 200
    assert client.get(f"/review/thumbs/{framed.screenshot_id}")["X-Thumbnail"] == "pending"

    wait_for(lambda: DemoReview.objects.filter(pk=demo.pk, realigned=True).exists())
    wait_for(lambda: client.get(f"/review/thumbs/{framed.screenshot_id}")["Content-Type"] == "image/webp")
    assert TurnCuration.objects.get(turn=framed).suggested_screenshot == framed.frames[1]["screenshot"]
    page = client.get(f"/review/{demo.name}/").text
    assert f'"suggested": "{framed.frames[1]["screenshot"]}"' in page
