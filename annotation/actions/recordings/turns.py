"""Turn batches: validated as a whole, stored atomically, retries recognised by content, sent to the live session."""

import hashlib
import json
import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction

from ...lib import redact, schema
from ...models import Demonstration, Project, Turn, TurnType
from ...store import hotsql
from ..errors import Conflict, ValidationFailed
from ..events import on_commit_turns
from .late import check_late_turns, forget_review_caches

log = logging.getLogger(__name__)

# What a recorder puts for a private field's value (recorder_extension/lib/privacy.js maskValue): the mask when
# something was entered, "" when nothing was.
MASK = "********"
# The arguments that carry what an element was given or held: typed text, a chosen value, pasted or copied text.
VALUE_ARGUMENTS = ("text", "value", "pasted", "selected")


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


def check_blob_references(turns: list, project: Project, uploaded: dict | None = None) -> list[schema.FieldError]:
    """Every referenced blob must be uploaded to the recording's project already (another project's blob is as
    unknown as one never uploaded) or come in the same batch (``uploaded``: sha256 → media type), with a media type
    that fits its role."""
    media = dict(uploaded or {})
    wanted = {sha for turn in turns for sha in schema.referenced_blobs(turn).values()} - media.keys()
    if wanted:  # a batch that brings every blob it uses needs no query
        media.update(hotsql.project_media_types(project.pk, list(wanted)))
    errors = []
    for index, turn in enumerate(turns):
        for name, sha in schema.referenced_blobs(turn).items():
            where, expected = f"turns[{index}].{name}", schema.expected_media_type(name)
            if sha not in media:
                upload = f"PUT /api/blobs/{sha}?project={project.name} first"
                errors.append(schema.FieldError(where, f"blob {sha} has not been uploaded to this project; {upload}"))
            elif not media[sha].startswith(expected):
                errors.append(schema.FieldError(where, f"blob {sha} is {media[sha]}; expected {expected}"))
    return errors


def mask_password_values(demo: Demonstration, turns: list) -> None:
    """Defence in depth behind the recorder's masking (docs/recorder-privacy.md): a turn on an element that is plainly
    a password input (its serialized attributes say ``type=password``) keeps no clear value: a ``text``, ``value``,
    ``pasted`` or ``selected`` other than the mask or "" becomes the mask, in place, before the turn is hashed or
    stored. A recorder that sent one is logged (never the value). A few dict reads per turn: ingest's hot path."""
    for turn in turns:
        args = turn.get("arguments")
        element = args.get("element") if isinstance(args, dict) else None
        attributes = element.get("attributes") if isinstance(element, dict) else None
        kind = attributes.get("type") if isinstance(attributes, dict) else None
        if not isinstance(kind, str) or kind.strip().lower() != "password":
            continue
        for name in VALUE_ARGUMENTS:
            if args.get(name) not in (None, "", MASK):
                args[name] = MASK
                log.warning(
                    "recording %s: turn %r on a password field came with a clear %s; masked",
                    demo.name,
                    turn.get("client_id"),
                    name,
                )


def drop_unasked_traffic(demo: Demonstration, turns: list) -> None:
    """A browser turn's ``har`` is kept in step mode (``properties.stepOp``) or while the recording's project keeps
    traffic (``record_traffic``, read at each upload: turned off mid-recording, later turns keep none); else it is
    dropped, in place, before the turn is hashed (a retry hashes the same). Its blob is left unreferenced."""
    unasked = []
    for turn in turns:
        args = turn.get("arguments") if turn.get("har") else None
        properties = args.get("properties") if isinstance(args, dict) else None
        if turn.get("har") and not (isinstance(properties, dict) and properties.get("stepOp")):
            unasked.append(turn)
    if unasked and not Project.objects.filter(pk=demo.project_id, record_traffic=True).exists():
        for turn in unasked:
            turn.pop("har")
        log.info("recording %s: %d turn(s) sent traffic its project does not keep; dropped", demo.name, len(unasked))


def mask_secret_parameters(demo: Demonstration, turns: list) -> None:
    """Defence in depth behind the recorder's redaction (docs/recorder-privacy.md): in every browser turn's arguments
    (page, frame and load URLs, the element's attributes and HTML, any text), the values of URL parameters whose names
    mark secrets (``?token=…``, ``#access_token=…``, ``;jsessionid=…``) and user-info passwords become the mask, in
    place, before the turn is hashed or stored (``annotation/lib/redact.py``), whatever client sent them. A recorder
    that sent one is logged with the fields' paths (never the values)."""
    for turn in turns:
        args = turn.get("arguments")
        if turn.get("type") != TurnType.BROWSER or not isinstance(args, dict):
            continue
        if masked := redact.mask_arguments(args):
            log.warning(
                "recording %s: turn %r came with secret URL parameters in %s; masked",
                demo.name,
                turn.get("client_id"),
                ", ".join(masked),
            )


