"""Pack an export directory into one archive with a manifest of every file's sha256 (pure, no Django).

Each file is read once: hashed while it is copied into the archive (unless its sha256 is known: a blob the job already
checked as it fetched it, or a stored blob named by it); a hard-linked file is read and stored once. A file the exporter
kept deflated as it wrote it (``DeflatedFile``) goes into a tar.gz as it is, never read or compressed again.
``manifest.json`` (at the archive root, ``{"algorithm": "sha256", "files": {path: {"sha256", "size"}}}``) is added last.
"""

import collections
import hashlib
import itertools
import os
import struct
import tarfile
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import NamedTuple

from isal import isal_zlib

from annotation.lib.formats import ARCHIVE_FORMATS  # pure constants: no Django needed

MANIFEST = "manifest.json"
CHUNK = 1024 * 1024
GZIP_THREADS = 2  # ISA-L compression threads for tar.gz
# Already-compressed media gain nothing from deflate; storing them keeps zip exports close to disk speed.
STORED_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".mp4", ".webm", ".gz", ".zip"}


class HashingWriter:
    """A binary output that counts and hashes (sha256) what is written through it: an archive's digest and size
    without reading the archive again."""

    def __init__(self, handle):
        self.handle, self.digest, self.size = handle, hashlib.sha256(), 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self.handle.write(data)

    def flush(self) -> None:
        self.handle.flush()


class Listed(NamedTuple):
    """What the archive keeps of a listed file until it is archived: its size and ``(st_dev, st_ino)`` (a file met
    again under that identity is a hard link). Not the ``os.stat_result``: at ~1 KB each, an export's tens of
    thousands of them were most of its memory that grew with the project."""

    size: int
    inode: tuple


def listed(stat: os.stat_result) -> Listed:
    return Listed(stat.st_size, (stat.st_dev, stat.st_ino))


def files_under(
    root: Path, planned: Mapping | Iterable | None = None, arriving: bool = False
) -> list[tuple[str, str, Listed | None]]:
    """``(archive name, path to read, Listed)`` of every file under ``root``, sorted, with ``/`` separators; and of
    the ``planned`` files (``{path under root: file to read in its place}``, or such pairs: blobs an export names
    without linking them there), with None for the listing when they may still be ``arriving``. One ``stat`` a
    file, no ``Path`` objects: an export has tens of thousands of files."""
    folders = [os.fspath(Path(root))]
    found, start, prefix = [], len(folders[0]) + 1, folders[0] + os.sep
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir():  # a link to a folder is not followed (as os.walk does)
                    folders += [] if entry.is_symlink() else [entry.path]
                else:
                    found.append((entry.path[start:].replace(os.sep, "/"), entry.path, listed(entry.stat())))
    for path, source in planned.items() if isinstance(planned, Mapping) else planned or ():
        if not path.startswith(prefix):
            raise ValueError(f"{path} is not under {root}")
        source = os.fspath(source)
        found.append((path[start:].replace(os.sep, "/"), source, None if arriving else listed(os.stat(source))))
    return sorted(found, key=lambda file: file[0])


