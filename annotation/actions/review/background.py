"""Background work for review: thumbnails and screenshot suggestions from the worker, cached quality checks (what a
finished recording enqueues is in `actions/recordings/background.py`)."""

from django.core.cache import cache
from django.db import transaction

from ...models import DemoReview, TurnCuration
from .. import queue

ENQUEUE_EVERY = 60  # seconds


def enqueue_review_work(demo, review, missing_thumbnails: list) -> None:
    """After commit, ask the worker for missing thumbnails and, once per demo, screenshot suggestions.

    A broker that cannot be reached only means placeholders stay on the page; it is logged, never run inline."""
    # At most once a minute per demo and process: without this every view of a page would enqueue again
    # while the worker is still busy with the first request.
    if not ((missing_thumbnails or not review.realigned) and cache.add(f"review-work:{demo.pk}", 1, ENQUEUE_EVERY)):
        return
    if missing_thumbnails:
        queue.enqueue(queue.THUMBNAILS, list(missing_thumbnails))
    if not review.realigned:
        queue.enqueue(queue.REALIGN, demo.pk)


def ensure_quality(demo, review, turns, read) -> list:
    """The demo's quality issues, computed once (the raw capture never changes) and cached on its review."""
    from ...lib.quality import quality_issues

    if review.quality is None:
        review.quality = quality_issues(turns, read)
        DemoReview.objects.filter(pk=review.pk).update(quality=review.quality)
    return review.quality


def do_store_suggestions(demo, suggested) -> None:
    """The worker's screenshot suggestions for the demo's turns (``[(turn, sha256, how)]``, a turn without one left
    out), and the demo marked realigned, so review stops asking for them."""
    with transaction.atomic():
        for turn, sha, how in suggested:
            TurnCuration.objects.update_or_create(
                turn=turn, defaults={"demonstration": demo, "suggested_screenshot": sha, "suggested_from": how}
            )
        DemoReview.objects.update_or_create(demonstration=demo, defaults={"realigned": True})
