"""Blobs: content-addressed uploads (screenshots, pages, bboxes, video), checked for hash, size and content.

A blob's bytes are stored once, but every answer about blobs is per project (``ProjectBlob``): whether one is
there (``HEAD``, ``missing``), and whether a turn or video chunk may refer to it. A project gets its right by
uploading the bytes themselves (their hash proves it has them); bytes another project already stored are not
stored again, and the answer is the same as for new ones, so nothing tells a project what other projects hold."""

import hashlib
import io
import tempfile
import warnings

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from PIL import Image, UnidentifiedImageError

from ...lib import jsonsafe, pngcheck, rawdump, schema
from ...models import Blob, Project, ProjectBlob, sha256_path
from ..errors import TooLarge, UnsupportedMediaType, ValidationFailed, storage_failures
from .staging import sync_saved

BLOB_MEDIA_TYPES = (
    "image/png",
    "image/jpeg",
    "image/webp",
    "text/html",
    "application/json",
    "video/webm",
    "video/mp4",
    "multipart/related",  # MHTML: a raw snapshot of a page before a step-mode action (docs/recorder.md)
    rawdump.HAR_MEDIA_TYPE,  # step mode's traffic, HAR 1.2
    rawdump.DOM_SNAPSHOT_MEDIA_TYPE,  # step mode's DOM snapshot with layout and computed styles
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
    if content_length is not None:
        check_kind_size(media_type, content_length, "body")


def check_kind_size(media_type: str, size: int, field: str) -> None:
    """A HAR or DOM snapshot has its own, smaller limit (``rawdump.LIMIT_SETTINGS``): 413 naming the setting."""
    setting = rawdump.LIMIT_SETTINGS.get(media_type)
    if setting is not None and size > (limit := getattr(settings, setting)):
        message = f"{size} bytes exceeds the limit of {limit} bytes for {media_type} ({setting})"
        raise TooLarge(f"{field}: {message}", [{"field": field, "message": message}])


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


READ_WHOLE = ("application/json", "text/html", *rawdump.LIMIT_SETTINGS)  # media types whose check reads every byte


def check_blob_content(spool, media_type: str) -> None:
    """The bytes must be what the media type says: a decodable image, parseable JSON, UTF-8 HTML."""
    if media_type in PILLOW_FORMATS:
        check_image(spool, PILLOW_FORMATS[media_type])
    elif media_type == "multipart/related":
        check_mhtml(spool.read(16384))  # its head only, however large the archive
    elif media_type in READ_WHOLE:
        # Not json.load(TextIOWrapper(spool)): the wrapper closes the spool when it is garbage-collected.
        check_blob_bytes(spool.read(), media_type)
    spool.seek(0)  # videos are not read at all


def check_blob_bytes(data, media_type: str) -> None:
    """``check_blob_content`` for bytes in memory (``bytes`` or a ``memoryview``; a batch's blobs), no copy made
    but for images, which are read as a file."""
    if media_type in PILLOW_FORMATS:
        check_image(io.BytesIO(data), PILLOW_FORMATS[media_type])
    elif media_type == "application/json":
        if not schema.bboxes_blob_ok(data):  # the recorder's boxes pass here; anything else is parsed and named
            try:
                value = jsonsafe.loads(bytes(data), "body", walk=False)  # check_bboxes checks every value
            except jsonsafe.JSONProblem as problem:
                raise ValidationFailed(f"body is not valid JSON: {problem}", [problem_error(problem)]) from None
            check_bboxes(value)
    elif media_type == "multipart/related":
        check_mhtml(bytes(data[:16384]))
    elif media_type == "text/html":
        check_utf8(data)
    elif media_type in rawdump.LIMIT_SETTINGS:
        check_raw_dump(data, media_type)


def check_raw_dump(data, media_type: str) -> None:
    """A HAR 1.2 log or a DOM snapshot (``annotation/lib/rawdump.py``): JSON of the documented shape, 400 naming the
    field (``log.version``, ``log.entries[2].request.headers[0]``)."""
    try:
        value = jsonsafe.loads(bytes(data), "body")
    except jsonsafe.JSONProblem as problem:
        raise ValidationFailed(f"body is not valid JSON: {problem}", [problem_error(problem)]) from None
    check = rawdump.check_har if media_type == rawdump.HAR_MEDIA_TYPE else rawdump.check_dom_snapshot
    if errors := check(value):
        what = "a HAR 1.2 log" if media_type == rawdump.HAR_MEDIA_TYPE else "a DOM snapshot"
        raise ValidationFailed(f"body is not {what}: {errors[0].field}: {errors[0].message}", errors)


def check_utf8(data) -> None:
    """HTML must be UTF-8 (decoded straight from the buffer, a ``memoryview`` included: no copy first)."""
    try:
        str(data, "utf-8")
    except UnicodeDecodeError as error:
        raise ValidationFailed(f"HTML must be UTF-8: {error}") from None


def check_mhtml(head: bytes) -> None:
    """An MHTML archive (Chrome's pageCapture) starts with MIME headers declaring a multipart/related body."""
    headers = head.split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0].lower()
    if b"mime-version:" not in headers or b"multipart/related" not in headers:
        raise ValidationFailed(
            "body is not an MHTML archive",
            [{"field": "body", "message": "expected MIME headers with Content-Type: multipart/related"}],
        )


