"""Bundles: the blobs a run of turns uses and the turns themselves in one request, checked whole, stored atomically.

One request per bundle instead of one per blob is what makes ingest run near disk speed (docs/ingest.md): the
per-request work (routing, authentication, a transaction, a response) is paid once for dozens of blobs.

The body (``application/x-webtasks-batch``, optionally ``Content-Encoding: gzip``) is one line of JSON, the manifest
``{"turns": [...], "blobs": [{"sha256", "media_type", "size"}, ...]}``, a newline, then the blobs' bytes back to
back in the manifest's order. Every blob is checked (size, hash, content) and every turn validated before anything
is written; files and rows are then written in one transaction with the turns, so a refused bundle stores nothing.
A gzip body is inflated with a cap (``INGEST_MAX_UPLOAD_BYTES``): a small body that inflates past it is a 413, not
a gigabyte in memory."""

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from isal import isal_zlib  # zlib's API and stream format, with Intel's ISA-L: inflates ~2.4x faster

from ...lib import jsonsafe, schema
from ...models import Blob, Demonstration, ProjectBlob
from ...store import hotsql
from ..errors import MalformedJSON, TooLarge, UnsupportedMediaType, ValidationFailed, storage_failures
from .blobs import BLOB_MEDIA_TYPES, MAX_BLOB_QUERY, check_blob_bytes, check_kind_size, normalise_media_type
from .staging import Staging
from .turns import IngestResult, check_turn_batch, do_ingest_turns

BUNDLE_MEDIA_TYPE = "application/x-webtasks-batch"
CONTENT_ENCODINGS = ("identity", "gzip")


@dataclass
class BundleBlob:
    """One blob of a bundle: what the manifest says of it and its bytes (a view into the body, not a copy)."""

    index: int
    sha256: str
    media_type: str
    data: memoryview = field(repr=False)


@dataclass
class Bundle:
    """A parsed bundle: its turns and blobs; ``fresh`` are the blobs new to the project once checked."""

    turns: list
    blobs: list
    fresh: list = field(default_factory=list)

    @property
    def media(self) -> dict:
        """sha256 → media type of the blobs this bundle brings, for the turns' blob references."""
        return {blob.sha256: blob.media_type for blob in self.blobs}


def refused(field_name: str, message: str, cls=ValidationFailed):
    return cls(f"{field_name}: {message}; nothing was stored", [{"field": field_name, "message": message}])


def check_bundle_media_type(content_type: str | None) -> None:
    if normalise_media_type(content_type) != BUNDLE_MEDIA_TYPE:
        raise refused(
            "Content-Type", f"{content_type or '(none)'!r}; a bundle is {BUNDLE_MEDIA_TYPE}", UnsupportedMediaType
        )


def inflate(body: bytes, encoding: str | None) -> bytes:
    """The body as sent (``identity``) or gunzipped, never more than ``INGEST_MAX_UPLOAD_BYTES`` once inflated."""
    encoding = (encoding or "identity").strip().lower()
    if encoding not in CONTENT_ENCODINGS:
        raise refused("Content-Encoding", f"{encoding!r} is not accepted; use gzip or none", UnsupportedMediaType)
    if encoding == "identity":
        return body
    limit = settings.INGEST_MAX_UPLOAD_BYTES
    inflater = isal_zlib.decompressobj(wbits=16 + isal_zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, limit + 1)  # stops producing output past the limit: no bomb
    except isal_zlib.error as error:
        raise refused("body", f"not valid gzip: {error}") from None
    if len(data) > limit:
        message = f"inflates past the limit of {limit} bytes (INGEST_MAX_UPLOAD_BYTES)"
        raise refused("body", message, TooLarge)
    if not inflater.eof or inflater.unused_data:
        raise refused("body", "truncated gzip, or data after its end")
    return data


