"""Chunks of the tab video: each an uploaded video blob at an index, idempotent on retry."""

from django.db import transaction

from ...lib import schema
from ...models import Blob, Demonstration, Project, VideoChunk
from ..errors import Conflict, ValidationFailed
from .late import check_late_video_chunk, forget_review_caches

VIDEO_TYPES = ("video/webm", "video/mp4")


def check_video_chunk(index, sha256, started_at, project: Project) -> Blob:
    errors = []
    if not schema.is_count(index):
        errors.append(schema.FieldError("index", f"required; expected an integer from 0 to {schema.MAX_COUNT}"))
    if not schema.is_number(started_at) or started_at < 0:
        errors.append(schema.FieldError("started_at", "required; expected seconds on the recording clock (>= 0)"))
    found = schema.is_sha256(sha256)
    blob = Blob.objects.filter(sha256=sha256, rights__project=project).first() if found else None
    if blob is None:
        errors.append(
            schema.FieldError(
                "blob",
                "expected the sha256 of a blob uploaded to this project; upload it with PUT /api/blobs/"
                f"{sha256 if found else '<sha256>'}?project={project.name} first",
            )
        )
    elif blob.media_type not in VIDEO_TYPES:
        errors.append(schema.FieldError("blob", f"blob is {blob.media_type}; expected one of {', '.join(VIDEO_TYPES)}"))
    if errors:
        raise ValidationFailed("invalid video chunk", errors)
    return blob


def do_add_video_chunk(demo: Demonstration, index, sha256, started_at) -> tuple[VideoChunk, bool]:
    """Attach a chunk of the tab video. Re-sending the same chunk changes nothing; another blob at a stored index
    is a conflict. A finished recording takes a new chunk only as it takes late turns (``check_late_video_chunk``)."""
    blob = check_video_chunk(index, sha256, started_at, demo.project)
    with transaction.atomic():
        demo = Demonstration.objects.select_for_update().get(pk=demo.pk)
        existing = demo.video_chunks.filter(index=index).first()
        if existing is not None:
            if existing.blob_id != blob.sha256:
                raise Conflict(
                    f"video chunk {index} was stored with another blob",
                    [{"field": "index", "message": "already stored with different content"}],
                )
            return existing, False
        if not demo.is_recording:
            check_late_video_chunk(demo, float(started_at))
            forget_review_caches(demo)
        return VideoChunk.objects.create(demonstration=demo, index=index, blob=blob, started_at=started_at), True
