"""Write a file into S3 as it is produced: a writable stream that sends S3 multipart-upload parts as they fill.

At most ``concurrency`` parts are in flight (the writer waits for the oldest beyond that), so memory stays about
``part_bytes × (concurrency + 1)`` whatever the file's size. The object appears under its key only when
``complete()`` succeeds; until then (a failure, or a worker killed mid-way) S3 holds an incomplete upload that
nobody can download, which ``abort()`` or the sweep (``abandoned_uploads``) removes.
"""

import hashlib
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from annotation.store.blobstore import s3_key


class MultipartWriter:
    """A write-only binary stream into one S3 object; counts and hashes (sha256) what is written."""

    def __init__(self, storage, name: str, content_type: str, part_bytes: int, concurrency: int):
        self.client, self.bucket, self.key = storage.connection.meta.client, storage.bucket_name, s3_key(storage, name)
        self.part_bytes, self.concurrency = part_bytes, concurrency
        started = self.client.create_multipart_upload(Bucket=self.bucket, Key=self.key, ContentType=content_type)
        self.upload_id = started["UploadId"]
        self.pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="s3-part")
        self.in_flight, self.parts = deque(), []
        self.buffer, self.digest, self.size, self.closed = bytearray(), hashlib.sha256(), 0, False

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.digest.update(data)
        self.size += len(data)
        self.buffer += data
        while len(self.buffer) >= self.part_bytes:
            self.send(bytes(self.buffer[: self.part_bytes]))
            del self.buffer[: self.part_bytes]
        return len(data)

    def flush(self) -> None:
        """Parts go out when full; S3 parts (but the last) must be at least 5 MiB, so nothing to do here."""

    def send(self, part: bytes) -> None:
        number = len(self.parts) + len(self.in_flight) + 1
        self.in_flight.append(self.pool.submit(self.upload_part, number, part))
        while len(self.in_flight) > self.concurrency:
            self.parts.append(self.in_flight.popleft().result())

    def upload_part(self, number: int, part: bytes) -> dict:
        sent = self.client.upload_part(
            Bucket=self.bucket, Key=self.key, UploadId=self.upload_id, PartNumber=number, Body=part
        )
        return {"PartNumber": number, "ETag": sent["ETag"]}

    def complete(self) -> None:
        """Send the last part and make the object appear under its key (all or nothing)."""
        if self.buffer or not (self.parts or self.in_flight):  # an empty file is one empty part
            self.send(bytes(self.buffer))
            self.buffer.clear()
        while self.in_flight:
            self.parts.append(self.in_flight.popleft().result())
        self.client.complete_multipart_upload(
            Bucket=self.bucket, Key=self.key, UploadId=self.upload_id, MultipartUpload={"Parts": self.parts}
        )
        self.close()

    def abort(self) -> None:
        """Drop every part sent: nothing appears under the key."""
        for future in self.in_flight:
            future.cancel()
        self.close()
        self.client.abort_multipart_upload(Bucket=self.bucket, Key=self.key, UploadId=self.upload_id)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.pool.shutdown(wait=True)


def abandoned_uploads(storage, prefix: str):
    """``(key, upload id)`` of the incomplete multipart uploads under ``prefix`` (a storage name)."""
    client, key_prefix = storage.connection.meta.client, s3_key(storage, prefix)
    for page in client.get_paginator("list_multipart_uploads").paginate(Bucket=storage.bucket_name, Prefix=key_prefix):
        for upload in page.get("Uploads", []):
            yield upload["Key"], upload["UploadId"]


def abort_upload(storage, key: str, upload_id: str) -> None:
    storage.connection.meta.client.abort_multipart_upload(Bucket=storage.bucket_name, Key=key, UploadId=upload_id)