def write_archive(
    root: Path,
    destination: Path,
    archive_format: str = "tar.gz",
    progress: Callable[[float], None] = lambda fraction: None,
    compresslevel: int = 6,
    top: str = "",
    planned: Mapping | Iterable | None = None,
    known: dict | None = None,
    arriving=None,
    deflated: dict | None = None,
) -> dict:
    """Archive everything under ``root`` into ``destination`` with a manifest; returns the manifest.

    ``destination`` is a path, or a writable binary stream that receives the archive as it is made (an S3 upload:
    ``workers.exports.s3upload``; it is not closed here). ``progress(fraction)`` is called as bytes are archived. The
    archive's top folder is ``top``, by default ``destination``'s stem. ``planned``: files archived as if they were
    under ``root`` (``files_under``). ``known``: ``(st_dev, st_ino)`` or a path → sha256 of files already checked
    against it (blobs fetched from S3; local blobs, checked when stored and named by it), not hashed again.
    ``arriving``: the ``planned`` files may still be being written (``wait(file)`` returns once one is complete, or
    raises why it never will be); each is archived in its place as it comes, and the archive is the same as if they had
    all been there. A planned file may be kept in memory instead (``taken(file)``: its bytes and their checked
    sha256, else None), given back with ``release(file)`` once archived under every name planned for it.
    ``deflated``: ``{path under root: DeflatedFile or KeptBytes}``, files kept deflated (complete by now) or in
    memory (``DeflatedFiles``) archived as if they were under ``root``; tar.gz only.
    """
    if archive_format not in ARCHIVE_FORMATS:
        raise ValueError(f"unknown archive format {archive_format!r}; known: {', '.join(ARCHIVE_FORMATS)}")
    if deflated and archive_format != "tar.gz":
        raise ValueError("files kept deflated go into a tar.gz only")
    files = files_under(root, planned, arriving is not None)
    if deflated:
        kept = {Path(path).relative_to(root).as_posix(): (os.fspath(path), file) for path, file in deflated.items()}
        if any(".." in name.split("/") for name in kept):  # relative_to does not resolve it: a member climbing out
            raise ValueError("a kept file's path climbs out of the export folder")
        files = sorted(
            [file for file in files if file[0] not in kept] + [(name, *file) for name, file in kept.items()],
            key=lambda file: file[0],
        )
    counted = [size_now(path, stat, arriving) for _, path, stat in files]  # 0 for a file still to come
    total = sum(counted) or 1
    top = top or destination.name.removesuffix(f".{archive_format}")
    writer = TarWriter if archive_format == "tar.gz" else ZipWriter
    manifest, done = Manifest(), 0
    uses = collections.Counter(path for _, path, stat in files if stat is None)  # names planned for each arriving file
    # links: only for files listed twice, unless some are arriving (their inodes are not known yet: every file then)
    again = met_again(files) if arriving is None else None
    with writer(destination, compresslevel, known or {}, again) as archive:
        for n, ((name, path, stat), size) in enumerate(zip(files, counted, strict=True)):
            files[n] = None  # a file's listing freed once it is archived: the manifest grows in its place
            if isinstance(stat, DeflatedFile | KeptBytes):
                if isinstance(stat, KeptBytes):
                    archive.add_bytes(f"{top}/{name}", stat.data)
                else:
                    archive.add_deflated(f"{top}/{name}", stat)
                manifest.add(name, stat.sha256, stat.size)
                done += stat.size
                progress(done / total)
                continue
            if stat is None:  # a planned file still arriving
                arriving.wait(path)
                uses[path] -= 1
                taken = arriving.taken(path)
                if taken is not None:  # kept in memory, perhaps deflated
                    data, digest = taken
                    manifest.add(name, archive.add_taken(f"{top}/{name}", path, data, digest), held_size(data))
                    if not uses[path]:
                        arriving.release(path)
                    total, done = total + held_size(data) - size, done + held_size(data)  # counted 0 if still to come
                    progress(done / total)
                    continue
                stat = listed(os.stat(path))  # complete now
                total += stat.size - size
            manifest.add(name, archive.add(f"{top}/{name}", path, stat), stat.size)
            done += stat.size
            progress(done / total)
        archive.add_bytes(f"{top}/{MANIFEST}", manifest.text())
    return manifest


class Manifest(Mapping):
    """What ``write_archive`` archived, ``{archive name: {"sha256", "size"}}`` as ``manifest.json`` lists it; each
    file kept as a (sha256, size) pair, not a dict (an export names tens of thousands of files). Files are added in
    path order (``write_archive`` archives them sorted; a name met again keeps its place)."""

    def __init__(self):
        self.entries = {}

    def add(self, name: str, sha256: str, size: int) -> None:
        self.entries[name] = (sha256, size)

    def __getitem__(self, name: str) -> dict:
        sha256, size = self.entries[name]
        return {"sha256": sha256, "size": size}

    def __iter__(self):
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def text(self) -> bytearray:
        """``manifest.json``: a line a file, in path order. Written line by line into one buffer: json's indented
        writer is pure Python, and a list of tens of thousands of lines doubled the manifest's memory at the end."""
        text = bytearray(b'{\n "algorithm": "sha256",\n "files": {\n')
        for n, (name, (sha256, size)) in enumerate(self.entries.items()):
            text += b'%s  %s: {"sha256": "%s", "size": %d}' % (
                b",\n" if n else b"",
                encode_basestring_ascii(name).encode(),
                sha256.encode(),
                size,
            )
        text += b"\n }\n}\n"
        return text