def parse_bundle(data: bytes) -> Bundle:
    """Split the body into the manifest and the blobs it declares; 400/413 naming the field on any mismatch."""
    end = data.find(b"\n")
    if end < 0:
        raise refused("body", "expected a JSON manifest line ending with a newline, then the blobs' bytes")
    if end > settings.INGEST_MAX_BATCH_BYTES:
        limit = settings.INGEST_MAX_BATCH_BYTES
        raise refused("body", f"manifest of {end} bytes exceeds {limit} bytes (INGEST_MAX_BATCH_BYTES)", TooLarge)
    try:
        manifest = jsonsafe.loads(data[:end])
    except jsonsafe.JSONProblem as problem:
        raise MalformedJSON.of(problem) from None
    if not isinstance(manifest, dict):
        raise refused("body", "the manifest must be an object {turns, blobs}")
    turns, declared = manifest.get("turns", []), manifest.get("blobs", [])
    if not isinstance(turns, list) or not isinstance(declared, list) or not (turns or declared):
        raise refused("turns", "expected lists turns and blobs, not both empty")
    blobs = split_blobs(declared, memoryview(data)[end + 1 :])
    return Bundle(turns, blobs)


def split_blobs(declared: list, payload: memoryview) -> list[BundleBlob]:
    if len(declared) > MAX_BLOB_QUERY:
        raise refused("blobs", f"{len(declared)} blobs in one bundle; at most {MAX_BLOB_QUERY} allowed")
    entries = [blob_entry(entry, index) for index, entry in enumerate(declared)]
    total = sum(size for _, _, size in entries)
    if total != len(payload):
        raise refused("body", f"the manifest declares {total} bytes of blobs but {len(payload)} follow it")
    blobs, offset, seen = [], 0, set()
    for index, (sha, media_type, size) in enumerate(entries):
        if sha in seen:
            raise refused(f"blobs[{index}].sha256", "appears twice in the bundle")
        seen.add(sha)
        blobs.append(BundleBlob(index, sha, media_type, payload[offset : offset + size]))
        offset += size
    return blobs


def blob_entry(entry, index: int) -> tuple[str, str, int]:
    where = f"blobs[{index}]"
    if not isinstance(entry, dict):
        raise refused(where, "expected an object {sha256, media_type, size}")
    sha, media_type, size = entry.get("sha256"), entry.get("media_type"), entry.get("size")
    if not schema.is_sha256(sha):
        raise refused(f"{where}.sha256", "expected 64 lowercase hex digits")
    if media_type not in BLOB_MEDIA_TYPES:
        raise refused(f"{where}.media_type", f"{media_type!r} is not accepted; allowed: {', '.join(BLOB_MEDIA_TYPES)}")
    if type(size) is not int or size < 1:
        raise refused(f"{where}.size", "expected a positive integer (a blob needs content)")
    if size > settings.INGEST_MAX_BLOB_BYTES:
        limit = settings.INGEST_MAX_BLOB_BYTES
        raise refused(f"{where}.size", f"{size} bytes exceeds the limit of {limit} (INGEST_MAX_BLOB_BYTES)", TooLarge)
    check_kind_size(media_type, size, f"{where}.size")
    return sha, media_type, size


def check_bundle_blobs(bundle: Bundle, project, meanwhile=None, staging: Staging | None = None) -> Bundle:
    """Every blob must hash to its sha256; those new to ``project`` must also be what their media type says
    (decodable image, bboxes JSON, UTF-8 HTML). Sets ``bundle.fresh``. The blobs are checked on a few threads:
    hashing and image decoding release the GIL, so a bundle uses every core, and ``meanwhile()`` (the turns'
    validation) runs on this thread while they do. A checked blob that is stored nowhere yet is written to
    ``staging`` by its thread (``staging.py``). A blob's problem is raised first (in manifest order), then what
    ``meanwhile`` raised."""
    known = hotsql.known_blobs(project.pk, [blob.sha256 for blob in bundle.blobs])
    owned = {sha for sha, rights in known.items() if rights}
    checks = [
        CHECKERS.submit(blob_problem, blob, blob.sha256 not in owned, staging if blob.sha256 not in known else None)
        for blob in bundle.blobs
    ]
    problem = None
    try:
        if meanwhile is not None:
            meanwhile()
    except ValidationFailed as error:
        problem = error
    finally:
        wait(checks)  # every check has ended, so none is still writing to ``staging`` when it is discarded
    first = next((found for found in (check.result() for check in checks) if found is not None), None)
    if first is not None or problem is not None:
        raise first or problem
    bundle.fresh = [blob for blob in bundle.blobs if blob.sha256 not in owned]
    return bundle


