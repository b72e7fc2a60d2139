"""The review page's background work on a real Celery worker: opening a demo enqueues thumbnails and the
realign + quality task (after commit), the worker makes them, and the page and list then show them."""

import pytest
from django.core.cache import cache

from annotation.models import DemoReview, Turn, TurnCuration
from tests.support.review_data import recorded_demo
from tests.support.waits import wait_until

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]


def thumbnail_ready(client, sha):
    return client.get(f"/review/thumbs/{sha}")["Content-Type"] == "image/webp"


def test_a_finished_recording_is_prepared_by_the_worker_before_anyone_opens_it(client, reviewer, worker):
    demo = recorded_demo()  # stored as the recorder does: its finish enqueues thumbnails, suggestions and checks
    shots = set(
        Turn.objects.filter(demonstration=demo).exclude(screenshot=None).values_list("screenshot_id", flat=True)
    )
    wait_until(
        lambda: DemoReview.objects.filter(pk=demo.pk, realigned=True, quality__isnull=False).exists(),
        120,
        0.2,
        "the worker's work",
    )
    client.force_login(reviewer)
    wait_until(lambda: all(thumbnail_ready(client, sha) for sha in shots), 120, 0.2, "the worker's work")
    listed = client.get("/review/live", {"names": demo.name}).json()["demos"][demo.name]
    assert listed["issues"] == len(DemoReview.objects.get(pk=demo.pk).quality)


def forget_prepared(demo):
    """As for a demo the worker never reached: no thumbnails, suggestions or checks yet."""
    from django.core.files.storage import default_storage

    from annotation.store.blobstore import thumbnail_path

    wait_until(
        lambda: DemoReview.objects.filter(pk=demo.pk, realigned=True, quality__isnull=False).exists(),
        120,
        0.2,
        "the worker's work",
    )
    for sha in Turn.objects.filter(demonstration=demo).exclude(screenshot=None).values_list("screenshot_id", flat=True):
        default_storage.delete(thumbnail_path(sha))
    DemoReview.objects.filter(pk=demo.pk).update(realigned=False, quality=None)
    TurnCuration.objects.filter(demonstration=demo).update(suggested_screenshot="")
    cache.delete(f"review-work:{demo.pk}")  # the once-a-minute enqueue guard may remember an earlier test's demo


def test_opening_a_demo_gets_thumbnails_suggestions_and_quality_from_the_worker(client, reviewer, worker):
    demo = recorded_demo()
    framed = Turn.objects.get(demonstration=demo, client_id="framed-turn")
    forget_prepared(demo)  # the framed turn came after the finish: the page must ask the worker again
    client.force_login(reviewer)
    page = client.get(f"/review/{demo.name}/").text  # enqueues the work (the worker may be done at once)
    assert f'data-sha="{framed.screenshot_id}" data-pending="true"' in page

    wait_until(lambda: DemoReview.objects.filter(pk=demo.pk, realigned=True).exists(), 120, 0.2, "the worker's work")
    wait_until(
        lambda: client.get(f"/review/thumbs/{framed.screenshot_id}")["Content-Type"] == "image/webp",
        120,
        0.2,
        "the worker's work",
    )
    assert TurnCuration.objects.get(turn=framed).suggested_screenshot == framed.frames[1]["screenshot"]
    page = client.get(f"/review/{demo.name}/").text
    assert f'"suggested": "{framed.frames[1]["screenshot"]}"' in page