def met_again(files: list) -> set:
    """The ``(st_dev, st_ino)`` of files listed under more than one name (hard links, a blob planned for several):
    only these are remembered once archived, to store the next name as a link."""
    counted = collections.Counter(stat.inode for _, _, stat in files if isinstance(stat, Listed))
    return {inode for inode, n in counted.items() if n > 1}


def size_now(path: str, stat, arriving=None) -> int:
    """A listed file's size, 0 while it is still to come (for the progress bar)."""
    if isinstance(stat, DeflatedFile | KeptBytes):
        return stat.size
    if stat is not None:
        return stat.size
    taken = arriving.taken(path) if arriving is not None else None
    if taken is not None:  # arrived, kept in memory
        return held_size(taken[0])
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def isal_level(compresslevel: int) -> int:
    """zlib's 0-9 scale on ISA-L's 0-3. Exports ask for 6, which is ISA-L's 2: on web pages its level 3 packs 2.5-6 %
    tighter at four to five times the CPU (both ~12-25 % larger than zlib's 6), so only 9 asks for 3."""
    return 0 if compresslevel <= 0 else 1 if compresslevel <= 2 else 2 if compresslevel <= 8 else 3


# A gzip member's header: no name, no time, no extra flags, unknown system (RFC 1952).
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
END_BLOCK = b"\x03\x00"  # an empty last block (fixed codes): how a deflate stream made of flushed blocks ends
WINDOW = 32 * 1024  # how far back deflate refers


def deflater(level: int, zdict: bytes = b""):
    """A raw deflate compressor (ISA-L), primed with ``zdict`` when given."""
    if zdict:
        return isal_zlib.compressobj(level, isal_zlib.DEFLATED, -15, zdict=zdict)
    return isal_zlib.compressobj(level, isal_zlib.DEFLATED, -15)


def deflate_block(data: bytes, zdict: bytes, level: int) -> tuple[bytes, int, int]:
    """``data`` as deflate blocks ending on a byte (a sync flush, no last block), referring back into ``zdict`` (what
    comes before it in the stream); with its crc32 and length. ISA-L releases the GIL while it compresses."""
    compressor = deflater(level, zdict)
    return compressor.compress(data) + compressor.flush(isal_zlib.Z_SYNC_FLUSH), isal_zlib.crc32(data), len(data)


