"""Every state change of the domain, as ``check_*`` (validate, raise) and ``do_*`` (change data) functions.

Views, API viewsets, consumers, tasks and management commands are thin callers of these, so the recorder's
HTTP ingest and the synthetic corpus go through exactly the same validation and storage code.

One module or package per area: ``recordings`` (recordings, turns, video, blobs), ``live`` (the live session),
``review`` (curation, undo, workflow, the review queue), ``mind2web`` (websites, proposals, demonstration tasks),
``forms`` (the queue of batches, tasks and assignments; form batches), ``exports`` (export and evaluation jobs,
splits), ``agents`` (agent runs), ``stats`` (statistics, activity, pay), ``manage`` (projects, members, tokens,
sign-in). Plumbing: ``errors`` (what the domain refuses, with its HTTP status), ``events`` (what goes to a live session
after commit), ``queue`` (background work enqueued by task name). The most used names are re-exported here.
"""

from .agents import check_agent_run, do_create_agent_run
from .errors import (
    ActionError,
    Conflict,
    Forbidden,
    Gone,
    MalformedJSON,
    NotFound,
    StorageUnavailable,
    TooLarge,
    TooManyRequests,
    UnsupportedMediaType,
    ValidationFailed,
    invalid,
    parse_json,
)
from .exports.jobs import (
    EXPORT_ROLES,
    STATUS_CHOICES,
    check_choice,
    check_evaluation_split_filter,
    check_job_cancellable,
    check_job_not_other_role,
    check_project_for_export,
    do_cancel_job,
    do_create_evaluation,
    do_create_export,
    may_cancel,
    reap_stale_jobs,
)
from .forms.splits import split_names, split_tasks
from .recordings import (
    BLOB_MEDIA_TYPES,
    BUNDLE_MEDIA_TYPE,
    IngestResult,
    check_blob_readable,
    check_blob_stored,
    check_demo_for_bundle,
    check_demo_readable,
    check_demo_writable,
    check_missing_blobs,
    check_project_for_blobs,
    check_project_for_recording,
    check_turn_batch,
    do_add_video_chunk,
    do_finish_recording,
    do_ingest_bundle,
    do_ingest_turns,
    do_start_recording,
    do_store_blob,
    do_store_blob_bytes,
)
