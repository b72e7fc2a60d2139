"""Attacks on a pack's blobs kept in memory for an S3 export's archive (``PackWriter.held``, ``RemoteStorageBlobs``'s
``hold``, ``taken``, ``release``, ``holding``; ``write_archive``'s ``add_taken``): a blob that fails its sha256 is
never archived nor read, the room reserved comes back to 0 (retried GETs, packs cut short, a sha listed twice,
zero-size blobs, an index that lies about sizes, failures and cancels), a blob named more than once is given back
after its last name only, and archives made from blobs in memory, partly in memory and in cache files are the same
member for member. Every waiter runs in a thread of its own and is given a few seconds: a hang is "still waiting"."""

import hashlib
import io
import json
import logging
import os
import struct
import tarfile
import threading
import types
import zipfile

import pytest
from _pytest.logging import LogCaptureHandler
from django.core.files.storage import default_storage
from isal import isal_zlib

from annotation.models import ExportJob, JobStatus, sha256_path
from tests.support.corpus import ingest_corpus
from tests.support.held import PATIENCE, Arriving, Room, in_threads
from workers.exports import packs
from workers.exports.archive import write_archive
from workers.exports.dataset import RemoteStorageBlobs
from workers.exports.jobs import run_export
from workers.exports.packs import MAGIC, PackWriter, pack_name

PAGE = b"<html>" + b"".join(b"<p>item %d of the page</p>" % n for n in range(3000)) + b"</html>"
NOISE = b"".join(hashlib.sha256(str(n).encode()).digest() for n in range(700))
BOXES = b'{"1": [0, 0, 10, 10]}'
EMPTY = b""


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pack_bytes(entries) -> bytes:
    """A deflated pack of ``entries`` (``(listed sha256, listed size, bytes)``: an index that may lie)."""
    index = json.dumps({"blobs": [[name, size] for name, size, _ in entries]}).encode()
    return MAGIC + struct.pack(">Q", len(index)) + index + isal_zlib.compress(b"".join(data for *_, data in entries), 1)


def honest(*blobs) -> list:
    return [(sha(blob), len(blob), blob) for blob in blobs]


def feed(writer: PackWriter, data: bytes, piece: int = 997) -> None:
    for start in range(0, len(data), piece):
        writer.write(data[start : start + piece])


# --- PackWriter's room, unit by unit ---------------------------------------------------------------------------


@pytest.mark.parametrize("cut", [30, 400, 5000, 40_000])
def test_a_retried_get_holds_each_blob_once_and_reserves_its_room_once(tmp_path, cut):
    """A GET cut short after ``cut`` bytes, then retried (``seek(0)``): the blob it was in gives its room back, the
    ones complete before stay held, nothing is reserved twice."""
    data = pack_bytes(honest(PAGE, NOISE, BOXES))
    room = Room(10**9)
    writer = PackWriter([sha(PAGE), sha(NOISE), sha(BOXES)], tmp_path, room)
    feed(writer, data[:cut])
    writer.seek(0)
    feed(writer, data)
    writer.close()
    assert writer.held == {sha(blob): blob for blob in (PAGE, NOISE, BOXES)}
    assert room.used == len(PAGE) + len(NOISE) + len(BOXES)
    assert room.lowest == 0
    assert list(tmp_path.iterdir()) == []


def test_a_sha_listed_twice_is_held_once(tmp_path):
    room = Room(10**9)
    writer = PackWriter([sha(PAGE), sha(BOXES)], tmp_path, room)
    feed(writer, pack_bytes(honest(PAGE, PAGE, BOXES, BOXES)))
    writer.close()
    assert writer.held == {sha(PAGE): PAGE, sha(BOXES): BOXES}
    assert room.used == len(PAGE) + len(BOXES)


def test_a_bad_first_copy_then_a_good_one_holds_the_good_one_and_reserves_once(tmp_path):
    room = Room(10**9)
    writer = PackWriter([sha(PAGE)], tmp_path, room)
    feed(writer, pack_bytes([(sha(PAGE), len(PAGE), PAGE[::-1]), (sha(PAGE), len(PAGE), PAGE)]))
    writer.close()
    assert writer.held == {sha(PAGE): PAGE}
    assert room.used == len(PAGE)
    assert room.lowest == 0