def problem_error(problem) -> dict:
    return {"field": problem.field or "body", "message": problem.message}


def check_bboxes(value) -> None:
    """JSON blobs are the bboxes of pages (``{uid: box}``); anything else would break the review page and exports."""
    errors = schema.validate_bboxes(value)
    if errors:
        raise ValidationFailed(
            f"body is not a bboxes object {{uid: {{x, y, width, height, ...}}}}: {errors[0].field}", errors
        )


def check_image_pixels(width: int, height: int) -> None:
    """Refuse an image whose header declares more pixels than ``INGEST_MAX_IMAGE_PIXELS``, before decoding it: a
    small file can declare a huge canvas (a decompression bomb) that costs gigabytes once decoded."""
    limit = settings.INGEST_MAX_IMAGE_PIXELS
    if width * height > limit:
        raise ValidationFailed(
            f"image of {width} x {height} pixels exceeds the limit of {limit} pixels (INGEST_MAX_IMAGE_PIXELS)",
            [{"field": "body", "message": f"{width * height} pixels; at most {limit} allowed"}],
        )


def check_image(spool, expected_format: str) -> None:
    if expected_format == "PNG" and check_png_fast(spool):
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # refused below, not just warned of
            image = Image.open(spool)  # reads the header only
        with image:
            found = image.format
            check_image_pixels(*image.size)
            image.load()  # decodes every pixel: catches truncated and corrupt data that verify() misses
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as error:
        raise ValidationFailed(f"body is not a decodable image: {error}") from None
    if found != expected_format:
        raise ValidationFailed(f"body is a {found} image but Content-Type says {expected_format}")


def check_png_fast(spool) -> bool:
    """A PNG checked whole without decoding its pixels (``annotation/lib/pngcheck.py``); False when it must be decoded
    (not a PNG signature, interlaced, animated), so Pillow decides and names what it is."""
    head = spool.read(len(pngcheck.SIGNATURE))
    spool.seek(0)
    if head != pngcheck.SIGNATURE:
        return False
    data = spool.getvalue() if isinstance(spool, io.BytesIO) else spool.read()  # getvalue: the buffer, no copy
    spool.seek(0)
    try:
        checked = pngcheck.check_png(data, check_image_pixels)
    except pngcheck.BrokenPNG as error:
        raise ValidationFailed(f"body is not a decodable image: {error}") from None
    return checked is not None


