"""Background work for review: thumbnails and screenshot suggestions from the worker, cached quality checks."""

from django.core.cache import cache
from django.core.files.storage import default_storage
from django.db import transaction

from ...models import DemoReview, Turn, TurnCuration
from ...store.blobstore import is_s3
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


def enqueue_after_recording(demo) -> None:
    """When a recording finishes, the worker makes its thumbnails and computes its quality checks and screenshot
    suggestions, so the list shows issue counts and the page its thumbnails before anyone opens the demo; on S3 it
    also packs the demo's blobs for exports."""
    shas = Turn.objects.filter(demonstration=demo, screenshot__isnull=False).values_list("screenshot_id", flat=True)
    if shas := sorted(set(shas)):
        queue.enqueue(queue.THUMBNAILS, shas)
    queue.enqueue(queue.REALIGN, demo.pk)
    if is_s3(default_storage):  # exports read the demo's blobs with one GET (workers/exports/packs.py)
        queue.enqueue(queue.PACK_BLOBS, demo.pk)


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