@pytest.mark.parametrize(
    "entries",
    [
        [(sha(PAGE), len(PAGE) + 10, PAGE)],  # longer than the body: cut short
        [(sha(PAGE), len(PAGE) - 10, PAGE)],  # shorter: the bytes do not match, the rest is beyond the index
        [(sha(PAGE), 10**6, PAGE), (sha(BOXES), len(BOXES), BOXES)],  # swallows the next blob
        [(sha(PAGE), len(NOISE), NOISE), (sha(NOISE), len(PAGE), PAGE)],  # sizes and bytes swapped
        [(sha(EMPTY), 5, b"12345")],  # "empty" but not
    ],
)
def test_an_index_that_lies_about_sizes_holds_nothing_and_gives_every_room_back(tmp_path, entries):
    room = Room(10**9)
    writer = PackWriter([sha(PAGE), sha(NOISE), sha(BOXES), sha(EMPTY)], tmp_path, room)
    feed(writer, pack_bytes(entries))
    writer.close()
    held = {name: bytes(data) for name, data in writer.held.items()}
    assert all(sha(data) == name for name, data in held.items())  # only what matches its sha256
    assert sha(PAGE) not in held
    assert room.used == sum(map(len, held.values()))
    assert room.lowest == 0
    assert list(tmp_path.iterdir()) == []


def test_zero_size_blobs_are_held_wherever_they_are_in_the_pack(tmp_path):
    room = Room(0)  # no room at all: a zero-size blob still fits
    writer = PackWriter([sha(EMPTY), sha(BOXES)], tmp_path, room)
    feed(writer, pack_bytes(honest(EMPTY, BOXES, EMPTY)), piece=1)
    writer.close()
    assert writer.held == {sha(EMPTY): b""}
    assert writer.found == {sha(EMPTY), sha(BOXES)}
    assert (tmp_path / sha(BOXES)).read_bytes() == BOXES
    assert room.used == 0


# --- write_archive with blobs in memory ------------------------------------------------------------------------


def archive_members(path, archive_format: str) -> dict:
    """Every member: its kind, link, bytes, and for zip how it is stored (all but the time)."""
    if archive_format == "zip":
        with zipfile.ZipFile(path) as archive:
            return {
                info.filename: (info.compress_type, info.external_attr, info.file_size, archive.read(info))
                for info in archive.infolist()
            }
    with tarfile.open(path) as archive:
        return {
            member.name: (member.type, member.linkname, member.mode, member.size)
            + ((archive.extractfile(member).read(),) if member.isfile() else ())
            for member in archive.getmembers()
        }


def planned_tree(tmp_path):
    """An export folder and the cache: the page named three times (interleaved with other blobs), the empty blob
    twice, the noise (a .png: stored in a zip) and the boxes once each."""
    root, cache = tmp_path / "out", tmp_path / "cache"
    root.mkdir()
    cache.mkdir()
    (root / "replay.json").write_text("{}")
    for blob in (PAGE, NOISE, BOXES, EMPTY):
        (cache / sha(blob)).write_bytes(blob)
    planned = {
        str(root / "a" / "page.html"): str(cache / sha(PAGE)),
        str(root / "a" / "shot.png"): str(cache / sha(NOISE)),
        str(root / "b" / "empty.json"): str(cache / sha(EMPTY)),
        str(root / "b" / "page.html"): str(cache / sha(PAGE)),
        str(root / "c" / "boxes.json"): str(cache / sha(BOXES)),
        str(root / "c" / "empty.json"): str(cache / sha(EMPTY)),
        str(root / "d" / "page.html"): str(cache / sha(PAGE)),
    }
    known = {file: os.path.basename(file) for file in planned.values()}
    return root, cache, planned, known


@pytest.mark.parametrize("archive_format", ["tar.gz", "zip"])
@pytest.mark.parametrize("in_memory", [(PAGE, NOISE, BOXES, EMPTY), (PAGE, EMPTY), (NOISE,)])
def test_an_archive_with_blobs_in_memory_is_the_archive_from_files_member_for_member(
    tmp_path, archive_format, in_memory
):
    root, cache, planned, known = planned_tree(tmp_path)
    from_files = write_archive(
        root, tmp_path / f"files.{archive_format}", archive_format, planned=planned, known=known, top="x"
    )
    arriving = Arriving({sha(blob): bytearray(blob) for blob in in_memory})
    for blob in in_memory:
        (cache / sha(blob)).unlink()
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
    assert archive_members(tmp_path / f"memory.{archive_format}", archive_format) == archive_members(
        tmp_path / f"files.{archive_format}", archive_format
    )
    assert arriving.held == {}
    released = [name for call, name in arriving.calls if call == "release"]
    assert sorted(released) == sorted(sha(blob) for blob in in_memory)  # each once
    for name in released:  # after its last name only
        last_taken = max(n for n, call in enumerate(arriving.calls) if call == ("taken", name))
        assert arriving.calls.index(("release", name)) == last_taken + 1


