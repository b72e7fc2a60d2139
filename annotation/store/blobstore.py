"""Reading stored files (blobs, thumbnails, export archives) for the web pages and downloads, whatever the storage:
local files, or S3 (django-storages), where a range is read with one ranged GET and streamed, never downloaded whole.
The worker makes the thumbnails."""

import hashlib
import time

from django.conf import settings
from django.core.files.storage import FileSystemStorage, default_storage
from django.utils.http import content_disposition_header

from ..models import sha256_path

CHUNK = 1024 * 1024


def read_blob(sha256: str) -> bytes:
    """The bytes of a stored blob."""
    with default_storage.open(sha256_path(sha256), "rb") as handle:
        return handle.read()


def thumbnail_path(sha256: str) -> str:
    """Where the worker stores a screenshot's thumbnail (``workers.review.thumbnails``)."""
    return f"thumbs/{sha256[:2]}/{sha256}.webp"


def has_thumbnail(sha256: str) -> bool:
    return default_storage.exists(thumbnail_path(sha256))


def is_local(storage) -> bool:
    """Whether ``storage`` keeps its files on this machine's file system (Django's ``FileSystemStorage``): they have
    paths, so they can be written, renamed and hard-linked in place instead of copied through the storage."""
    return isinstance(storage, FileSystemStorage)


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


def s3_stream(storage, name: str, start: int = 0, length: int | None = None):
    key = s3_key(storage, name)
    end = "" if length is None else start + length - 1
    ranged = {"Range": f"bytes={start}-{end}"} if start or length is not None else {}
    body = s3_client(storage).get_object(Bucket=storage.bucket_name, Key=key, **ranged)["Body"]
    try:
        yield from body.iter_chunks(CHUNK)
    finally:
        body.close()


class S3ObjectReader:
    """Whole stored objects read from S3 many at a time, as an export does (thousands of small blobs).

    boto3's ``get_object`` costs about 2.8 ms of CPU per small object in its event hooks, parsing and checks. Here
    each object is one presigned GET (signed by the storage's own client: its credentials, endpoint and addressing
    style) sent through that client's HTTP session (its proxies, TLS verification and connection pool): about
    two thirds of that CPU, a sha256 of the bytes included (docs/notes.md has the figures).
    Thread-safe. A connection error or a 5xx/429 is tried again (``ATTEMPTS`` in all); a missing object is a
    ``FileNotFoundError``; any other answer an ``OSError`` with the status."""

    ATTEMPTS = 3
    EXPIRES = 300  # seconds a presigned GET is valid: it is used at once

    def __init__(self, storage):
        self.storage, self.client = storage, s3_client(storage)
        self.http = self.client._endpoint.http_session  # botocore's transport for this client (no public handle)

    def copy(self, name: str, out, hashed: bool = True) -> str:
        """Write the object's bytes into the binary file ``out`` (from its start, truncated on a retry); returns
        their sha256 (hex), or "" unless ``hashed`` (a reader that checks what it is given, as a pack's does)."""
        from botocore.exceptions import ConnectionError as ConnectFailed
        from botocore.exceptions import HTTPClientError
        from urllib3.exceptions import HTTPError

        for attempt in range(self.ATTEMPTS):
            out.seek(0)
            out.truncate()
            try:
                return self.copy_once(name, out, hashed)
            except (ConnectFailed, HTTPClientError, HTTPError, RetryableStatus) as error:
                if attempt + 1 == self.ATTEMPTS:
                    raise OSError(f"{name}: S3 read failed after {self.ATTEMPTS} attempts: {error}") from error
                time.sleep(0.1 * 2**attempt)
        raise AssertionError("unreachable")

    def copy_once(self, name: str, out, hashed: bool = True) -> str:
        from botocore.awsrequest import AWSRequest

        parameters = {"Bucket": self.storage.bucket_name, "Key": s3_key(self.storage, name)}
        url = self.client.generate_presigned_url("get_object", Params=parameters, ExpiresIn=self.EXPIRES)
        response, complete = self.http.send(AWSRequest(method="GET", url=url, stream_output=True).prepare()), False
        try:
            status = response.status_code
            if status == 404:
                raise FileNotFoundError(f"{name}: not in the bucket {self.storage.bucket_name!r}")
            if status == 429 or status >= 500:
                raise RetryableStatus(f"{name}: S3 answered {status}")
            if status != 200:
                raise OSError(f"{name}: S3 answered {status}: {response.raw.read(500)!r}")
            size, digest = 0, hashlib.sha256() if hashed else None
            for chunk in response.raw.stream(CHUNK, decode_content=False):
                out.write(chunk)
                if digest is not None:
                    digest.update(chunk)
                size += len(chunk)
            expected = response.headers.get("Content-Length")
            if expected is not None and int(expected) != size:
                raise RetryableStatus(f"{name}: {size} of {expected} bytes before the connection ended")
            complete = True
            return digest.hexdigest() if digest is not None else ""
        finally:
            if not complete:  # a body left unread: the connection cannot serve another request
                response.raw.close()
            response.raw.release_conn()  # back to the pool (a closed one reconnects when next used)


class RetryableStatus(Exception):
    """An S3 answer worth asking again (throttled, a server error, a cut-short body)."""


def presigned_download_url(storage, name: str, filename: str, content_type: str) -> str | None:
    """A presigned S3 URL that serves the file as an attachment named ``filename`` (Range works on it), when the
    storage is S3 and ``S3_DOWNLOAD_REDIRECT`` is on; else None (stream it)."""
    if not (settings.S3_DOWNLOAD_REDIRECT and is_s3(storage)):
        return None
    disposition = content_disposition_header(True, filename)
    parameters = {"ResponseContentDisposition": disposition, "ResponseContentType": content_type}
    return storage.url(name, parameters=parameters)