class BlockDeflater:
    """Deflate blocks written to ``output`` in order from the calling thread, compressed on ``threads`` threads, each
    primed with the 32 KiB before it (as pigz does: the stream packs as tight as one compressor's); the crc32 and
    length of what went in. Every block ends on a byte and none is the last, so what comes after (more blocks, a
    spliced ``DeflatedFile``, the end) continues one deflate stream."""

    def __init__(self, output, level: int, threads: int, prefix: str = "deflate"):
        self.output, self.level, self.depth = output, level, 2 * threads
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=prefix)
        self.pending = collections.deque()  # (block being compressed, what else it waits for), in stream order
        self.previous, self.crc, self.size = b"", 0, 0

    def submit(self, block: bytes, *also: Future) -> None:
        """Compress ``block`` next; ``also``: other work on it (a digest) to wait for before it is out."""
        zdict, self.previous = self.previous, block[-WINDOW:]  # only the window: a block may be a whole record
        self.pending.append((self.pool.submit(deflate_block, block, zdict, self.level), also))
        while len(self.pending) > self.depth:
            self.emit()

    def emit(self) -> None:
        deflating, also = self.pending.popleft()
        compressed, crc, length = deflating.result()
        for future in also:
            future.result()
        self.output.write(compressed)
        self.crc, self.size = isal_zlib.crc32_combine(self.crc, crc, length), self.size + length

    def drain(self) -> None:
        while self.pending:
            self.emit()

    def splice(self, file: "DeflatedFile | DeflatedBytes") -> None:
        """A complete ``DeflatedFile``'s (or ``DeflatedBytes``') deflated bytes next, as they are; the next block
        refers to nothing before it."""
        self.drain()
        file.copy_into(self.output)
        self.crc, self.size = isal_zlib.crc32_combine(self.crc, file.crc, file.size), self.size + file.size
        self.previous = b""

    def stop(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class GzipWriter:
    """One gzip member written to ``output``, compressed in blocks of ``block`` bytes (``BlockDeflater``) on
    ``threads`` threads. ``splice`` puts a ``DeflatedFile``'s bytes into the stream as they are: its blocks end on a
    byte and none is the last, so the member stays one deflate stream, with the crc32 combined."""

    def __init__(self, output, level: int, threads: int, block: int = CHUNK):
        self.output, self.block, self.buffer = output, block, bytearray()
        self.blocks = BlockDeflater(output, level, threads, "gzip")
        output.write(GZIP_HEADER)

    def write(self, data: bytes) -> None:
        self.buffer += data
        whole = len(self.buffer) - len(self.buffer) % self.block
        if whole:
            with memoryview(self.buffer) as view:
                for start in range(0, whole, self.block):
                    self.blocks.submit(bytes(view[start : start + self.block]))
            del self.buffer[:whole]

    def drain(self) -> None:
        """Everything written so far compressed and out."""
        if self.buffer:
            self.blocks.submit(bytes(self.buffer))
            self.buffer.clear()
        self.blocks.drain()

    def splice(self, file: "DeflatedFile | DeflatedBytes") -> None:
        self.drain()
        self.blocks.splice(file)

    def close(self) -> None:
        """The last block and the trailer (crc32, length modulo 2**32)."""
        self.drain()
        self.output.write(END_BLOCK + struct.pack("<II", self.blocks.crc, self.blocks.size & 0xFFFFFFFF))

    def stop(self) -> None:
        self.blocks.stop()


class DeflatedFile:
    """A file of an export kept deflated as the exporter writes it (a binary output), for a tar.gz to take as it is
    (``GzipWriter.splice``): Mind2Web's split files, hundreds of MB of JSON, are compressed on other cores while the
    export goes on, and never written out, read back and compressed after it. Pieces of ``block`` bytes are deflated
    on ``threads`` threads (``BlockDeflater``) and hashed in order on one more; ``size``, ``crc`` and ``sha256``
    describe the plain bytes once it is closed."""

    def __init__(self, path: Path, level: int, block: int = CHUNK, threads: int = GZIP_THREADS):
        self.path, self.handle, self.block = path, path.open("wb"), block
        self.blocks = BlockDeflater(self.handle, level, threads)
        self.hasher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="deflate-sha256")
        self.pieces, self.buffered, self.digest, self.closed = [], 0, hashlib.sha256(), False
        self.complete = False  # closed whole (every piece compressed, the stream ended on a byte): fit to splice

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace):
        if kind is None:
            self.close()
        else:
            self.discard()

    def write(self, data: bytes) -> None:
        """Pieces are joined once a block's worth is in (one copy of the bytes: a record holds a task's pages)."""
        data = data if type(data) is bytes else bytes(data)  # a caller's buffer may change after
        self.pieces.append(data)
        self.buffered += len(data)
        if self.buffered >= self.block:
            self.flush_pieces()

    def flush_pieces(self) -> None:
        data = self.pieces[0] if len(self.pieces) == 1 else b"".join(self.pieces)
        self.pieces, self.buffered = [], 0
        self.submit(data)

    def submit(self, data: bytes) -> None:
        self.blocks.submit(data, self.hasher.submit(self.digest.update, data))

    @property
    def size(self) -> int:
        return self.blocks.size

    @property
    def crc(self) -> int:
        return self.blocks.crc

    def close(self) -> None:
        """The rest compressed; the file ends on a byte (every block does)."""
        if self.closed:
            return
        try:
            if self.buffered:
                self.flush_pieces()
            self.blocks.drain()
            self.handle.close()
            self.complete = True
        finally:
            self.discard()

    def discard(self) -> None:
        self.closed = True
        self.blocks.stop()
        self.hasher.shutdown(wait=True, cancel_futures=True)
        self.handle.close()

    @property
    def sha256(self) -> str:
        return self.digest.hexdigest()

    def copy_into(self, output) -> None:
        if not self.complete:  # still being written, or given up after a failure: its bytes are not the file's
            raise ValueError(f"{self.path} is not complete")
        with self.path.open("rb") as handle:
            while data := handle.read(CHUNK):
                output.write(data)