def test_the_archive_progress_never_passes_one_with_blobs_in_memory(tmp_path):
    """Every blob arrived before the archive starts: from files, the fractions end at 1; blobs in memory (which
    have no file for ``size_now`` to look at) must not make it pass 1 after the first few files and stay there."""
    root, cache, planned, known = planned_tree(tmp_path)
    from_files, from_memory = [], []
    write_archive(root, tmp_path / "files.tar.gz", planned=planned, known=known, progress=from_files.append)
    arriving = Arriving({sha(blob): bytearray(blob) for blob in (PAGE, NOISE)})
    for blob in (PAGE, NOISE):
        (cache / sha(blob)).unlink()
    write_archive(
        root, tmp_path / "mem.tar.gz", planned=planned, known=known, arriving=arriving, progress=from_memory.append
    )
    assert max(from_files) == pytest.approx(1)
    assert max(from_memory) <= 1.0 + 1e-9, f"progress reached {max(from_memory):.1f}"


# --- RemoteStorageBlobs on a real S3 server --------------------------------------------------------------------


def stored_blob(data: bytes) -> str:
    default_storage.save(sha256_path(sha(data)), io.BytesIO(data))
    return sha(data)


def stored_pack(demo_name: str, entries) -> None:
    default_storage.save(pack_name(demo_name), io.BytesIO(pack_bytes(entries)))


def demo(name: str, *turns):
    """A demo of ``turns`` (``(page, bboxes, screenshot)`` sha256s)."""
    rows = tuple(types.SimpleNamespace(page=p, bboxes=b, screenshot=s) for p, b, s in turns)
    return types.SimpleNamespace(name=name, turns=rows)


