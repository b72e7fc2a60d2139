"""Blob packs: each finished demo's blobs copied into one S3 object, so that an export reads a demo with one GET
instead of one GET per blob (an S3 server spends about as much CPU on a 25 KB object as on a megabyte of one).

The blobs stay where they are (``blobs/ab/cd/<sha256>``, one object each): every other reader (the API, thumbnails,
re-alignment) reads them there, and a pack is only a copy that the export worker reads. A pack is written by the
worker once a recording finishes (``workers.pack_demo_blobs``, enqueued with the demo's other after-recording work)
and whenever ``pack_demo_blobs`` is run by hand; it is never needed: a blob missing from a pack (a pack not made yet,
a screenshot chosen later, a pack that fails its check) is read on its own, as before.

Format of ``blobpacks/<demo name>.pack``: ``MAGIC_SPLICE``, its seal (``pack_mac``: 32 bytes), the length of the
index (8 bytes, big-endian), the index (JSON: ``{"blobs": [[sha256, size, crc32, deflated size], ...]}``), then
each blob in the index's order deflated on its own (ISA-L level 2, raw deflate blocks ending on a byte, none the
last: ``archive.deflate_block``; pages and JSON shrink about three times, so the S3 server sends a third of the
bytes). An export job keeps a sealed pack's blobs deflated and splices them into its tar.gz as they are
(``archive.DeflatedBytes``): the seal, checked once the body is in, stands for each blob's sha256 check (whoever can
write to the bucket cannot forge it), and a blob is never inflated, hashed and deflated again. Read into files
instead, each blob is inflated and checked against its sha256. Packs made before are still read, each blob checked
against its sha256: ``MAGIC`` (the blobs as one zlib stream) and ``MAGIC_RAW`` (as they are); ``pack_blobs`` renews
them. An index over ``MAX_INDEX_BYTES`` makes no pack; a blob over ``MAX_BLOB_BYTES`` is never packed, nor taken
from a pack whose index declares one. Local storage has no packs: its blobs are archived from
where they are stored.
"""

import hashlib
import hmac
import json
import logging
import os
import shutil
import struct
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage
from django.utils.crypto import salted_hmac
from isal import isal_zlib

from annotation.models import Demonstration, Turn, TurnCuration, sha256_path
from annotation.store.blobstore import S3ObjectReader, is_s3, s3_client, s3_key

from .archive import DeflatedBytes, deflate_block

log = logging.getLogger(__name__)
MAGIC_SPLICE = b"WTPACK3\n"  # each blob deflated on its own, the pack sealed: spliced into archives as it is
MAGIC = b"WTPACK2\n"  # the blobs' bytes deflated as one stream (packs made before)
MAGIC_RAW = b"WTPACK1\n"  # the blobs' bytes as they are (packs made before)
MAGICS = (MAGIC_SPLICE, MAGIC, MAGIC_RAW)
MAC_BYTES = 32  # the seal (``pack_mac``) of a MAGIC_SPLICE pack
MAC_SALT = "workers.exports.packs"
# ISA-L's level 2: on the export bench's packs (pages, bboxes, screenshots) it deflates as fast as level 1, 1 % smaller,
# and the export inflates it in 58 % of level 1's time (longer matches): every export of the demo pays the inflate
PACK_LEVEL = 2
INFLATE_CHUNK = 4 * 1024 * 1024  # inflated at a time from what arrives: a pack's stream cannot swell memory
# The longest index read: about 90 bytes a blob (a sha256 and a size), so 16 MiB is over 150,000 blobs, far more than
# a demo has. A pack whose head declares more is no pack (its blobs are read on their own), judged before its index
# is gathered: a hostile length would otherwise have the reader buffer the whole body.
MAX_INDEX_BYTES = 16 * 1024 * 1024
# The largest blob a pack holds (what ingest takes, ``INGEST_MAX_BLOB_BYTES``'s default); a larger one (from an
# import) is read on its own. A larger blob an index declares is not taken from the pack (read on its own too):
# inflating into the cache stops at a blob's declared size, so a forged index cannot have an export write more than
# this before a blob fails its check.
MAX_BLOB_BYTES = 64 * 1024 * 1024
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


def pack_mac(index: bytes, body_sha256: bytes, secret: str | None = None) -> bytes:
    """The seal of a ``MAGIC_SPLICE`` pack: an HMAC (SHA-256, keyed by the server's ``SECRET_KEY``, or ``secret``)
    of its index and of its body's sha256. Whoever can write to the bucket cannot make a pack that passes it."""
    return salted_hmac(MAC_SALT, index + body_sha256, secret=secret, algorithm="sha256").digest()


