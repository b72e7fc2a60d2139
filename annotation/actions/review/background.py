"""Background work for review: thumbnails and screenshot suggestions from the worker, cached quality checks (what a
finished recording enqueues is in `actions/recordings/background.py`)."""

from django.core.cache import cache
from django.db import transaction

from ...lib.quality import quality_issues, rechecked
from ...models import DemoReview, Turn, TurnCuration
from ...store.blobstore import read_blob
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
    """The demo's quality issues, computed once and cached on its review (the raw capture never changes; a re-picked
    target changes them through ``recheck_targets``)."""
    if review.quality is None:
        elements = curated_elements(demo)
        issues = quality_issues(turns, read, elements)
        with transaction.atomic():  # a retarget committed while the blobs were read found nothing to re-check
            locked = DemoReview.objects.select_for_update().filter(pk=review.pk).values_list("quality", flat=True)
            cached = locked.first()
            if cached is not None:  # another view or the worker wrote them first, on the targets of its time
                issues = cached
            elif set(Turn.objects.filter(demonstration=demo).values_list("pk", flat=True)) != {t.pk for t in turns}:
                return issues  # late turns came meanwhile (``forget_review_caches``): computed again, not cached
            else:
                now = curated_elements(demo)
                if changed := {pk for pk in elements.keys() | now.keys() if elements.get(pk) != now.get(pk)}:
                    issues = rechecked(issues, turns, read, now, changed)
                DemoReview.objects.filter(pk=review.pk).update(quality=issues)
        review.quality = issues
    return review.quality


def curated_elements(demo) -> dict:
    """``{turn id: element}`` of the demo's turns whose target a reviewer re-picked."""
    curated = TurnCuration.objects.filter(demonstration=demo, element__isnull=False)
    return dict(curated.values_list("turn_id", "element"))


def recheck_targets(demo, turn_ids: set) -> None:
    """The cached quality issues after the targets of ``turn_ids`` changed (a retarget, its undo or redo; the
    caller holds the review row's lock): their checks run again on the curated element, reading only their page
    and bboxes. Nothing to do while the issues are not computed yet (they will be, on the curated targets)."""
    cached = DemoReview.objects.filter(pk=demo.pk).values_list("quality", flat=True).first()
    if cached is None:
        return
    turns = list(Turn.objects.filter(demonstration=demo).order_by("timestamp", "seq"))
    issues = rechecked(cached, turns, read_blob, curated_elements(demo), turn_ids)
    DemoReview.objects.filter(pk=demo.pk).update(quality=issues)


def do_store_suggestions(demo, suggested) -> None:
    """The worker's screenshot suggestions for the demo's turns (``[(turn, sha256, how)]``, a turn without one left
    out), and the demo marked realigned, so review stops asking for them."""
    with transaction.atomic():
        for turn, sha, how in suggested:
            TurnCuration.objects.update_or_create(
                turn=turn, defaults={"demonstration": demo, "suggested_screenshot": sha, "suggested_from": how}
            )
        DemoReview.objects.update_or_create(demonstration=demo, defaults={"realigned": True})
