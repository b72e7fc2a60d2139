"""Background work for review: thumbnails and screenshot suggestions from the worker, cached quality checks."""

import logging

from django.core.cache import cache
from django.db import transaction

from ...models import DemoReview, Turn
from .access import review_of

log = logging.getLogger(__name__)

ENQUEUE_EVERY = 60  # seconds


def enqueue_review_work(demo, review, missing_thumbnails: list) -> None:
    """After commit, ask the worker for missing thumbnails and, once per demo, screenshot suggestions.

    A broker that cannot be reached only means placeholders stay on the page; it is logged, never run inline."""
    from workers.tasks import make_thumbnails, realign_demo

    def send():
        try:
            if missing_thumbnails:
                make_thumbnails.delay(missing_thumbnails)
            if not review.realigned:
                realign_demo.delay(demo.pk)
        except Exception:  # kombu raises many kinds: connection, timeout, DNS, ...
            log.exception("could not enqueue review work for %s", demo)

    # At most once a minute per demo and process: without this every view of a page would enqueue again
    # while the worker is still busy with the first request.
    if (missing_thumbnails or not review.realigned) and cache.add(f"review-work:{demo.pk}", 1, ENQUEUE_EVERY):
        transaction.on_commit(send)


def ensure_quality(demo, review, turns, read) -> list:
    """The demo's quality issues, computed once (the raw capture never changes) and cached on its review."""
    from ...quality import quality_issues

    if review.quality is None:
        review.quality = quality_issues(turns, read)
        DemoReview.objects.filter(pk=review.pk).update(quality=review.quality)
    return review.quality


def do_prepare_review(demo, read=None) -> None:
    """The worker's part (``workers.realign_demo``): screenshot suggestions and the cached quality checks, so the
    list shows issue counts before anyone opens the demo."""
    from workers.dataset import storage_blobs
    from workers.realign import store_suggestions

    read = read or storage_blobs().read
    store_suggestions(demo, read)
    turns = list(Turn.objects.filter(demonstration=demo).order_by("timestamp", "seq"))
    ensure_quality(demo, review_of(demo), turns, read)
