"""Recording ingest: projects to record in, recordings, turn batches and blobs.

Views, API viewsets, consumers, tasks and management commands are thin callers of these, so the recorder's
HTTP ingest and the synthetic corpus go through exactly the same validation and storage code.
"""

import hashlib
import io
import json
import tempfile
from dataclasses import dataclass, field

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import IntegrityError, connection, transaction
from django.db.models import Max, Q
from django.utils import timezone
from PIL import Image, UnidentifiedImageError

from .. import schema
from ..models import (
    RECORDING_ROLES,
    Blob,
    Demonstration,
    DemoReview,
    DemoStatus,
    Project,
    Turn,
    TurnType,
    VideoChunk,
    new_demo_name,
    sha256_path,
)
from .errors import Conflict, Forbidden, NotFound, TooLarge, UnsupportedMediaType, ValidationFailed
from .events import on_commit_send, on_commit_turns

# --- Access ---------------------------------------------------------------------------------------------


def check_project_for_recording(user, project_name: str) -> Project:
    """The project ``user`` may record in; 404 when they are not a member, 403 when their role cannot record."""
    project = Project.objects.for_user(user).filter(name=project_name).first()
    if project is None:
        raise NotFound(f"no project {project_name!r} among yours", [{"field": "project", "message": "not found"}])
    if not project.has_role(user, RECORDING_ROLES):
        raise Forbidden(f"your role in {project_name!r} cannot record demonstrations (needs annotator or admin)")
    return project


def visible_demo(user, name: str) -> Demonstration:
    demo = Demonstration.objects.visible_to(user).select_related("project").filter(name=name).first()
    if demo is None:
        raise NotFound(f"no demonstration {name!r} among your projects")
    return demo


def check_demo_readable(user, name: str) -> Demonstration:
    """A demonstration of one of ``user``'s projects whose turns they may read; others are 404 so their existence
    does not leak. The instructor of a no-vision recording may not read it while it runs (the live session)."""
    demo = visible_demo(user, name)
    if demo.hides_screen_from(user):
        raise NotFound(f"demonstration {name!r} is not readable by its no-vision instructor while it records")
    return demo


def check_demo_writable(user, name: str) -> Demonstration:
    """A demonstration ``user`` may add turns to: its navigator's, instructor's or a project admin's."""
    demo = visible_demo(user, name)
    if not demo.can_write(user):
        raise Forbidden(f"demonstration {name!r} belongs to another navigator")
    return demo


def check_blob_readable(user, sha256: str) -> Blob:
    """A blob that a demonstration of one of ``user``'s projects uses (screenshot, page, bboxes, frame, video)."""
    blob = Blob.objects.filter(sha256=sha256).first() if schema.is_sha256(sha256) else None
    if blob is None or not blob_used_by(Demonstration.objects.screen_visible_to(user), blob):
        raise NotFound(f"no blob {sha256} in your projects")
    return blob


def blob_used_by(demos, blob: Blob) -> bool:
    turns = Turn.objects.filter(demonstration__in=demos)
    if turns.filter(Q(screenshot=blob) | Q(page=blob) | Q(bboxes=blob)).exists():
        return True
    if VideoChunk.objects.filter(demonstration__in=demos, blob=blob).exists():
        return True
    if connection.features.supports_json_field_contains:
        return turns.filter(frames__contains=[{"screenshot": blob.sha256}]).exists()
    # SQLite cannot search inside JSON lists: look through the turns that have frames.
    frame_lists = turns.exclude(frames=[]).values_list("frames", flat=True).iterator()
    return any(frame.get("screenshot") == blob.sha256 for frames in frame_lists for frame in frames)


def check_can_upload_blobs(user) -> None:
    """Blobs are shared by content; only people who may record anywhere can add them."""
    if not Project.objects.for_user(user, RECORDING_ROLES).exists():
        raise Forbidden("uploading blobs needs the annotator or admin role in a project")


# --- Recordings -----------------------------------------------------------------------------------------

RECORDING_FIELDS = (
    "mode",
    "task_description",
    "websites",
    "category",
    "subcategory",
    "region",
    "instructor_sees_screen",
    "recording_start",
    "timezone_offset_minutes",
    "user_agent",
    "recorder_version",
    "instructor",
)


def unused_demo_name() -> str:
    while True:
        name = new_demo_name()
        if not Demonstration.objects.filter(name=name).exists():
            return name