class Watched(RemoteStorageBlobs):
    """``RemoteStorageBlobs`` noting the lowest ``holding`` ever seen after a ``hold`` or ``release``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lowest = 0

    def hold(self, size: int) -> bool:
        answer = super().hold(size)
        self.lowest = min(self.lowest, self.holding)
        return answer

    def release(self, file: str) -> None:
        super().release(file)
        self.lowest = min(self.lowest, self.holding)


def plan(blobs, root, names: dict) -> None:
    """``{path under root: sha256}`` noted with ``copy_to`` (an export job's blobs are only noted)."""
    for name, blob_sha in names.items():
        blobs.copy_to(blob_sha, str(root / name))


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("archive_format", ["tar.gz", "zip"])
def test_every_held_blob_archived_gives_all_its_room_back_and_read_still_answers(s3_storage, tmp_path, archive_format):
    page, noise, boxes, empty = (stored_blob(blob) for blob in (PAGE, NOISE, BOXES, EMPTY))
    stored_pack("one", honest(PAGE, NOISE, BOXES, EMPTY))
    root = tmp_path / "out"
    root.mkdir()
    blobs = Watched(tmp_path / "cache", planned=True)
    with blobs:
        list(blobs.prefetch([demo("one", (page, boxes, noise), (page, empty, None))]))
        plan(blobs, root, {"a/page.html": page, "b/page.html": page, "a/shot.png": noise, "a/boxes.json": boxes})
        plan(blobs, root, {"b/empty.json": empty, "c/empty.json": empty})
        manifest = write_archive(
            root, tmp_path / f"x.{archive_format}", archive_format, planned=blobs.files(), arriving=blobs, top="x"
        )
        assert blobs.holding == 0
        assert blobs.held == {}
        assert not list((tmp_path / "cache").iterdir())  # no cache file made
        assert in_threads(blobs.read, [page, noise, boxes, empty]) == [PAGE, NOISE, BOXES, EMPTY]  # read again
    assert manifest["b/page.html"] == {"sha256": page, "size": len(PAGE)}
    assert manifest["c/empty.json"] == {"sha256": empty, "size": 0}
    assert blobs.lowest == 0
    assert blobs.holding == 0
    assert in_threads(blobs.read, [page, empty]) == [PAGE, EMPTY]  # after the block too


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_blobs_only_read_and_never_archived_do_not_keep_their_room_for_the_rest_of_the_job(s3_storage, tmp_path):
    """Mind2Web reads each turn's page and boxes (``read``) and archives only snapshots and screenshots; a demo left
    out (rejected) is prefetched and never written. Held blobs no name was planned for are never taken, so never
    given back: once the archive is done nothing may stay held (on a full export they fill ``HOLD_BYTES`` for the
    whole job and push every later pack's blobs to cache files)."""
    page, noise, boxes = (stored_blob(blob) for blob in (PAGE, NOISE, BOXES))
    stored_pack("one", honest(PAGE, NOISE, BOXES))
    root = tmp_path / "out"
    root.mkdir()
    with Watched(tmp_path / "cache", planned=True) as blobs:
        list(blobs.prefetch([demo("one", (page, boxes, noise))]))
        assert blobs.read(page) == PAGE
        assert blobs.read(boxes) == BOXES
        plan(blobs, root, {"shot.png": noise})  # what it archives
        write_archive(root, tmp_path / "x.tar.gz", planned=blobs.files(), arriving=blobs, top="x")
        left = {name: len(data) for name, data in blobs.held.items()}
        assert (blobs.holding, left) == (0, {}), "held for the rest of the job, though nothing will take them"


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_a_pack_blob_that_does_not_match_is_never_archived_nor_read(s3_storage, tmp_path):
    """The pack's copy of the page is wrong (same size, other bytes) and the boxes' is cut short: both read on
    their own, right; nothing wrong archived, returned or kept."""
    page, boxes, noise = (stored_blob(blob) for blob in (PAGE, BOXES, NOISE))
    wrong = PAGE[:100] + b"X" + PAGE[101:]
    stored_pack("one", [(page, len(PAGE), wrong), (noise, len(NOISE), NOISE), (boxes, len(BOXES) + 1000, BOXES)])
    root = tmp_path / "out"
    root.mkdir()
    with Watched(tmp_path / "cache", planned=True) as blobs:
        list(blobs.prefetch([demo("one", (page, boxes, noise))]))
        assert in_threads(blobs.read, [page, boxes]) == [PAGE, BOXES]
        plan(blobs, root, {"a/page.html": page, "a/boxes.json": boxes, "a/shot.png": noise, "b/page.html": page})
        manifest = write_archive(root, tmp_path / "x.tar.gz", planned=blobs.files(), arriving=blobs, top="x")
        assert blobs.holding == 0
        assert page not in blobs.held
    assert blobs.lowest == 0
    with tarfile.open(tmp_path / "x.tar.gz") as tar:
        assert tar.extractfile("x/a/page.html").read() == PAGE
        assert tar.extractfile("x/a/boxes.json").read() == BOXES
        assert tar.getmember("x/b/page.html").linkname == "x/a/page.html"
    assert manifest["a/page.html"]["sha256"] == page


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_a_pack_listing_a_blob_claimed_by_another_demo_holds_it_once(s3_storage, tmp_path):
    """Two demos' packs hold the same page; it is claimed (and held) by the first only, given back once."""
    page, noise, boxes = (stored_blob(blob) for blob in (PAGE, NOISE, BOXES))
    stored_pack("one", honest(PAGE, BOXES))
    stored_pack("two", honest(PAGE, NOISE, PAGE))
    root = tmp_path / "out"
    root.mkdir()
    with Watched(tmp_path / "cache", planned=True) as blobs:
        list(blobs.prefetch([demo("one", (page, boxes, None)), demo("two", (page, None, noise))]))
        plan(blobs, root, {"one/page.html": page, "one/boxes.json": boxes, "two/page.html": page, "two/s.png": noise})
        write_archive(root, tmp_path / "x.tar.gz", planned=blobs.files(), arriving=blobs, top="x")
        assert blobs.holding == 0
        assert blobs.held == {}
    assert blobs.lowest == 0


class Failed(Exception):
    pass


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("archive_format", ["tar.gz", "zip"])
def test_an_archive_failing_midway_leaves_no_memory_held_and_no_waiter_waiting(s3_storage, tmp_path, archive_format):
    """The archive fails after its first blob (a page named twice: taken once, not given back yet); leaving the
    block frees what is held, and ``read`` (inside the block or after) still answers."""
    page, noise, boxes = (stored_blob(blob) for blob in (PAGE, NOISE, BOXES))
    stored_pack("one", honest(PAGE, NOISE, BOXES))
    root = tmp_path / "out"
    root.mkdir()
    blobs = Watched(tmp_path / "cache", planned=True)
    calls = []

    def progress(fraction):
        calls.append(fraction)
        if len(calls) == 1:
            raise Failed("cancelled")

    def export():
        with blobs:
            list(blobs.prefetch([demo("one", (page, boxes, noise))]))
            plan(blobs, root, {"a/page.html": page, "b/page.html": page, "a/s.png": noise, "a/boxes.json": boxes})
            write_archive(
                root, tmp_path / f"x.{archive_format}", archive_format, progress, planned=blobs.files(), arriving=blobs
            )

    with pytest.raises(Failed):
        export()
    assert blobs.holding == 0
    assert blobs.held == {}
    assert blobs.lowest == 0
    assert all(claim.is_set() for claim in blobs.claims.values())
    assert in_threads(blobs.read, [page, noise, boxes]) == [PAGE, NOISE, BOXES]
    assert in_threads(blobs.wait, [str(tmp_path / "cache" / page)]) == ["FileNotFoundError"]  # answered, not hung


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_reads_racing_the_archive_always_get_the_right_bytes(s3_storage, tmp_path):
    """A reader thread reads every blob over and over while the archive takes and gives them back: each read
    answers with the blob's bytes (from memory, or from storage once given back), never None, never a hang."""
    blobs_bytes = [PAGE, NOISE, BOXES] + [b"<html>%d</html>" % n * (n + 1) for n in range(20)]
    shas = [stored_blob(blob) for blob in blobs_bytes]
    stored_pack("one", honest(*blobs_bytes))
    root = tmp_path / "out"
    root.mkdir()
    wrong, stop = [], threading.Event()
    with Watched(tmp_path / "cache", planned=True) as blobs:

        def reader():
            while not stop.is_set():
                for blob_sha, blob in zip(shas, blobs_bytes, strict=True):
                    if blobs.read(blob_sha) != blob:
                        wrong.append(blob_sha)

        list(blobs.prefetch([demo("one", *[(blob_sha, None, None) for blob_sha in shas])]))
        plan(blobs, root, {f"{n:02d}/x.html": blob_sha for n, blob_sha in enumerate(shas)})
        thread = threading.Thread(target=reader, daemon=True)
        thread.start()
        write_archive(root, tmp_path / "x.tar.gz", planned=blobs.files(), arriving=blobs, top="x")
        stop.set()
        thread.join(PATIENCE)
        assert not thread.is_alive()
        assert blobs.holding == 0
    assert wrong == []
    assert blobs.lowest == 0


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("archive_format", ["tar.gz", "zip"])
def test_room_running_out_mid_pack_makes_the_same_archive(s3_storage, tmp_path, archive_format):
    """No room, room for some of a pack (the rest to cache files), room for all: the same members and manifest."""
    blobs_bytes = [PAGE, NOISE, BOXES, EMPTY]
    shas = [stored_blob(blob) for blob in blobs_bytes]
    stored_pack("one", honest(*blobs_bytes))
    names = {"a/page.html": shas[0], "b/page.html": shas[0], "a/s.png": shas[1], "a/boxes.json": shas[2]}
    names |= {"a/e.json": shas[3], "b/e.json": shas[3], "c/page.html": shas[0]}
    made = []
    for room in (0, len(PAGE) + len(BOXES), 10**9):
        root = tmp_path / f"out{room}"
        root.mkdir()
        with Watched(tmp_path / f"cache{room}", planned=True) as blobs:
            blobs.HOLD_BYTES = room
            list(blobs.prefetch([demo("one", *[(blob_sha, None, None) for blob_sha in shas])]))
            plan(blobs, root, names)
            path = tmp_path / f"{room}.{archive_format}"
            manifest = write_archive(root, path, archive_format, planned=blobs.files(), arriving=blobs, top="x")
            in_files = sorted(p.name for p in (tmp_path / f"cache{room}").iterdir())
            assert blobs.holding == 0
            assert blobs.lowest == 0
        made.append((manifest, archive_members(path, archive_format)))
        if room == len(PAGE) + len(BOXES):
            assert in_files == [shas[1]]  # the noise only: past the room
    assert made[0] == made[1] == made[2]


# --- whole jobs ------------------------------------------------------------------------------------------------


def job_archive(job) -> dict:
    """The job's archive: each member's kind, link and bytes (quality.json, which carries a time, left out)."""
    with default_storage.open(job.file.name, "rb") as handle:
        data = handle.read()
    if job.archive_format == "zip":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            found = {
                info.filename.partition("/")[2]: (info.compress_type, info.external_attr, archive.read(info))
                for info in archive.infolist()
            }
    else:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            found = {
                member.name.partition("/")[2]: (member.type, member.linkname.partition("/")[2])
                + ((tar.extractfile(member).read(),) if member.isfile() else ())
                for member in tar.getmembers()
            }
    found.pop("quality.json")
    manifest = json.loads(found.pop("manifest.json")[-1])["files"]
    manifest.pop("quality.json")
    return {"members": found, "manifest": manifest}


def watched_exits(monkeypatch) -> list:
    """Each ``RemoteStorageBlobs`` block's ``(holding, held blobs)`` as it is left, before its own cleanup."""
    seen, leave = [], RemoteStorageBlobs.__exit__

    def noting(self, kind, error, trace):
        seen.append((self.holding, len(self.held), kind))
        return leave(self, kind, error, trace)

    monkeypatch.setattr(RemoteStorageBlobs, "__exit__", noting)
    return seen


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("scheme", "archive_format"), [("weblinx", "zip"), ("weblinx", "tar.gz"), ("mind2web", "zip")])
def test_an_s3_job_is_the_same_held_or_not_and_ends_with_nothing_held(
    s3_storage, researcher, monkeypatch, scheme, archive_format
):
    demos = ingest_corpus(project="alpha", demos=3, turns=6, elements=40, seed=5)
    for one in demos[:2]:
        packs.pack_demo(one)
    exits = watched_exits(monkeypatch)
    archives = []
    for room in (RemoteStorageBlobs.HOLD_BYTES, 30_000, 0):
        monkeypatch.setattr(RemoteStorageBlobs, "HOLD_BYTES", room)
        job = ExportJob.objects.create(
            project=demos[0].project,
            owner=researcher,
            format=scheme,
            statuses=["validated"],
            archive_format=archive_format,
        )
        run_export(job.pk)
        job.refresh_from_db()
        assert job.status == JobStatus.DONE, job.error
        archives.append(job_archive(job))
    assert archives[0] == archives[1] == archives[2]
    assert [(holding, held) for holding, held, _ in exits] == [(0, 0)] * 3, "blobs still held once archived"