def do_store_blob(
    sha256: str, content_type: str, stream, content_length: int | None, project: Project, user=None
) -> tuple[Blob, bool]:
    """Store a blob for ``project`` under its sha256 after checking hash, size and content. Returns ``(blob,
    created)``: created is True when the blob is new *to this project* (whether or not another project stored the
    same bytes before: the file is then not written again, and the answer does not say so).

    A blob the project has already is not read again. The file is written before its row, so a row never points at
    a missing file; an interrupted upload leaves at most an unreferenced file that the next upload rewrites.
    """
    media_type = normalise_media_type(content_type)
    check_blob_request(sha256, media_type, content_length)
    owned = Blob.objects.filter(sha256=sha256, rights__project=project).first()
    if owned is not None:
        return owned, False
    with storage_failures(f"blob {sha256}"):
        blob = check_and_store(sha256, media_type, stream)
    ProjectBlob.objects.get_or_create(project=project, blob=blob, defaults={"uploaded_by": user})
    return blob, True


def check_and_store(sha256: str, media_type: str, stream) -> Blob:
    """The body read (spooled and hashed), checked against its sha256 and media type, and stored unless another
    project stored the same bytes already."""
    spool, digest, size = spool_and_hash(stream)
    with spool:
        if size == 0:
            raise ValidationFailed("empty body; a blob needs content", [{"field": "body", "message": "empty"}])
        if digest != sha256:
            raise ValidationFailed(
                f"body hashes to {digest}, not {sha256}", [{"field": "sha256", "message": "does not match body"}]
            )
        check_kind_size(media_type, size, "body")
        try:
            check_blob_content(spool, media_type)
        except ValidationFailed as error:
            raise ValidationFailed(f"blob {sha256}: {error.detail}", error.errors) from None
        return Blob.objects.filter(sha256=sha256).first() or store_new_blob(spool, sha256, size, media_type)


def store_new_blob(spool, sha256: str, size: int, media_type: str) -> Blob:
    """Write the file, then its row; a concurrent upload of the same bytes may win the row (same content)."""
    name = default_storage.save(sha256_path(sha256), File(spool))
    sync_saved(default_storage, name)  # on disk before the row commits (BLOB_FSYNC)
    try:
        with transaction.atomic():
            return Blob.objects.create(sha256=sha256, size=size, media_type=media_type, file=name)
    except IntegrityError:
        return Blob.objects.get(sha256=sha256)


def check_blob_stored(sha256: str, project: Project) -> Blob | None:
    """The blob if ``project`` has it (``HEAD``), else None, whoever else stored the same bytes."""
    return Blob.objects.filter(sha256=sha256, rights__project=project).first() if schema.is_sha256(sha256) else None


MAX_BLOB_QUERY = 1000


def check_missing_blobs(shas, project: Project) -> list[str]:
    """Which of these sha256s ``project`` does not have yet (in the order asked), so a client uploads only those."""
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
    stored = set(Blob.objects.filter(sha256__in=shas, rights__project=project).values_list("sha256", flat=True))
    return list(dict.fromkeys(sha for sha in shas if sha not in stored))


def do_store_blob_bytes(data: bytes, media_type: str, project: Project, user=None) -> tuple[Blob, bool]:
    """Store in-memory bytes as a blob of ``project`` (used by the synthetic corpus and tests)."""
    sha = hashlib.sha256(data).hexdigest()
    return do_store_blob(sha, media_type, io.BytesIO(data), len(data), project, user)


def do_store_parsed_json(data: bytes, project: Project, user=None) -> Blob:
    """JSON bytes their reader parsed already (a release's ``replay.json``, ``metadata.json``...) kept as a blob of
    ``project``, byte for byte; not the boxes check the recorder's JSON gets."""
    sha = hashlib.sha256(data).hexdigest()
    blob = Blob.objects.filter(sha256=sha, rights__project=project).first()
    if blob is not None:
        return blob
    with storage_failures(f"blob {sha}"):
        blob = Blob.objects.filter(sha256=sha).first() or store_new_blob(
            io.BytesIO(data), sha, len(data), "application/json"
        )
    ProjectBlob.objects.get_or_create(project=project, blob=blob, defaults={"uploaded_by": user})
    return blob
