"""Blob packs: each finished demo's blobs copied into one S3 object, so that an export reads a demo with one GET
instead of one GET per blob (an S3 server spends about as much CPU on a 25 KB object as on a megabyte of one).

The blobs stay where they are (``blobs/ab/cd/<sha256>``, one object each): every other reader (the API, thumbnails,
re-alignment) reads them there, and a pack is only a copy that the export worker reads. A pack is written by the
worker once a recording finishes (``workers.pack_demo_blobs``, enqueued with the demo's other after-recording work)
and whenever ``pack_demo_blobs`` is run by hand; it is never needed: a blob missing from a pack (a pack not made yet,
a screenshot chosen later, a pack that fails its check) is read on its own, as before.

Format of ``blobpacks/<demo name>.pack``: ``MAGIC``, the length of the index (8 bytes, big-endian), the index (JSON:
``{"blobs": [[sha256, size], ...]}``), then each blob's bytes in the index's order, as one zlib stream (ISA-L level
1: pages and JSON shrink about three times, so the S3 server sends a third of the bytes); packs made before, with
``MAGIC_RAW``, hold the bytes as they are and are still read. An index over ``MAX_INDEX_BYTES`` makes no pack.
Every blob read from a pack is checked against its sha256 like any blob read from storage. Local storage has no
packs: its blobs are archived from where they are stored.
"""

import hashlib
import json
import logging
import os
import struct
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from django.core.files.storage import default_storage
from isal import isal_zlib

from annotation.models import Demonstration, Turn, TurnCuration, sha256_path
from annotation.store.blobstore import S3ObjectReader, is_s3, s3_client, s3_key

log = logging.getLogger(__name__)
MAGIC = b"WTPACK2\n"  # the blobs' bytes deflated
MAGIC_RAW = b"WTPACK1\n"  # the blobs' bytes as they are (packs made before)
MAGICS = (MAGIC, MAGIC_RAW)
PACK_LEVEL = 1  # ISA-L's fastest: the worker packs each demo once its recording ends
INFLATE_CHUNK = 4 * 1024 * 1024  # inflated at a time from what arrives: a pack's stream cannot swell memory
# The longest index read: about 90 bytes a blob (a sha256 and a size), so 16 MiB is over 150,000 blobs, far more than
# a demo has. A pack whose head declares more is no pack (its blobs are read on their own), judged before its index
# is gathered: a hostile length would otherwise have the reader buffer the whole body.
MAX_INDEX_BYTES = 16 * 1024 * 1024
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
            deflate = isal_zlib.compressobj(PACK_LEVEL)
            for path in paths:
                with path.open("rb") as blob:
                    while chunk := blob.read(CHUNK):
                        out.write(deflate.compress(chunk))
                path.unlink()
            out.write(deflate.flush())
        client = s3_client(default_storage)
        client.upload_file(str(pack), default_storage.bucket_name, s3_key(default_storage, pack_name(demo.name)))
    return len(shas)


def delete_pack(demo_name: str) -> None:
    if is_s3(default_storage):
        default_storage.delete(pack_name(demo_name))


