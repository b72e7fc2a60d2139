"""Recording ingest: projects to record in, recordings, turn batches, video and blobs.

Views, API viewsets, consumers, tasks and management commands are thin callers of these, so the recorder's
HTTP ingest and the synthetic corpus go through exactly the same validation and storage code.

Modules: ``access`` (who may record, read and upload), ``recordings`` (start, finish), ``turns`` (batches),
``late`` (captures uploaded after the end), ``video`` (tab video chunks), ``blobs`` and ``bundle`` (blobs and
turns in one request). Callers import from here.
"""

from .access import (
    blob_used_by,
    check_blob_readable,
    check_demo_for_bundle,
    check_demo_readable,
    check_demo_writable,
    check_project_for_blobs,
    check_project_for_recording,
    visible_demo,
)
from .blobs import (
    BLOB_MEDIA_TYPES,
    CHUNK,
    MAX_BLOB_QUERY,
    PILLOW_FORMATS,
    check_blob_content,
    check_blob_request,
    check_blob_stored,
    check_image,
    check_missing_blobs,
    do_store_blob,
    do_store_blob_bytes,
    normalise_media_type,
    spool_and_hash,
)
from .bundle import BUNDLE_MEDIA_TYPE, do_ingest_bundle
from .late import (
    LATE_TURN_TOLERANCE_SECONDS,
    check_late_turns,
    check_late_video_chunk,
    check_takes_late_capture,
    forget_review_caches,
    recording_end_seconds,
)
from .lifecycle import RECORDING_FIELDS, do_finish_recording, do_start_recording, unused_demo_name
from .turns import (
    IngestResult,
    batch_result,
    check_batch_shape,
    check_blob_references,
    check_duplicate_ids,
    check_no_conflicts,
    check_turn_batch,
    content_hash,
    do_ingest_turns,
    turn_row,
)
from .video import VIDEO_TYPES, check_video_chunk, do_add_video_chunk

__all__ = [
    # access
    "blob_used_by",
    "check_blob_readable",
    "check_project_for_blobs",
    "check_demo_readable",
    "check_demo_for_bundle",
    "check_demo_writable",
    "check_project_for_recording",
    "visible_demo",
    # bundle
    "BUNDLE_MEDIA_TYPE",
    "do_ingest_bundle",
    # blobs
    "BLOB_MEDIA_TYPES",
    "CHUNK",
    "MAX_BLOB_QUERY",
    "PILLOW_FORMATS",
    "check_blob_content",
    "check_blob_request",
    "check_blob_stored",
    "check_image",
    "check_missing_blobs",
    "do_store_blob",
    "do_store_blob_bytes",
    "normalise_media_type",
    "spool_and_hash",
    # late
    "LATE_TURN_TOLERANCE_SECONDS",
    "check_late_turns",
    "check_late_video_chunk",
    "check_takes_late_capture",
    "forget_review_caches",
    "recording_end_seconds",
    # recordings
    "RECORDING_FIELDS",
    "do_finish_recording",
    "do_start_recording",
    "unused_demo_name",
    # turns
    "IngestResult",
    "batch_result",
    "check_batch_shape",
    "check_blob_references",
    "check_duplicate_ids",
    "check_no_conflicts",
    "check_turn_batch",
    "content_hash",
    "do_ingest_turns",
    "turn_row",
    # video
    "VIDEO_TYPES",
    "check_video_chunk",
    "do_add_video_chunk",
]