class DeflatedBytes:
    """A file's bytes held deflated (raw deflate blocks ending on a byte, none the last: ``deflate_block``), with
    the plain bytes' crc32 and size: a blob from a pack (``workers.exports.packs``), spliced into a tar.gz as it is
    (``GzipWriter.splice``), never inflated and deflated again; ``inflate()`` for whoever needs its bytes."""

    __slots__ = ("data", "crc", "size")

    def __init__(self, data, crc: int, size: int):
        self.data, self.crc, self.size = data, crc, size

    def copy_into(self, output) -> None:
        output.write(self.data)

    def inflate(self) -> bytes:
        inflater = isal_zlib.decompressobj(-15)
        data = inflater.decompress(self.data, self.size + 1)  # never past the size it declares
        if len(data) != self.size or isal_zlib.crc32(data) != self.crc:
            raise ValueError("deflated bytes that do not inflate to their size and crc32")
        return data


def held_size(data) -> int:
    """The plain size of a file kept in memory (bytes, or ``DeflatedBytes``)."""
    return data.size if isinstance(data, DeflatedBytes) else len(data)


class KeptBytes:
    """A small file of an export kept in memory for a tar.gz (``DeflatedFiles.keep``), never written to the export
    folder: the raw dump's ``trace.json`` of each task, where making a folder and a file costs more than the bytes."""

    def __init__(self, data: bytes):
        data = bytes(data)  # a copy of a caller's buffer, which may change after: the sha256 is of what is archived
        self.data, self.size, self.sha256 = data, len(data), hashlib.sha256(data).hexdigest()


class DeflatedFiles:
    """The files an export keeps out of its folder for a tar.gz, by the path each stands for in the export folder:
    large ones deflated as they are written (``open(path)`` instead of ``path.open("wb")``: a ``DeflatedFile`` in
    ``folder``), small ones in memory (``keep(path, data)``: ``KeptBytes``); ``files()`` for ``write_archive``'s
    ``deflated``."""

    KEEP_BYTES = 64 * 1024 * 1024  # past this much in memory, ``keep`` writes files out (a project's traces)

    def __init__(self, folder: Path, compresslevel: int = 6):
        self.folder, self.level, self.kept, self.opened = folder, isal_level(compresslevel), {}, itertools.count()
        self.in_memory = 0

    def open(self, path: Path) -> DeflatedFile:
        """A new deflated file standing for ``path`` (one opened for it before is replaced, never written over)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        file = DeflatedFile(self.folder / f"{next(self.opened)}.deflate", self.level)
        self.kept[os.fspath(path)] = file
        return file

    def keep(self, path: Path, data: bytes) -> None:
        """``data`` archived as the file ``path``: kept in memory while ``KEEP_BYTES`` allow, else written there."""
        if self.in_memory + len(data) > self.KEEP_BYTES:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_bytes(data)
            return
        self.kept[os.fspath(path)] = KeptBytes(data)
        self.in_memory += len(data)

    def files(self) -> dict:
        return dict(self.kept)


BLOCK = 512  # tar's block: headers, and data padded to it
RECORD = BLOCK * 20  # a tar stream ends padded to a record, as tar and tarfile write it
USTAR_MAGIC = b"ustar\x0000"
LARGEST_USTAR_SIZE = 8**11 - 1  # eleven octal digits


def octal(value: int, width: int) -> bytes:
    return b"%0*o\x00" % (width - 1, value)


def ustar_split(name: bytes) -> tuple[bytes, bytes] | None:
    """``(prefix, name)`` fields of a path (prefix up to 155 bytes, name up to 100, split at a "/", the shortest
    prefix first, as tarfile splits them); None when no split fits."""
    if len(name) <= 100:
        return b"", name
    cut = name.find(b"/")
    while 0 < cut <= 155:
        if len(name) - cut - 1 <= 100:
            return (name[:cut], name[cut + 1 :]) if cut + 1 < len(name) else None
        cut = name.find(b"/", cut + 1)
    return None


def ustar_header(name: str, size: int, mtime: int, link: str = "") -> bytes | None:
    """The 512-byte POSIX ustar header of a regular file (mode 644, owner 0) or, with ``link``, of a hard link to
    that archived name: the bytes tarfile writes for it. None when ustar cannot hold it (a name or link that is not
    ASCII, a link over 100 bytes, a path no "/" splits into 155 + 100 bytes, a file of 8 GiB or more): such a
    member needs tarfile's pax headers. Building headers here, not through ``TarInfo``, halves an export's
    per-file cost: an export of WebLINX's size has tens of thousands of small files."""
    if not (name.isascii() and link.isascii()) or len(link) > 100 or size > LARGEST_USTAR_SIZE:
        return None
    fields = ustar_split(name.encode())
    if fields is None:
        return None
    prefix, short = fields
    header = b"".join(
        (
            short.ljust(100, b"\0"),
            b"0000644\x000000000\x000000000\x00",  # mode, uid, gid
            octal(size, 12),
            octal(mtime, 12),
            b"        ",  # the checksum, counted as spaces
            b"1" if link else b"0",
            link.encode().ljust(100, b"\0"),
            USTAR_MAGIC,
            bytes(80),  # owner and group names, device numbers (none: not a device)
            prefix.ljust(155, b"\0"),
            bytes(12),
        )
    )
    return header[:148] + b"%06o\x00 " % sum(header) + header[156:]