class PackWriter:
    """A write-only binary stream that unpacks a pack as its bytes arrive (``S3ObjectReader.copy(name, writer)``:
    no copy of the pack is kept), inflating them as they come (``MAGIC``; ``MAGIC_RAW`` packs as they are): each
    ``wanted`` blob is written into ``cache`` (named by sha256) once its bytes match it, and listed in ``found``. A
    blob that does not match is left out (read on its own instead), as is the rest of a pack whose head, index or
    stream is not one. ``seek(0)`` (a retried GET) starts again; ``close()`` removes a blob left half-written by a
    body cut short.

    ``hold(size)``, when given, is asked before each wanted blob: True (room reserved for ``size`` bytes) keeps the
    blob in memory instead of a cache file (in ``held``, sha256 → bytes, once it matches); a blob that does not
    match, or is cut short, gives its room back (``hold(-size)``). An export archiving a pack's blobs takes them
    from there: no file made, renamed, read back and removed for each of a demo's blobs."""

    def __init__(self, wanted: Iterable[str], cache: Path, hold=None):
        self.wanted, self.cache, self.found, self.hold, self.held = set(wanted), cache, set(), hold, {}
        self.seek(0)

    def writable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if (offset, whence) != (0, os.SEEK_SET):
            raise OSError("a pack writer only starts again from the beginning")
        self.close()
        self.head, self.entries, self.broken, self.inflate = bytearray(), None, False, None
        self.entry, self.left, self.blob, self.digest = -1, 0, None, None  # the blob being read
        return 0

    def truncate(self, size=None) -> int:
        return 0

    def write(self, data) -> int:
        view = memoryview(data)
        while view and self.entries is None and not self.broken:
            view = self.read_head(view)
        if self.inflate is None:
            self.read_body(view)
            return len(data)
        full = False  # the last piece filled INFLATE_CHUNK: the inflater may hold more of it with no input left
        while (view or full) and not self.broken:  # inflated a bounded piece at a time
            if self.inflate.eof:
                self.broken = bool(view)  # bytes after the stream: not a pack
                break
            try:
                inflated = self.inflate.decompress(view, INFLATE_CHUNK)
            except isal_zlib.error:
                self.broken = True
                break
            self.read_body(inflated)
            full = len(inflated) == INFLATE_CHUNK
            view = memoryview(self.inflate.unconsumed_tail)
            self.broken = self.broken or bool(self.inflate.unused_data)  # bytes after the stream: not a pack
        return len(data)

    def read_body(self, data) -> None:
        """The blobs' bytes (inflated): each wanted one written and checked."""
        view = memoryview(data)
        while view and not self.broken:
            if self.left == 0:
                self.next_entry()
            else:
                take, view = view[: self.left], view[self.left :]
                self.left -= len(take)
                if self.blob is not None:
                    self.digest.update(take)
                    self.put(take)
                if self.left == 0:
                    self.end_entry()
        while self.entries and not self.broken and self.left == 0 and self.entry + 1 < len(self.entries):
            if self.entries[self.entry + 1][1]:
                break
            self.next_entry()  # a zero-size blob after the last byte read (the last ones have no byte to wait for)

    def read_head(self, view: memoryview) -> memoryview:
        """Gather ``MAGIC``, the index's length and the index; then parse it (``broken`` when it is not one)."""
        fixed = len(MAGIC) + 8
        need = fixed if len(self.head) < fixed else fixed + struct.unpack(">Q", self.head[len(MAGIC) : fixed])[0]
        take = view[: need - len(self.head)]
        self.head += take
        view = view[len(take) :]
        if len(self.head) == fixed:  # the index's length just read: judged before any of the index is gathered
            length = struct.unpack(">Q", self.head[len(MAGIC) :])[0]
            # not a pack, an empty index, or one longer than any pack's
            self.broken = self.head[: len(MAGIC)] not in MAGICS or not 0 < length <= MAX_INDEX_BYTES
        elif len(self.head) > fixed and len(self.head) == need:
            try:
                entries = json.loads(bytes(self.head[fixed:]))["blobs"]
                self.entries = [(str(sha), int(size)) for sha, size in entries]
                if any(size < 0 for _, size in self.entries):
                    raise ValueError("a negative size")  # read_body would never come to the blob's end
            except (ValueError, KeyError, TypeError, OverflowError, RecursionError):  # Infinity; nested too deep
                self.broken = True
            deflated = self.head.startswith(MAGIC)
            self.inflate = isal_zlib.decompressobj() if deflated and not self.broken else None
        return view

    def next_entry(self) -> None:
        self.entry += 1
        if self.entry >= len(self.entries):  # bytes beyond the index: not a pack
            self.broken = True
            return
        sha, self.left = self.entries[self.entry]
        if sha in self.wanted and sha not in self.found:
            if self.hold is not None and sha not in self.held and self.hold(self.left):
                self.blob = bytearray()  # in memory: room for it reserved
                self.put = self.blob.extend
            else:
                self.blob = (self.cache / f"{sha}.part").open("wb")
                self.put = self.blob.write
            self.digest = hashlib.sha256()
        if self.left == 0:
            self.end_entry()

    def end_entry(self) -> None:
        if self.blob is None:
            return
        sha, blob, self.blob = self.entries[self.entry][0], self.blob, None
        matches = self.digest.hexdigest() == sha
        if not matches:
            log.warning("a blob pack's blob %s does not match its sha256; reading it on its own", sha)
        if isinstance(blob, bytearray):
            if matches:
                self.held[sha] = blob
            else:
                self.hold(-self.entries[self.entry][1])
        else:
            blob.close()
            partial = self.cache / f"{sha}.part"
            if not matches:
                partial.unlink(missing_ok=True)
                return
            partial.replace(self.cache / sha)
        if matches:
            self.found.add(sha)

    def close(self) -> None:
        blob, self.blob = getattr(self, "blob", None), None
        if isinstance(blob, bytearray):  # cut short: its room given back
            self.hold(-self.entries[self.entry][1])
        elif blob is not None:
            blob.close()
            (self.cache / f"{self.entries[self.entry][0]}.part").unlink(missing_ok=True)