def seal_matches(seal: bytes, index: bytes, body_sha256: bytes) -> bool:
    """Whether ``seal`` is the pack's under ``SECRET_KEY`` or one of ``SECRET_KEY_FALLBACKS`` (a key rotated since
    the pack was made, as Django's signing accepts)."""
    return any(
        hmac.compare_digest(seal, pack_mac(index, body_sha256, secret))
        for secret in [settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]
    )


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
        body, entries, digest = Path(folder, "body"), [], hashlib.sha256()
        with body.open("wb") as out:
            for sha, path in zip(shas, paths, strict=True):  # each blob deflated on its own, checked just above
                if path.stat().st_size > MAX_BLOB_BYTES:  # read on its own by the export
                    path.unlink()
                    continue
                deflated, crc, size = deflate_block(path.read_bytes(), b"", PACK_LEVEL)
                out.write(deflated)
                digest.update(deflated)
                entries.append([sha, size, crc, len(deflated)])
                path.unlink()
        index = json.dumps({"blobs": entries}).encode()
        pack = Path(folder, "pack")
        with pack.open("wb") as out, body.open("rb") as deflated:
            out.write(MAGIC_SPLICE + pack_mac(index, digest.digest()) + struct.pack(">Q", len(index)) + index)
            shutil.copyfileobj(deflated, out, CHUNK)
        client = s3_client(default_storage)
        client.upload_file(str(pack), default_storage.bucket_name, s3_key(default_storage, pack_name(demo.name)))
    return len(entries)


def delete_pack(demo_name: str) -> None:
    if is_s3(default_storage):
        default_storage.delete(pack_name(demo_name))


