"""A pack's blobs kept in memory for the archive (``PackWriter``'s ``hold``, ``RemoteStorageBlobs.held``): only
checked blobs are kept, the room reserved for one that fails or is cut short is given back, blobs past the room go
to cache files, and an archive made from blobs in memory is the one made from files (links for a blob named twice,
zip as tar.gz), each blob's memory given back once archived under every name planned for it."""

import hashlib
import io
import json
import os
import struct
import tarfile
import zipfile

import pytest
from django.core.files.storage import default_storage
from isal import isal_zlib

from annotation.models import ExportJob, JobStatus
from tests.support.corpus import ingest_corpus
from tests.support.held import Arriving, Room
from tests.support.payloads import sha
from workers.exports import packs
from workers.exports.archive import write_archive
from workers.exports.dataset import RemoteStorageBlobs
from workers.exports.jobs import run_export
from workers.exports.packs import MAGIC, PackWriter

PAGE = b"<html>" + b"".join(b"<p>item %d of the page</p>" % n for n in range(3000)) + b"</html>"
NOISE = b"".join(hashlib.sha256(str(n).encode()).digest() for n in range(700))
BLOBS = [PAGE, NOISE, b"{}"]


def pack_bytes(blobs=BLOBS, listed=None) -> bytes:
    """A deflated pack of ``blobs``, its index naming ``listed`` (sha256s; by default the blobs' own)."""
    listed = listed or [sha(blob) for blob in blobs]
    index = json.dumps({"blobs": [[name, len(blob)] for name, blob in zip(listed, blobs, strict=True)]}).encode()
    return MAGIC + struct.pack(">Q", len(index)) + index + isal_zlib.compress(b"".join(blobs), 1)


def unpack(data: bytes, cache, room: Room, piece: int = 1000, wanted=None) -> PackWriter:
    writer = PackWriter(wanted if wanted is not None else [sha(blob) for blob in BLOBS], cache, room)
    for start in range(0, len(data), piece):
        writer.write(data[start : start + piece])
    writer.close()
    return writer


@pytest.mark.parametrize("piece", [1, 999, 10**7])
def test_checked_blobs_are_kept_in_memory_and_no_file_is_made(tmp_path, piece):
    room = Room(10**9)
    writer = unpack(pack_bytes(), tmp_path, room, piece)
    assert writer.held == {sha(blob): blob for blob in BLOBS}
    assert writer.found == set(writer.held)
    assert room.used == sum(map(len, BLOBS))
    assert list(tmp_path.iterdir()) == []


def test_a_blob_that_fails_its_check_gives_its_room_back_and_is_not_kept(tmp_path):
    wrong = sha(b"something else")
    room = Room(10**9)
    writer = unpack(pack_bytes(listed=[sha(PAGE), wrong, sha(b"{}")]), tmp_path, room, wanted=[sha(PAGE), wrong])
    assert set(writer.held) == writer.found == {sha(PAGE)}
    assert room.used == len(PAGE)
    assert -len(NOISE) in room.calls


def test_a_body_cut_short_gives_the_room_of_the_blob_it_was_in_back(tmp_path):
    data = pack_bytes()
    room = Room(10**9)
    writer = PackWriter([sha(blob) for blob in BLOBS], tmp_path, room)
    writer.write(data[: data.index(b"]]}") + 3 + 100])  # the head, then a hundred bytes into the page's
    assert writer.held == {}
    writer.close()
    assert room.used == 0
    assert writer.found == set()
    assert list(tmp_path.iterdir()) == []


def test_blobs_past_the_room_go_to_cache_files(tmp_path):
    room = Room(len(PAGE) + 2)  # the page fits; the noise, 22 KB, does not; then the 2-byte blob fits again
    writer = unpack(pack_bytes(), tmp_path, room)
    assert set(writer.held) == {sha(PAGE), sha(b"{}")}
    assert [path.name for path in tmp_path.iterdir()] == [sha(NOISE)]
    assert (tmp_path / sha(NOISE)).read_bytes() == NOISE
    assert writer.found == {sha(blob) for blob in BLOBS}