class TarWriter:
    """A gzipped tar. Hard-linked files (blobs the exporter linked more than once) are stored once, as tar
    hard links, like GNU tar does. Headers are ustar (``ustar_header``; tarfile's pax headers for what ustar cannot
    hold), each file written with its header in one piece. Compressed with ISA-L on ``GZIP_THREADS`` threads
    (``GzipWriter``): about seven times as fast as ``gzip -6``, so archiving an export is no longer bound by
    compression, while reading and hashing go on in this thread."""

    def __init__(self, destination, compresslevel: int, known: dict, again: set | None = None):
        self.owned, self.known, self.again = isinstance(destination, Path), known, again
        self.output = destination.open("wb") if self.owned else destination
        self.gzip = GzipWriter(self.output, isal_level(compresslevel), GZIP_THREADS)
        # (device, inode), or a held file's path → (archived name, sha256): of the files listed ``again``
        # (``met_again``), or of every file when the caller does not say
        self.seen = {}
        self.offset, self.mtime = 0, int(time.time())

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace):
        try:
            if kind is None:  # the end of the archive: two empty blocks, then padding to a whole record
                self.write(bytes(BLOCK * 2))
                self.write(bytes(-self.offset % RECORD))
                self.gzip.close()  # the last blocks and the trailer
        finally:
            self.gzip.stop()
            if self.owned:
                self.output.close()

    def write(self, data: bytes) -> None:
        self.gzip.write(data)
        self.offset += len(data)

    def header(self, name: str, size: int, link: str = "") -> bytes:
        header = ustar_header(name, size, self.mtime, link)
        if header is not None:
            return header
        info = tarfile.TarInfo(name)
        info.size, info.mtime, info.mode = size, self.mtime, 0o644
        if link:
            info.type, info.linkname = tarfile.LNKTYPE, link
        return info.tobuf(tarfile.PAX_FORMAT, tarfile.ENCODING, "surrogateescape")

    def add(self, name: str, path: str, stat: Listed) -> str:
        key = stat.inode
        first = self.seen.get(key)  # a file met before (linked, or the same blob planned)
        if first:
            self.write(self.header(name, 0, link=first[0]))
            return first[1]
        size, digest = stat.size, self.known.get(key) or self.known.get(path)
        hashing = None if digest else hashlib.sha256()
        with open(path, "rb", buffering=0) as handle:
            piece, left = self.header(name, size), size
            for data in listed_bytes(handle, size, path, hashing):  # a small file: header, bytes, padding at once
                left -= len(data)
                self.write(piece + data + (b"" if left else bytes(-size % BLOCK)))
                piece = b""
            if piece:  # an empty file: its header alone
                self.write(piece)
        digest = digest or hashing.hexdigest()
        self.remember(key, name, digest)
        return digest

    def add_bytes(self, name: str, data: bytes) -> None:
        """A small file in one piece with its header; a large one (the manifest of a large export: megabytes) in
        pieces of ``CHUNK``, never copied whole."""
        if len(data) <= CHUNK:
            self.write(self.header(name, len(data)) + data + bytes(-len(data) % BLOCK))
            return
        self.write(self.header(name, len(data)))
        with memoryview(data) as view:
            for start in range(0, len(data), CHUNK):
                self.write(view[start : start + CHUNK])
        self.write(bytes(-len(data) % BLOCK))

    def add_taken(self, name: str, key: str, data: bytes, digest: str) -> str:
        """A file kept in memory (``data``, checked against ``digest``), stored once under ``key``: met again, a
        hard link to where it was first archived."""
        first = self.seen.get(key)
        if first:
            self.write(self.header(name, 0, link=first[0]))
            return first[1]
        if isinstance(data, DeflatedBytes):  # spliced in as it is
            self.write(self.header(name, data.size))
            self.gzip.splice(data)
            self.offset += data.size
            self.write(bytes(-data.size % BLOCK))
        else:
            self.add_bytes(name, data)
        self.remember(key, name, digest)
        return digest

    def remember(self, key, name: str, digest: str) -> None:
        if self.again is None or key in self.again:
            self.seen[key] = (name, digest)

    def add_deflated(self, name: str, file: DeflatedFile) -> str:
        self.write(self.header(name, file.size))
        self.gzip.splice(file)
        self.offset += file.size
        self.write(bytes(-file.size % BLOCK))
        return file.sha256