class Broken(Exception):
    pass


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("outcome", ["done", "archive fails", "a pack's blob cannot be looked at"])
def test_no_pack_writer_nor_blob_source_outlives_its_job(s3_storage, researcher, monkeypatch, outcome):
    """Once the job has ended (done or failed), nothing keeps a pack's blobs in memory: no ``PackWriter`` (whose
    ``held`` shares the bytes with ``RemoteStorageBlobs.held``) and no ``RemoteStorageBlobs`` is still alive,
    e.g. through a failure's traceback kept in ``errors``."""
    import gc
    import weakref
    from pathlib import Path

    from workers.exports import jobs

    demos = ingest_corpus(project="alpha", demos=2, turns=6, elements=40, seed=9)
    for one in demos:
        packs.pack_demo(one)
    monkeypatch.setattr(RemoteStorageBlobs, "HOLD_BYTES", 40_000)  # some blobs held, some in cache files
    alive = weakref.WeakSet()
    for kind in (PackWriter, RemoteStorageBlobs):
        start = kind.__init__

        def noting(self, *args, _start=start, **kwargs):
            _start(self, *args, **kwargs)
            alive.add(self)

        monkeypatch.setattr(kind, "__init__", noting)
    if outcome == "archive fails":
        real = jobs.write_archive

        def failing(*args, **kwargs):
            calls = []

            def progress(fraction):
                calls.append(fraction)
                if len(calls) == 3:
                    raise Broken("the archive failed")

            return real(*args[:3], progress, *args[4:], **kwargs)

        monkeypatch.setattr(jobs, "write_archive", failing)
    elif outcome != "done":
        real_stat = Path.stat

        def stat(self, *args, **kwargs):
            if self.parent.name == "blobs" and len(self.name) == 64:
                raise OSError(5, "Input/output error")
            return real_stat(self, *args, **kwargs)

        monkeypatch.setattr(Path, "stat", stat)
    job = ExportJob.objects.create(project=demos[0].project, owner=researcher, format="weblinx", statuses=["validated"])
    run_export(job.pk)
    job.refresh_from_db()
    assert (job.status == JobStatus.DONE) == (outcome == "done"), job.error
    for handler in logging.getLogger().handlers:  # pytest keeps the failure's log record, and so its traceback
        if isinstance(handler, LogCaptureHandler):
            handler.records.clear()  # in place: pytest's stash holds the same list
    gc.collect()
    assert [type(thing).__name__ for thing in alive] == []