def members(path, archive_format: str) -> dict:
    if archive_format == "zip":
        with zipfile.ZipFile(path) as archive:
            return {name: ("file", "", archive.read(name)) for name in archive.namelist()}
    with tarfile.open(path) as archive:
        return {
            member.name: (member.type, member.linkname, archive.extractfile(member).read() if member.isfile() else b"")
            for member in archive.getmembers()
        }


@pytest.mark.parametrize("archive_format", ["tar.gz", "zip"])
def test_an_archive_of_blobs_in_memory_is_the_archive_of_the_same_blobs_in_files(tmp_path, archive_format):
    root, cache = tmp_path / "out", tmp_path / "cache"
    root.mkdir()
    cache.mkdir()
    (root / "replay.json").write_text("{}")
    for blob in BLOBS:
        (cache / sha(blob)).write_bytes(blob)
    planned = {  # the page planned under two names: archived once, then a link (tar.gz)
        str(root / "a" / "page.html"): str(cache / sha(PAGE)),
        str(root / "b" / "page.html"): str(cache / sha(PAGE)),
        str(root / "a" / "shot.png"): str(cache / sha(NOISE)),
        str(root / "a" / "boxes.json"): str(cache / sha(b"{}")),
    }
    known = {file: os.path.basename(file) for file in planned.values()}
    from_files = write_archive(
        root, tmp_path / f"files.{archive_format}", archive_format, planned=planned, known=known, top="x"
    )

    arriving = Arriving({sha(PAGE): bytearray(PAGE), sha(NOISE): bytearray(NOISE)})  # the boxes stay a file
    for blob in (PAGE, NOISE):
        (cache / sha(blob)).unlink()  # kept in memory only
    from_memory = write_archive(
        root,
        tmp_path / f"memory.{archive_format}",
        archive_format,
        planned=planned,
        arriving=arriving,
        known=known,
        top="x",
    )
    assert from_memory == from_files
    assert from_memory["a/page.html"] == {"sha256": sha(PAGE), "size": len(PAGE)}
    assert members(tmp_path / f"memory.{archive_format}", archive_format) == members(
        tmp_path / f"files.{archive_format}", archive_format
    )
    assert sorted(arriving.released) == sorted([sha(PAGE), sha(NOISE)])  # each once, after its last name
    assert arriving.held == {}


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_an_s3_export_is_the_same_whether_its_blobs_are_held_in_memory_or_in_cache_files(
    s3_storage, researcher, monkeypatch
):
    """Two demos packed, one read blob by blob; the job with room for every blob, for some, and for none (every
    pack's blob in a cache file, as before): the same archive, member for member, and the same manifest."""
    demos = ingest_corpus(project="alpha", demos=3, turns=10, elements=80, seed=21)
    for demo in demos[:2]:
        packs.pack_demo(demo)
    archives = []
    for room in (RemoteStorageBlobs.HOLD_BYTES, 60_000, 0):
        monkeypatch.setattr(RemoteStorageBlobs, "HOLD_BYTES", room)
        job = ExportJob.objects.create(
            project=demos[0].project, owner=researcher, format="weblinx", statuses=["validated"]
        )
        run_export(job.pk)
        job.refresh_from_db()
        assert job.status == JobStatus.DONE, job.error
        with (
            default_storage.open(job.file.name, "rb") as handle,
            tarfile.open(fileobj=io.BytesIO(handle.read())) as tar,
        ):
            archived = {
                member.name.partition("/")[2]: (member.type, member.linkname.partition("/")[2])
                + ((tar.extractfile(member).read(),) if member.isfile() else ())
                for member in tar.getmembers()
            }
        archived.pop("quality.json")  # carries the time it was made
        manifest = json.loads(archived.pop("manifest.json")[2])["files"]
        manifest.pop("quality.json")
        archives.append((archived, manifest))
    assert archives[0] == archives[1] == archives[2]
    assert any(kind == tarfile.LNKTYPE for kind, *_ in archives[0][0].values())  # a blob used twice: archived once