class PackWriter:
    """A write-only binary stream that unpacks a pack as its bytes arrive (``S3ObjectReader.copy(name, writer)``:
    no copy of the pack is kept; ``MAGIC_SPLICE`` blobs inflated one by one, ``MAGIC`` as one stream, ``MAGIC_RAW``
    as they are): each ``wanted`` blob is written into ``cache`` (named by sha256) once its bytes match it, and
    listed in ``found``. A blob that does not match is left out (read on its own instead), as is the rest of a pack
    whose head, index or stream is not one. ``seek(0)`` (a retried GET) starts again; ``close()`` removes a blob
    left half-written by a body cut short.

    ``hold(size)``, when given, is asked before each wanted blob: True (room reserved for ``size`` bytes) keeps the
    blob in memory instead of a cache file (in ``held``, sha256 → its bytes, or for a ``MAGIC_SPLICE`` pack its
    ``DeflatedBytes``, never inflated); a blob that is not kept gives its room back (``hold(-size)``). A blob of a
    ``MAGIC_SPLICE`` pack kept deflated is checked by the pack's seal (``pack_mac``) once the whole body is in: none
    is held before, and none of a pack whose seal fails."""

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
        self.spliced, self.sealed, self.body = False, [], None  # MAGIC_SPLICE: kept blobs until the seal is checked
        return 0

    def truncate(self, size=None) -> int:
        return 0

    def write(self, data) -> int:
        view = memoryview(data)
        while view and self.entries is None and not self.broken:
            view = self.read_head(view)
        if self.spliced and view and not self.broken:
            self.body.update(view)
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
        """The blobs' bytes (inflated; each blob's deflated bytes in a ``MAGIC_SPLICE`` pack): each wanted one
        written and checked."""
        view = memoryview(data)
        while view and not self.broken:
            if self.left == 0:
                self.next_entry()
            else:
                take, view = view[: self.left], view[self.left :]
                self.left -= len(take)
                if self.blob is not None:
                    self.put(take)
                if self.left == 0:
                    self.end_entry()
        while self.entries and not self.broken and self.left == 0 and self.entry + 1 < len(self.entries):
            if self.entries[self.entry + 1][-1]:
                break
            self.next_entry()  # a zero-size blob after the last byte read (the last ones have no byte to wait for)

    def read_head(self, view: memoryview) -> memoryview:
        """Gather the magic, the seal (``MAGIC_SPLICE``), the index's length and the index; then parse it
        (``broken`` when it is not one)."""
        magic = len(MAGIC)
        fixed = magic + (MAC_BYTES if self.head[:magic] == MAGIC_SPLICE else 0) + 8
        if len(self.head) < magic:
            need = magic
        elif len(self.head) < fixed:
            need = fixed
        else:
            need = fixed + struct.unpack(">Q", self.head[fixed - 8 : fixed])[0]
        take = view[: need - len(self.head)]
        self.head += take
        view = view[len(take) :]
        if len(self.head) == magic:
            self.broken = self.head not in MAGICS  # not a pack
        elif len(self.head) == fixed:  # the index's length just read: judged before any of the index is gathered
            length = struct.unpack(">Q", self.head[fixed - 8 :])[0]
            self.broken = not 0 < length <= MAX_INDEX_BYTES  # an empty index, or one longer than any pack's
        elif len(self.head) > fixed and len(self.head) == need:
            self.spliced = self.head.startswith(MAGIC_SPLICE)
            try:
                entries = json.loads(bytes(self.head[fixed:]))["blobs"]
                if self.spliced:  # sha256, size, crc32, deflated size
                    self.entries = [(str(sha), int(size), int(crc), int(length)) for sha, size, crc, length in entries]
                else:
                    self.entries = [(str(sha), int(size)) for sha, size in entries]
                if any(number < 0 for entry in self.entries for number in entry[1:]):
                    raise ValueError("a negative size")  # read_body would never come to the blob's end
            except (ValueError, KeyError, TypeError, OverflowError, RecursionError):  # Infinity; nested too deep
                self.broken = True
            if self.spliced and not self.broken:
                self.body = hashlib.sha256()
            deflated = self.head.startswith(MAGIC)
            self.inflate = isal_zlib.decompressobj() if deflated and not self.broken else None
        return view

    def next_entry(self) -> None:
        self.entry += 1
        if self.entry >= len(self.entries):  # bytes beyond the index: not a pack
            self.broken = True
            return
        entry = self.entries[self.entry]
        sha, self.left = entry[0], entry[-1]  # the bytes the body holds for it (deflated, in a spliced pack)
        if sha in self.wanted and sha not in self.found and sha not in self.held and entry[1] <= MAX_BLOB_BYTES:
            if self.hold is not None and self.hold(self.left):
                self.blob = bytearray()  # in memory: room for it reserved
                self.put = self.blob.extend
            else:
                self.blob, self.digest = (self.cache / f"{sha}.part").open("wb"), hashlib.sha256()
                self.put = self.put_inflated if self.spliced else self.put_plain
                self.unpacking = isal_zlib.decompressobj(-15) if self.spliced else None
                self.unpacked = 0
        if self.left == 0:
            self.end_entry()

    def put_plain(self, data) -> None:
        self.digest.update(data)
        self.blob.write(data)
        self.unpacked += len(data)

    def put_inflated(self, data) -> None:
        """A spliced pack's blob into its cache file, inflated a bounded piece at a time (``INFLATE_CHUNK``), never
        past the size its index declares (a blob that would is too long: it fails its check)."""
        size, view = self.entries[self.entry][1], data
        while self.unpacked <= size:
            try:
                plain = self.unpacking.decompress(view, min(size - self.unpacked + 1, INFLATE_CHUNK))
            except isal_zlib.error:  # not deflate
                self.unpacked = size + 1
                return
            self.put_plain(plain)
            view = self.unpacking.unconsumed_tail
            if not view:
                return

    def end_entry(self) -> None:
        if self.blob is not None:
            self.end_blob()
        if self.spliced and self.entry + 1 == len(self.entries):  # the body's end, whichever blobs were kept
            self.check_seal()

    def end_blob(self) -> None:
        entry, blob, self.blob = self.entries[self.entry], self.blob, None
        sha = entry[0]
        if isinstance(blob, bytearray):
            if self.spliced:  # kept once the seal is checked, at the body's end
                self.sealed.append((sha, DeflatedBytes(blob, entry[2], entry[1])))
            elif hashlib.sha256(blob).hexdigest() == sha:
                self.held[sha] = blob
                self.found.add(sha)
            else:
                log.warning("a blob pack's blob %s does not match its sha256; reading it on its own", sha)
                self.hold(-len(blob))
        else:
            blob.close()
            partial = self.cache / f"{sha}.part"
            if self.unpacked != entry[1] or self.digest.hexdigest() != sha:
                log.warning("a blob pack's blob %s does not match its sha256; reading it on its own", sha)
                partial.unlink(missing_ok=True)
            else:
                partial.replace(self.cache / sha)
                self.found.add(sha)

    def check_seal(self) -> None:
        """The whole body is in: the blobs kept deflated are held if the seal matches, else their room given back."""
        sealed, self.sealed = self.sealed, []
        fixed = len(MAGIC) + MAC_BYTES + 8
        seal, index = bytes(self.head[len(MAGIC) : len(MAGIC) + MAC_BYTES]), bytes(self.head[fixed:])
        if seal_matches(seal, index, self.body.digest()):
            for sha, blob in sealed:
                self.held[sha] = blob
                self.found.add(sha)
            return
        log.warning("a blob pack's seal does not match its index and body; reading its blobs on their own")
        for _, blob in sealed:
            self.hold(-len(blob.data))

    def close(self) -> None:
        blob, self.blob = getattr(self, "blob", None), None
        if isinstance(blob, bytearray):  # cut short: its room given back
            self.hold(-len(blob) - self.left)
        elif blob is not None:
            blob.close()
            (self.cache / f"{self.entries[self.entry][0]}.part").unlink(missing_ok=True)
        for _, kept in getattr(self, "sealed", []):  # the body never came to its end: no seal checked
            self.hold(-len(kept.data))
        self.sealed = []