def check_turn_batch(turns, project: Project, uploaded: dict | None = None) -> list:
    """Validate a whole batch for a recording of ``project`` (shape, every turn, ids, blobs, counting those
    ``uploaded`` with it); raise ``ValidationFailed`` listing every problem."""
    errors = check_batch_shape(turns)
    if not errors:
        for index, turn in enumerate(turns):
            errors += schema.validate_turn(turn, f"turns[{index}]")
    if not errors:
        errors = check_duplicate_ids(turns) + check_blob_references(turns, project, uploaded)
    if errors:
        raise ValidationFailed(f"{len(errors)} problem(s) in the turns sent; nothing was stored", errors)
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
    row.har_id, row.dom_snapshot_id = turn.get("har"), turn.get("dom_snapshot")
    row.frames = turn.get("frames") or []
    row.label = turn.get("label") or ""
    return row


def do_ingest_turns(
    demo: Demonstration, turns, late: bool = True, uploaded=None, before_store=None, checked: bool = False
) -> IngestResult:
    """Store a batch of turns atomically: all new turns or none. Turns already stored (a retry) are skipped.

    A ``client_id`` that comes back with different content is a conflict (409) and nothing is stored.
    Once the recording is finished, new turns are accepted only when ``late`` and ``check_late_turns`` allows
    them (captured before the end, uploaded after it). The new turns go to the demonstration's live session after
    commit (one group message per batch). A batch upload (``batch.py``) passes the blobs it brings (``uploaded``)
    and stores them with ``before_store``, in the same transaction once every check has passed; it validated the
    turns already (``checked``: ``check_turn_batch`` ran while its blobs were checked).
    """
    if not checked:
        check_turn_batch(turns, demo.project, uploaded)
    mask_password_values(demo, turns)
    mask_secret_parameters(demo, turns)
    drop_unasked_traffic(demo, turns)
    digests = [content_hash(turn) for turn in turns]
    with transaction.atomic():
        demo = hotsql.locked_demo(demo.pk)
        stored, top = stored_turns(demo, [turn["client_id"] for turn in turns])
        check_no_conflicts(turns, digests, {client_id: digest for client_id, (digest, _) in stored.items()})
        fresh = [(turn, digest) for turn, digest in zip(turns, digests, strict=True) if turn["client_id"] not in stored]
        if fresh and not demo.is_recording:
            if not late:
                raise Conflict(f"recording {demo.name} is {demo.status}; it takes no new turns")
            check_late_turns(demo, turns, stored)
            forget_review_caches(demo)
        if before_store is not None:
            before_store()
        next_seq = 0 if top is None else top + 1
        rows = [turn_row(demo, turn, next_seq + i, digest) for i, (turn, digest) in enumerate(fresh)]
        Turn.objects.bulk_create(rows)
        on_commit_turns(demo.name, rows)
    return batch_result(turns, rows, stored)


def stored_turns(demo: Demonstration, client_ids: list) -> tuple[dict, int | None]:
    """The turns of ``demo`` stored under ``client_ids`` (client id → (content digest, seq)) and the recording's
    last seq, in one query. Read while the recording's row is locked: no other batch adds turns meanwhile."""
    rows = hotsql.stored_turns(demo.pk, client_ids)
    wanted = set(client_ids)
    stored = {client_id: (digest, seq) for client_id, digest, seq in rows if client_id in wanted}
    return stored, max((seq for _, _, seq in rows), default=None)


def check_no_conflicts(turns: list, digests: list, stored: dict) -> None:
    errors = [
        schema.FieldError(f"turns[{i}].client_id", f"{t['client_id']!r} was stored before with different content")
        for i, (t, digest) in enumerate(zip(turns, digests, strict=True))
        if t["client_id"] in stored and stored[t["client_id"]] != digest
    ]
    if errors:
        raise Conflict("turn ids re-used with different content; nothing was stored", errors)


def batch_result(turns: list, rows: list, stored: dict) -> IngestResult:
    seqs = {row.client_id: row.seq for row in rows} | {client_id: seq for client_id, (_, seq) in stored.items()}
    return IngestResult(
        created=len(rows),
        duplicates=len(turns) - len(rows),
        turns=[{"client_id": t["client_id"], "seq": seqs[t["client_id"]]} for t in turns],
    )