def do_start_recording(user, project: Project, client_id: str, **fields) -> tuple[Demonstration, bool]:
    """Start a demonstration, or return the one this ``client_id`` already started (a retried request).

    Returns ``(demonstration, created)``. A ``client_id`` used by another navigator is a conflict.
    """
    existing = Demonstration.objects.filter(client_id=client_id).first()
    if existing is not None:
        if existing.navigator_id == user.pk and existing.project_id != project.pk:
            raise Conflict(
                f"client_id already started a recording in project {existing.project.name!r}",
                [{"field": "project", "message": f"differs from the recording's project {existing.project.name!r}"}],
            )
        if existing.navigator_id != user.pk:
            raise Conflict(
                "client_id already used by another recording", [{"field": "client_id", "message": "already used"}]
            )
        return existing, False
    values = {key: fields[key] for key in RECORDING_FIELDS if fields.get(key) is not None}
    values.setdefault("recording_start", timezone.now())
    try:
        with transaction.atomic():
            demo = Demonstration.objects.create(
                project=project, navigator=user, client_id=client_id, name=unused_demo_name(), **values
            )
    except IntegrityError:  # the same client_id raced in from a concurrent retry
        return Demonstration.objects.get(client_id=client_id, navigator=user), False
    return demo, True


def do_finish_recording(demo: Demonstration, recording_end=None) -> Demonstration:
    """Mark a recording as recorded. Finishing again changes nothing (the recorder may retry)."""
    with transaction.atomic():
        demo = Demonstration.objects.select_for_update().get(pk=demo.pk)
        if demo.status == DemoStatus.RECORDING:
            demo.status = DemoStatus.RECORDED
            demo.recording_end = recording_end or timezone.now()
            demo.save(update_fields=["status", "recording_end", "updated_at"])
            on_commit_send(demo.name, {"type": "session.ended", "status": demo.status})
    return demo


# --- Turns ----------------------------------------------------------------------------------------------


@dataclass
class IngestResult:
    """What a batch did: turns newly stored, turns already stored (retries), and each turn's seq."""

    created: int = 0
    duplicates: int = 0
    turns: list = field(default_factory=list)

    def as_dict(self):
        return {"created": self.created, "duplicates": self.duplicates, "turns": self.turns}