# Checks and file writes of a bundle's blobs run here: hashing, image decoding and writing release the GIL.
CHECKERS = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 1), thread_name_prefix="bundle-blobs")


def blob_problem(blob: BundleBlob, fresh: bool, staging: Staging | None = None) -> ValidationFailed | None:
    """Why the blob is refused, or None; a blob that passes is written to ``staging`` when one is given."""
    where = f"blobs[{blob.index}]"
    if hashlib.sha256(blob.data).hexdigest() != blob.sha256:
        return refused(f"{where}.sha256", "does not match the blob's bytes")
    if not fresh:
        return None  # the project has these bytes, checked when they first came
    try:
        check_blob_bytes(blob.data, blob.media_type)
    except ValidationFailed as error:
        errors = [{**e, "field": where + e["field"].removeprefix("body")} for e in error.errors]
        return ValidationFailed(f"{where}: {error.detail}; nothing was stored", errors or [refusal(where, error)])
    if staging is not None:
        staging.stage(blob.sha256, blob.data)
    return None


def refusal(where: str, error: ValidationFailed) -> dict:
    return {"field": where, "message": error.detail}


def store_bundle_blobs(bundle: Bundle, project, user, staging: Staging) -> None:
    """Files first, then rows (a row never points at a missing file); bytes another project stored are not written
    again. Runs inside the bundle's transaction, after every check passed."""
    shas = [blob.sha256 for blob in bundle.fresh]
    existing = hotsql.existing_blobs(shas)
    new = [blob for blob in bundle.fresh if blob.sha256 not in existing]
    names = staging.place(new, CHECKERS)
    now = hotsql.now_for_db()
    rows = [(b.sha256, len(b.data), b.media_type, n, now) for b, n in zip(new, names, strict=True)]
    # A concurrent upload of the same bytes may have inserted a row meanwhile: same content, so it is kept.
    hotsql.insert_new(Blob, ["sha256", "size", "media_type", "file", "created_at"], rows)
    rights = [(project.pk, sha, user.pk, now) for sha in shas]
    hotsql.insert_new(ProjectBlob, ["project", "blob", "uploaded_by", "created_at"], rights)


@dataclass
class BundleResult:
    """What a bundle did: the turns' ``IngestResult`` and how many blobs were new to the project."""

    turns: IngestResult
    blobs: int

    @property
    def created(self) -> bool:
        return bool(self.turns.created or self.blobs)

    def as_dict(self) -> dict:
        return {**self.turns.as_dict(), "blobs_created": self.blobs}


def do_ingest_bundle(demo: Demonstration, body: bytes, content_type: str, encoding: str | None, user) -> BundleResult:
    """Check and store one bundle for ``demo`` (whose project the blobs are for): all of it or nothing.

    A retry of a stored bundle stores nothing again and answers with the same seqs (turns are idempotent on
    ``client_id``, blobs on sha256)."""
    check_bundle_media_type(content_type)
    bundle = parse_bundle(inflate(body, encoding))
    check_turns = (lambda: check_turn_batch(bundle.turns, demo.project, bundle.media)) if bundle.turns else None
    # An OSError writing the files (disk full, an I/O error) is a 503 naming the bundle; leaving the block removes
    # what a refused or failed bundle staged (nothing once the bundle is stored).
    with storage_failures("the bundle"), Staging() as staging:
        check_bundle_blobs(bundle, demo.project, meanwhile=check_turns, staging=staging)
        staging.flush()  # outside the transaction: the recording's row is not locked while the disk catches up
        if not bundle.turns:
            with transaction.atomic():
                store_bundle_blobs(bundle, demo.project, user, staging)
            return BundleResult(IngestResult(), len(bundle.fresh))
        result = do_ingest_turns(
            demo,
            bundle.turns,
            before_store=lambda: store_bundle_blobs(bundle, demo.project, user, staging),
            checked=True,
        )
    return BundleResult(result, len(bundle.fresh))
