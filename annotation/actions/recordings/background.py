"""The worker's part after a recording ends: thumbnails, quality checks and screenshot suggestions (review reads
them), and on S3 the demo's blob pack (exports read it). Enqueued by task name."""

from django.core.files.storage import default_storage

from ...models import Turn
from ...store.blobstore import is_s3
from .. import queue


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
