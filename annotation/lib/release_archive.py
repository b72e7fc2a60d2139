"""A release uploaded as a ``.zip`` or ``.tar.gz`` (pure): its members checked, then unpacked safely.

The release may sit at the archive's top or in one folder (``weblinx/splits.json``). Refused, naming the part: a file
that is no such archive, a member that would land outside the folder (absolute, ``..``) or is a link or device, more
unpacked bytes than allowed, no ``splits.json`` or no ``demonstrations/`` beside it (a WebLINX release), no split
file (a Mind2Web release: ``train.json``, ``test_task_0.json``... anywhere in it).
"""

import struct
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .mind2web_release import SPLIT_FILE

MAX_MEMBERS = 500_000
ZIP_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}  # what unpacks
MAX_NAME_BYTES = 255  # a file or folder name most file systems take


class BadArchive(ValueError):
    """``part`` names what is wrong (``file``, ``splits.json``, a member's path); ``too_large`` for a size limit."""

    def __init__(self, part: str, message: str, too_large: bool = False):
        super().__init__(f"{part}: {message}")
        self.part, self.message, self.too_large = part, message, too_large


@dataclass(frozen=True)
class Member:
    name: str
    size: int
    is_file: bool


def members(path: Path) -> list[Member]:
    """The archive's members; ``BadArchive`` when it is neither a zip nor a (gzipped) tar, holds a link or (a tar)
    more than ``MAX_MEMBERS``."""
    if zipfile.is_zipfile(path):  # its end record only: the directory may still be damaged
        if zip_entries_over(path, MAX_MEMBERS):  # zipfile keeps every entry: counted first, without keeping them
            raise BadArchive("file", f"more than {MAX_MEMBERS} members", too_large=True)
        try:
            with zipfile.ZipFile(path) as archive:
                infos = archive.infolist()
        except (zipfile.BadZipFile, OSError, EOFError):
            raise BadArchive("file", "not a .zip or .tar.gz archive") from None
        for info in infos:
            if info.flag_bits & 0x1:
                raise BadArchive(info.filename, "encrypted: a release is unpacked without a password")
            if info.compress_type not in ZIP_METHODS:
                raise BadArchive(info.filename, "compressed with a method other than stored, deflate, bzip2 or lzma")
        return [Member(info.filename, info.file_size, not info.is_dir()) for info in infos]
    try:
        with tarfile.open(path, "r:*") as archive:
            found = []
            for info in archive:
                if not (info.isfile() or info.isdir()):
                    raise BadArchive(info.name, "links and special files are not accepted in a release")
                if len(found) == MAX_MEMBERS:  # a tar lists no count: stop reading (and keeping) members there
                    raise BadArchive("file", f"more than {MAX_MEMBERS} members", too_large=True)
                found.append(Member(info.name, info.size, info.isfile()))
            return found
    except (tarfile.TarError, EOFError, OSError):
        raise BadArchive("file", "not a .zip or .tar.gz archive") from None


ZIP_END, ZIP64_LOCATOR, ZIP64_END, ZIP_ENTRY = b"PK\x05\x06", b"PK\x06\x07", b"PK\x06\x06", b"PK\x01\x02"


def zip_entries_over(path: Path, limit: int) -> bool:
    """Whether the zip's central directory holds more than ``limit`` entries: its headers walked from where its end
    record (or the zip64 one) says it starts, up to the limit. False when it cannot be found (zipfile then says why)."""
    with path.open("rb") as handle:
        size = handle.seek(0, 2)
        handle.seek(max(0, size - 22 - 65535))
        tail = handle.read()
        end = tail.rfind(ZIP_END)
        if end < 0 or len(tail) < end + 22:
            return False
        end_at = size - len(tail) + end
        directory_size = struct.unpack("<L", tail[end + 12 : end + 16])[0]
        start = end_at - directory_size
        locator = tail[end - 20 : end] if end >= 20 else b""
        if locator[:4] == ZIP64_LOCATOR:  # the zip64 end record (56 bytes) comes before the locator
            handle.seek(max(0, end_at - 20 - 56))
            record = handle.read(56)
            if record[:4] == ZIP64_END:
                start = end_at - 20 - 56 - struct.unpack("<Q", record[40:48])[0]
        handle.seek(max(0, start))
        for _ in range(limit + 1):
            header = handle.read(46)
            if len(header) < 46 or header[:4] != ZIP_ENTRY:
                return False
            handle.seek(sum(struct.unpack("<3H", header[28:34])), 1)  # its name, extra field and comment
        return True


def check_members(found: list[Member], max_bytes: int, layout: Callable | None = None) -> str:
    """The release's folder inside the archive ("" or "name/"); ``BadArchive`` naming the first wrong part.
    ``layout(names)`` checks the format's files and finds that folder (default: a WebLINX release)."""
    if len(found) > MAX_MEMBERS:
        raise BadArchive("file", f"{len(found)} members; at most {MAX_MEMBERS}", too_large=True)
    total = 0
    for member in found:
        path = PurePosixPath(member.name)
        if path.is_absolute() or ".." in path.parts or "\\" in member.name:
            raise BadArchive(member.name, "a member's path must stay inside the archive")
        if any(len(part.encode()) > MAX_NAME_BYTES for part in path.parts):
            raise BadArchive(member.name[:80] + "…", f"a name in the path is over {MAX_NAME_BYTES} bytes")
        total += member.size
    if total > max_bytes:
        raise BadArchive("file", f"{total} bytes unpacked; at most {max_bytes} (IMPORT_MAX_UNPACKED_BYTES)", True)
    names = {member.name.rstrip("/") for member in found}
    files = {member.name for member in found if member.is_file}
    for name in sorted(names):
        parent = str(PurePosixPath(name).parent)
        if parent in files:
            raise BadArchive(parent, "is both a file and a folder in the archive")
    return (layout or weblinx_root)(names)


def weblinx_root(names: set) -> str:
    """The folder holding ``splits.json`` and ``demonstrations/``, at the top or one folder down."""
    roots = sorted(name.removesuffix("splits.json") for name in names if name.endswith("splits.json"))
    roots = [root for root in roots if root.count("/") <= 1 and (root == "" or root.endswith("/"))]
    if not roots:
        raise BadArchive("splits.json", "missing: the release's split file (at the top or in one folder)")
    root = roots[0]
    if not any(name.startswith(f"{root}demonstrations/") for name in names):
        raise BadArchive(f"{root}demonstrations/", "missing: the release keeps one folder per demo there")
    return root


def mind2web_root(names: set) -> str:
    """A Mind2Web release has split files (``train.json``, ``train/train_0.json``...) anywhere: its top is the root."""
    if not any(SPLIT_FILE.fullmatch(PurePosixPath(name).name) for name in names):
        raise BadArchive("file", "no split file (train.json, test_task.json, test_website.json, test_domain.json)")
    return ""


def unpack(path: Path, into: Path, max_bytes: int, layout: Callable | None = None) -> Path:
    """Check the archive and unpack it under ``into``; returns the release's folder."""
    root = check_members(members(path), max_bytes, layout)
    into.mkdir(parents=True, exist_ok=True)
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                archive.extractall(into)
        else:
            with tarfile.open(path, "r:*") as archive:
                archive.extractall(into, filter="data")
    except (OSError, tarfile.TarError, zipfile.BadZipFile, NotImplementedError, RuntimeError) as error:  # no paths
        raise BadArchive("file", f"could not be unpacked ({getattr(error, 'strerror', None) or 'damaged'})") from None
    return into / root
