"""Reading stored files (blobs, thumbnails, export archives) for the web pages and downloads, whatever the storage:
local files, or S3 (django-storages), where a range is read with one ranged GET and streamed, never downloaded whole.
The worker makes the thumbnails."""

from django.conf import settings
from django.core.files.storage import default_storage
from django.utils.http import content_disposition_header

from .models import sha256_path

CHUNK = 1024 * 1024


def read_blob(sha256: str) -> bytes:
    """The bytes of a stored blob."""
    with default_storage.open(sha256_path(sha256), "rb") as handle:
        return handle.read()


def thumbnail_path(sha256: str) -> str:
    """Where the worker stores a screenshot's thumbnail (``workers.thumbnails``)."""
    return f"thumbs/{sha256[:2]}/{sha256}.webp"


def has_thumbnail(sha256: str) -> bool:
    return default_storage.exists(thumbnail_path(sha256))


def is_s3(storage) -> bool:
    """Whether ``storage`` is django-storages' S3 backend (it has a bucket, and no local paths)."""
    return hasattr(storage, "bucket_name") and hasattr(storage, "connection")


def stream_file(storage, name: str, start: int = 0, length: int | None = None):
    """The stored file's bytes from ``start`` (``length`` of them, else to the end), in chunks of about 1 MiB."""
    if length == 0:
        return
    if is_s3(storage):
        yield from s3_stream(storage, name, start, length)
        return
    with storage.open(name, "rb") as handle:
        handle.seek(start)
        while length is None or length > 0:
            chunk = handle.read(CHUNK if length is None else min(CHUNK, length))
            if not chunk:
                break
            if length is not None:
                length -= len(chunk)
            yield chunk


def s3_key(storage, name: str) -> str:
    """The object key of a storage name (the storage's location prefix applied), as django-storages computes it."""
    from storages.utils import clean_name

    return storage._normalize_name(clean_name(name))


def s3_client(storage):
    """The storage's low-level boto3 client: thread-safe, so one serves every thread (django-storages builds a
    boto3 resource per thread, which costs a few hundred milliseconds of CPU each)."""
    return storage.connection.meta.client


def s3_stream(storage, name: str, start: int = 0, length: int | None = None, client=None):
    key = s3_key(storage, name)
    end = "" if length is None else start + length - 1
    ranged = {"Range": f"bytes={start}-{end}"} if start or length is not None else {}
    client = client or s3_client(storage)
    body = client.get_object(Bucket=storage.bucket_name, Key=key, **ranged)["Body"]
    try:
        yield from body.iter_chunks(CHUNK)
    finally:
        body.close()


def presigned_download_url(storage, name: str, filename: str, content_type: str) -> str | None:
    """A presigned S3 URL that serves the file as an attachment named ``filename`` (Range works on it), when the
    storage is S3 and ``S3_DOWNLOAD_REDIRECT`` is on; else None (stream it)."""
    if not (settings.S3_DOWNLOAD_REDIRECT and is_s3(storage)):
        return None
    disposition = content_disposition_header(True, filename)
    parameters = {"ResponseContentDisposition": disposition, "ResponseContentType": content_type}
    return storage.url(name, parameters=parameters)
