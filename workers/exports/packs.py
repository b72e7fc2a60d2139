"""Blob packs: each finished demo's blobs copied into one S3 object, so that an export reads a demo with one GET
instead of one GET per blob (an S3 server spends about as much CPU on a 25 KB object as on a megabyte of one).

The blobs stay where they are (``blobs/ab/cd/<sha256>``, one object each): every other reader (the API, thumbnails,
re-alignment) reads them there, and a pack is only a copy that the export worker reads. A pack is written by the
worker once a recording finishes (``workers.pack_demo_blobs``, enqueued with the demo's other after-recording work)
and whenever ``pack_demo_blobs`` is run by hand; it is never needed: a blob missing from a pack (a pack not made yet,
a screenshot chosen later, a pack that fails its check) is read on its own, as before.

Format of ``blobpacks/<demo name>.pack``: ``MAGIC``, the length of the index (8 bytes, big-endian), the index (JSON:
``{"blobs": [[sha256, size], ...]}``), then each blob's bytes in the index's order. Every blob read from a pack is
checked against its sha256 like any blob read from storage. Local storage has no packs: its blobs are hard-linked.
"""

import json
import logging
import os
import struct
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from django.core.files.storage import default_storage

from annotation.models import Demonstration, Turn, TurnCuration, sha256_path
from annotation.store.blobstore import S3ObjectReader, is_s3, s3_client, s3_key

log = logging.getLogger(__name__)
MAGIC = b"WTPACK1\n"
PREFIX = "blobpacks/"
READERS = 8  # blobs read at once while a pack is made
CHUNK = 1024 * 1024


def pack_name(demo_name: str) -> str:
    return f"{PREFIX}{demo_name}.pack"


def demo_shas(demo: Demonstration) -> list[str]:
    """Every blob the demo's exports can use: its turns' pages, bboxes and screenshots, and screenshots chosen in
    review."""
    shas = set()
    for row in Turn.objects.filter(demonstration=demo).values_list("page_id", "bboxes_id", "screenshot_id"):
        shas.update(sha for sha in row if sha)
    chosen = TurnCuration.objects.filter(demonstration=demo).exclude(screenshot="").values_list("screenshot", flat=True)
    shas.update(sha for sha in chosen if sha)
    return sorted(shas)


def pack_demo(demo: Demonstration, reader: S3ObjectReader | None = None) -> int:
    """Write the demo's pack (replacing any older one); returns how many blobs it holds. Nothing on local storage."""
    if not is_s3(default_storage):
        return 0
    reader = reader or S3ObjectReader(default_storage)
    shas = demo_shas(demo)
    with tempfile.TemporaryDirectory(prefix="blobpack-") as folder:
        paths = [Path(folder, sha) for sha in shas]

        def fetch(item):
            sha, path = item
            with path.open("wb") as out:
                digest = reader.copy(sha256_path(sha), out)
            if digest != sha:
                raise OSError(f"blob {sha} read from storage does not match its sha256 (read: {digest})")

        with ThreadPoolExecutor(READERS, thread_name_prefix="blob-pack") as pool:
            list(pool.map(fetch, zip(shas, paths, strict=True)))
        index = json.dumps({"blobs": [[sha, path.stat().st_size] for sha, path in zip(shas, paths, strict=True)]})
        pack = Path(folder, "pack")
        with pack.open("wb") as out:
            out.write(MAGIC + struct.pack(">Q", len(index)) + index.encode())
            for path in paths:
                with path.open("rb") as blob:
                    while chunk := blob.read(CHUNK):
                        out.write(chunk)
                path.unlink()
        client = s3_client(default_storage)
        client.upload_file(str(pack), default_storage.bucket_name, s3_key(default_storage, pack_name(demo.name)))
    return len(shas)


def delete_pack(demo_name: str) -> None:
    if is_s3(default_storage):
        default_storage.delete(pack_name(demo_name))


def unpack(pack: Path, wanted: Iterable[str], cache: Path) -> set[str]:
    """The ``wanted`` blobs found in the pack file, written into ``cache`` (named by sha256) once their bytes match
    it; returns their sha256s. A blob that does not match is left out (read on its own instead), as is the rest of a
    pack whose index does not fit its bytes."""
    import hashlib

    wanted, found = set(wanted), set()
    with pack.open("rb") as handle:
        head = handle.read(len(MAGIC) + 8)
        if len(head) < len(MAGIC) + 8 or not head.startswith(MAGIC):
            return found
        (length,) = struct.unpack(">Q", head[len(MAGIC) :])
        try:
            entries = json.loads(handle.read(length))["blobs"]
        except (ValueError, KeyError, TypeError):
            return found
        for sha, size in entries:
            if sha not in wanted or sha in found:
                handle.seek(size, os.SEEK_CUR)
                continue
            data = handle.read(size)
            if len(data) != size:
                return found
            if hashlib.sha256(data).hexdigest() != sha:
                log.warning("pack %s: blob %s does not match its sha256; reading it on its own", pack.name, sha)
                continue
            partial = cache / f"{sha}.part"
            partial.write_bytes(data)
            partial.replace(cache / sha)
            found.add(sha)
    return found