def content_hash(turn: dict) -> str:
    """A stable hash of a submitted turn, to tell a retry (same content) from a conflicting re-use of its id."""
    canonical = json.dumps(turn, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def check_batch_shape(turns) -> list[schema.FieldError]:
    if not isinstance(turns, list) or not turns:
        return [schema.FieldError("turns", "required; expected a non-empty list of turns")]
    limit = settings.INGEST_MAX_BATCH_TURNS
    if len(turns) > limit:
        return [schema.FieldError("turns", f"{len(turns)} turns in one batch; at most {limit} allowed")]
    return []


def check_duplicate_ids(turns: list) -> list[schema.FieldError]:
    seen, errors = set(), []
    for index, turn in enumerate(turns):
        client_id = turn.get("client_id")
        if client_id in seen:
            errors.append(schema.FieldError(f"turns[{index}].client_id", f"{client_id!r} appears twice in the batch"))
        seen.add(client_id)
    return errors


def check_blob_references(turns: list) -> list[schema.FieldError]:
    """Every referenced blob must be uploaded already, with a media type that fits its role."""
    wanted = {sha for turn in turns for sha in schema.referenced_blobs(turn).values()}
    media = dict(Blob.objects.filter(sha256__in=wanted).values_list("sha256", "media_type"))
    errors = []
    for index, turn in enumerate(turns):
        for name, sha in schema.referenced_blobs(turn).items():
            where, expected = f"turns[{index}].{name}", schema.expected_media_type(name)
            if sha not in media:
                errors.append(schema.FieldError(where, f"blob {sha} has not been uploaded; PUT /api/blobs/{sha} first"))
            elif not media[sha].startswith(expected):
                errors.append(schema.FieldError(where, f"blob {sha} is {media[sha]}; expected {expected}"))
    return errors


def check_turn_batch(turns) -> list:
    """Validate a whole batch (shape, every turn, ids, blobs); raise ``ValidationFailed`` listing every problem."""
    errors = check_batch_shape(turns)
    if not errors:
        for index, turn in enumerate(turns):
            errors += schema.validate_turn(turn, f"turns[{index}]")
    if not errors:
        errors = check_duplicate_ids(turns) + check_blob_references(turns)
    if errors:
        raise ValidationFailed(f"{len(errors)} problem(s) in the batch; nothing was stored", errors)
    return turns


def turn_row(demo: Demonstration, turn: dict, seq: int, digest: str) -> Turn:
    """The database row of one validated turn; url, tab and viewport are copied out of the arguments."""
    row = Turn(
        demonstration=demo,
        client_id=turn["client_id"],
        seq=seq,
        type=turn["type"],
        timestamp=float(turn["timestamp"]),
        content_sha256=digest,
    )
    if turn["type"] == TurnType.CHAT:
        row.speaker, row.utterance = turn["speaker"], turn["utterance"]
        return row
    args = turn["arguments"]
    metadata, properties = args["metadata"], args.get("properties") or {}
    row.intent, row.arguments = turn["intent"], args
    row.url = properties.get("url") if turn["intent"] == "load" else metadata.get("url", "")
    row.tab_id = metadata.get("tabId")
    row.viewport_width, row.viewport_height = metadata.get("viewportWidth"), metadata.get("viewportHeight")
    row.screenshot_id, row.page_id, row.bboxes_id = turn.get("screenshot"), turn.get("page"), turn.get("bboxes")
    row.frames = turn.get("frames") or []
    return row


def do_ingest_turns(demo: Demonstration, turns, late: bool = True) -> IngestResult:
    """Store a batch of turns atomically: all new turns or none. Turns already stored (a retry) are skipped.

    A ``client_id`` that comes back with different content is a conflict (409) and nothing is stored.
    Once the recording is finished, new turns are accepted only when ``late`` and ``check_late_turns`` allows
    them (captured before the end, uploaded after it). The new turns go to the demonstration's live session after
    commit (one group message per batch).
    """
    check_turn_batch(turns)
    digests = [content_hash(turn) for turn in turns]
    with transaction.atomic():
        demo = Demonstration.objects.select_for_update().get(pk=demo.pk)
        stored = dict(
            demo.turns.filter(client_id__in=[t["client_id"] for t in turns]).values_list("client_id", "content_sha256")
        )
        check_no_conflicts(turns, digests, stored)
        fresh = [(turn, digest) for turn, digest in zip(turns, digests, strict=True) if turn["client_id"] not in stored]
        if fresh and not demo.is_recording:
            if not late:
                raise Conflict(f"recording {demo.name} is {demo.status}; it takes no new turns")
            check_late_turns(demo, turns, stored)
            forget_review_caches(demo)
        top = demo.turns.aggregate(top=Max("seq"))["top"]
        next_seq = 0 if top is None else top + 1
        rows = [turn_row(demo, turn, next_seq + i, digest) for i, (turn, digest) in enumerate(fresh)]
        Turn.objects.bulk_create(rows)
        on_commit_turns(demo.name, rows)
    return batch_result(turns, rows, stored, demo)


LATE_TURN_TOLERANCE_SECONDS = 2.0  # a capture in flight when the recording was ended


def recording_end_seconds(demo: Demonstration) -> float:
    """The recording's end on the recording clock (seconds since ``recording_start``)."""
    return (demo.recording_end - demo.recording_start).total_seconds()


def check_late_turns(demo: Demonstration, turns: list, stored: dict) -> None:
    """New turns for a finished recording: the recorder's captures from before the end that were not uploaded yet
    (the instructor may end the demonstration while the navigator's recorder still has a queue). Accepted while the
    demonstration is ``recorded`` and nobody has edited it in review; each must be timestamped no later than the end
    (plus ``LATE_TURN_TOLERANCE_SECONDS``). Otherwise a conflict naming each late turn, and nothing is stored."""
    end = check_takes_late_capture(demo, "turns")
    errors = [
        schema.FieldError(f"turns[{i}].timestamp", f"{turn['timestamp']} s is after the recording's end at {end:.3f} s")
        for i, turn in enumerate(turns)
        if turn["client_id"] not in stored and float(turn["timestamp"]) > end + LATE_TURN_TOLERANCE_SECONDS
    ]
    if errors:
        raise Conflict(
            f"recording {demo.name} ended at {end:.3f} s on the recording clock; turns after its end are refused "
            "and nothing of this batch was stored",
            errors,
        )


def check_takes_late_capture(demo: Demonstration, what: str) -> float:
    """A finished recording takes late captures (turns, video) only while it is ``recorded`` and unedited in
    review; returns its end on the recording clock."""
    refused = f"recording {demo.name} is {demo.status}; it takes no new {what}"
    if demo.status != DemoStatus.RECORDED or demo.recording_end is None:
        raise Conflict(refused)
    if DemoReview.objects.filter(demonstration=demo, revision__gt=0).exists():
        raise Conflict(f"{refused} (it has been edited in review)")
    return recording_end_seconds(demo)


def check_late_video_chunk(demo: Demonstration, started_at: float) -> None:
    """A video chunk for a finished recording: as for turns, one that started before the end is still taken."""
    end = check_takes_late_capture(demo, "video")
    if started_at > end + LATE_TURN_TOLERANCE_SECONDS:
        raise Conflict(
            f"recording {demo.name} ended at {end:.3f} s on the recording clock; video after its end is refused",
            [{"field": "started_at", "message": f"{started_at} s is after the recording's end at {end:.3f} s"}],
        )


def forget_review_caches(demo: Demonstration) -> None:
    """Late turns or video change the raw capture: screenshot suggestions and quality checks are computed again."""
    DemoReview.objects.filter(demonstration=demo).update(quality=None, realigned=False)


def check_no_conflicts(turns: list, digests: list, stored: dict) -> None:
    errors = [
        schema.FieldError(f"turns[{i}].client_id", f"{t['client_id']!r} was stored before with different content")
        for i, (t, digest) in enumerate(zip(turns, digests, strict=True))
        if t["client_id"] in stored and stored[t["client_id"]] != digest
    ]
    if errors:
        raise Conflict("turn ids re-used with different content; nothing was stored", errors)


def batch_result(turns: list, rows: list, stored: dict, demo: Demonstration) -> IngestResult:
    seqs = {row.client_id: row.seq for row in rows}
    if stored:
        seqs.update(demo.turns.filter(client_id__in=list(stored)).values_list("client_id", "seq"))
    return IngestResult(
        created=len(rows),
        duplicates=len(turns) - len(rows),
        turns=[{"client_id": t["client_id"], "seq": seqs[t["client_id"]]} for t in turns],
    )


# --- Video --------------------------------------------------------------------------------------------------

VIDEO_TYPES = ("video/webm", "video/mp4")


def check_video_chunk(index, sha256, started_at) -> Blob:
    errors = []
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        errors.append(schema.FieldError("index", "required; expected an integer >= 0"))
    if not schema.is_number(started_at) or started_at < 0:
        errors.append(schema.FieldError("started_at", "required; expected seconds on the recording clock (>= 0)"))
    blob = Blob.objects.filter(sha256=sha256).first() if schema.is_sha256(sha256) else None
    if blob is None:
        errors.append(
            schema.FieldError(
                "blob",
                f"expected the sha256 of an uploaded blob; upload it with PUT /api/blobs/"
                f"{sha256 if schema.is_sha256(sha256) else '<sha256>'} first",
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
    blob = check_video_chunk(index, sha256, started_at)
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


# --- Blobs ----------------------------------------------------------------------------------------------

BLOB_MEDIA_TYPES = (
    "image/png",
    "image/jpeg",
    "image/webp",
    "text/html",
    "application/json",
    "video/webm",
    "video/mp4",
)
PILLOW_FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/webp": "WEBP"}
CHUNK = 1024 * 1024


def normalise_media_type(content_type: str) -> str:
    """``"text/html; charset=utf-8"`` → ``"text/html"``."""
    return (content_type or "").split(";")[0].strip().lower()


def check_blob_request(sha256: str, media_type: str, content_length: int | None) -> None:
    if not schema.is_sha256(sha256):
        raise ValidationFailed(
            "the blob address is not a sha256", [{"field": "sha256", "message": "expected 64 lowercase hex digits"}]
        )
    if media_type not in BLOB_MEDIA_TYPES:
        raise UnsupportedMediaType(
            f"Content-Type {media_type or '(none)'!r} is not accepted for blobs; allowed: {', '.join(BLOB_MEDIA_TYPES)}"
        )
    limit = settings.INGEST_MAX_BLOB_BYTES
    if content_length is not None and content_length > limit:
        raise TooLarge(f"blob of {content_length} bytes exceeds the limit of {limit} bytes (INGEST_MAX_BLOB_BYTES)")


def spool_and_hash(stream) -> tuple[tempfile.SpooledTemporaryFile, str, int]:
    """Copy the body to a temporary file while hashing it, stopping as soon as it passes the size limit."""
    limit, digest, size = settings.INGEST_MAX_BLOB_BYTES, hashlib.sha256(), 0
    spool = tempfile.SpooledTemporaryFile(max_size=8 * CHUNK)  # noqa: SIM115 (returned to the caller, who closes it)
    while chunk := stream.read(CHUNK):
        size += len(chunk)
        if size > limit:
            spool.close()
            raise TooLarge(f"blob exceeds the limit of {limit} bytes (INGEST_MAX_BLOB_BYTES)")
        digest.update(chunk)
        spool.write(chunk)
    spool.seek(0)
    return spool, digest.hexdigest(), size


def check_blob_content(spool, media_type: str) -> None:
    """The bytes must be what the media type says: a decodable image, parseable JSON, UTF-8 HTML."""
    if media_type in PILLOW_FORMATS:
        check_image(spool, PILLOW_FORMATS[media_type])
    elif media_type == "application/json":
        try:
            # Not json.load(TextIOWrapper(spool)): the wrapper closes the spool when it is garbage-collected.
            json.loads(spool.read().decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            raise ValidationFailed(f"body is not valid JSON: {error}") from None
    elif media_type == "text/html":
        try:
            spool.read().decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValidationFailed(f"HTML must be UTF-8: {error}") from None
    spool.seek(0)


def check_image(spool, expected_format: str) -> None:
    try:
        with Image.open(spool) as image:
            found = image.format
            image.load()  # decodes every pixel: catches truncated and corrupt data that verify() misses
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as error:
        raise ValidationFailed(f"body is not a decodable image: {error}") from None
    if found != expected_format:
        raise ValidationFailed(f"body is a {found} image but Content-Type says {expected_format}")


def do_store_blob(sha256: str, content_type: str, stream, content_length: int | None = None) -> tuple[Blob, bool]:
    """Store a blob under its sha256 after checking hash, size and content. Returns ``(blob, created)``.

    Storing a blob that exists changes nothing. The file is written before its row, so a row never points
    at a missing file; an interrupted upload leaves at most an unreferenced file that the next upload rewrites.
    """
    media_type = normalise_media_type(content_type)
    check_blob_request(sha256, media_type, content_length)
    existing = Blob.objects.filter(sha256=sha256).first()
    if existing is not None:
        return existing, False
    spool, digest, size = spool_and_hash(stream)
    with spool:
        if size == 0:
            raise ValidationFailed("empty body; a blob needs content", [{"field": "body", "message": "empty"}])
        if digest != sha256:
            raise ValidationFailed(
                f"body hashes to {digest}, not {sha256}", [{"field": "sha256", "message": "does not match body"}]
            )
        check_blob_content(spool, media_type)
        name = default_storage.save(sha256_path(sha256), File(spool))
    try:
        with transaction.atomic():
            return Blob.objects.create(sha256=sha256, size=size, media_type=media_type, file=name), True
    except IntegrityError:  # a concurrent upload of the same bytes won the race
        return Blob.objects.get(sha256=sha256), False


MAX_BLOB_QUERY = 1000


def check_missing_blobs(shas) -> list[str]:
    """Which of these sha256s are not stored yet (in the order asked), so a client uploads only those."""
    if not isinstance(shas, list) or len(shas) > MAX_BLOB_QUERY:
        raise ValidationFailed(
            f"expected a list of at most {MAX_BLOB_QUERY} sha256s",
            [{"field": "sha256", "message": f"a list of at most {MAX_BLOB_QUERY} sha256s"}],
        )
    bad = [
        schema.FieldError(f"sha256[{i}]", "expected 64 lowercase hex digits")
        for i, sha in enumerate(shas)
        if not schema.is_sha256(sha)
    ]
    if bad:
        raise ValidationFailed(f"{len(bad)} malformed sha256(s)", bad)
    stored = set(Blob.objects.filter(sha256__in=shas).values_list("sha256", flat=True))
    return list(dict.fromkeys(sha for sha in shas if sha not in stored))


def do_store_blob_bytes(data: bytes, media_type: str) -> tuple[Blob, bool]:
    """Store in-memory bytes as a blob (used by the synthetic corpus and tests)."""
    sha = hashlib.sha256(data).hexdigest()
    return do_store_blob(sha, media_type, io.BytesIO(data), len(data))