class ZipWriter:
    """A zip archive (into a file, or a stream: entries then carry data descriptors, as zipfile writes them)."""

    def __init__(self, destination, compresslevel: int, known: dict, again: set | None = None):
        self.known = known  # ``again`` unused: zip has no links, a file is stored under each of its names
        self.zip = zipfile.ZipFile(destination, "w", compresslevel=compresslevel, allowZip64=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.zip.close()

    def add(self, name: str, path: str, stat: Listed) -> str:
        info = self.info(name, stat.size)
        known = self.known.get(stat.inode) or self.known.get(path)
        digest = None if known else hashlib.sha256()
        with open(path, "rb") as handle, self.zip.open(info, "w", force_zip64=stat.size > 2**31) as out:
            for chunk in listed_bytes(handle, stat.size, path, digest):
                out.write(chunk)
        return known or digest.hexdigest()

    def add_bytes(self, name: str, data: bytes) -> None:
        self.zip.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED)

    def add_taken(self, name: str, key: str, data: bytes, digest: str) -> str:
        """A file kept in memory, checked against ``digest`` (zip has no links: stored under every name)."""
        self.zip.writestr(self.info(name), data.inflate() if isinstance(data, DeflatedBytes) else bytes(data))
        return digest

    @staticmethod
    def info(name: str, size: int = 0) -> zipfile.ZipInfo:
        """A member stored as it is when already compressed (``STORED_SUFFIXES``), else deflated."""
        stored = os.path.splitext(name)[1].lower() in STORED_SUFFIXES
        info = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
        info.compress_type, info.file_size = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED, size
        return info


def listed_bytes(handle, size: int, path: str, digest=None):
    """The file's first ``size`` bytes (its size when listed, which the manifest records), in pieces of up to
    ``CHUNK``, each added to ``digest`` when given; a file now shorter than that is an ``OSError``."""
    left = size
    while left:
        data = handle.read(min(left, CHUNK))
        if not data:
            raise OSError(f"{path} is shorter than when it was listed")
        left -= len(data)
        if digest is not None:
            digest.update(data)
        yield data


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
