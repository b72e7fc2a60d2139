"""An export's archive keeps little per file: a listing of (size, inode) freed once the file is archived, the manifest
as (sha256, size) pairs written out in pieces, only files met again remembered for their hard links, and a local
export's plan handed over once. What the bench's ``export_full`` measures as peak memory at a tenth against a
twentieth (docs/benchmarks.md) depends on these; here each is checked on its own, and the archive's own memory per
file is bounded (tracemalloc counts allocations, not time: the same on a busy machine)."""

import hashlib
import io
import json
import os
import tarfile
import tracemalloc

import pytest

from workers.exports.archive import CHUNK, Listed, Manifest, TarWriter, files_under, met_again, write_archive
from workers.exports.exporters.base import PlannedBlobs


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def blob_store(tmp_path, count: int) -> tuple[dict, PlannedBlobs]:
    """``count`` small blobs stored under their sha256 and a ``PlannedBlobs`` over them."""
    store = tmp_path / "blobs"
    store.mkdir()
    shas = {}
    for n in range(count):
        data = b"blob %d " % n * 3
        (store / sha(data)).write_bytes(data)
        shas[n] = sha(data)
    return shas, PlannedBlobs(lambda digest: os.fspath(store / digest))


def members(archive) -> dict:
    with tarfile.open(archive) as tarred:
        return {member.name: member for member in tarred.getmembers()}


def test_the_listing_keeps_a_size_and_an_inode_not_the_stat(tmp_path):
    root = tmp_path / "export"
    root.mkdir()
    (root / "a.json").write_bytes(b"{}")
    outside = tmp_path / "blob"
    outside.write_bytes(b"12345")

    listed = files_under(root, {os.fspath(root / "b/x.bin"): os.fspath(outside)})

    stat = os.stat(outside)
    assert listed == [
        (
            "a.json",
            os.fspath(root / "a.json"),
            Listed(2, (os.stat(root / "a.json").st_dev, os.stat(root / "a.json").st_ino)),
        ),
        ("b/x.bin", os.fspath(outside), Listed(5, (stat.st_dev, stat.st_ino))),
    ]
    assert all(type(entry[2]) is Listed for entry in listed)


def test_pairs_are_listed_as_a_mapping_is(tmp_path):
    root = tmp_path / "export"
    root.mkdir()
    outside = tmp_path / "blob"
    outside.write_bytes(b"x")
    plan = {os.fspath(root / "p/1"): os.fspath(outside), os.fspath(root / "p/0"): os.fspath(outside)}

    assert files_under(root, iter(plan.items())) == files_under(root, plan)
    with pytest.raises(ValueError, match="is not under"):
        files_under(root, iter([(os.fspath(tmp_path / "elsewhere"), os.fspath(outside))]))


def test_only_files_listed_twice_are_remembered_and_the_second_name_is_a_link(tmp_path):
    shas, blobs = blob_store(tmp_path, 4)
    root = tmp_path / "export"
    root.mkdir()
    for n in range(4):
        blobs.copy_to(shas[n], os.fspath(root / f"d/{n}.bin"))
    blobs.copy_to(shas[2], os.fspath(root / "d/again.bin"))  # one blob under two names
    files = files_under(root, dict(blobs.files()))
    again = met_again(files)
    twice = os.stat(blobs.path_of(shas[2]))
    assert again == {(twice.st_dev, twice.st_ino)}

    with TarWriter(tmp_path / "x.tar.gz", 6, {}, again) as writer:
        for name, path, stat in files:
            writer.add(f"x/{name}", path, stat)
        assert [entry[0] for entry in writer.seen.values()] == ["x/d/2.bin"]  # the others are not kept

    archived = members(tmp_path / "x.tar.gz")
    assert archived["x/d/again.bin"].islnk()
    assert archived["x/d/again.bin"].linkname == "x/d/2.bin"
    assert [name for name, member in archived.items() if member.islnk()] == ["x/d/again.bin"]
    with tarfile.open(tmp_path / "x.tar.gz") as tarred:
        assert tarred.extractfile("x/d/again.bin").read() == (tmp_path / "blobs" / shas[2]).read_bytes()


def test_hard_links_in_the_folder_are_still_found_again(tmp_path):
    root = tmp_path / "export"
    root.mkdir()
    (root / "a.html").write_bytes(b"<p>" * 100)
    os.link(root / "a.html", root / "b.html")
    (root / "c.html").write_bytes(b"<q>")

    manifest = write_archive(root, tmp_path / "x.tar.gz", top="x")

    archived = members(tmp_path / "x.tar.gz")
    assert archived["x/b.html"].islnk()
    assert archived["x/b.html"].linkname == "x/a.html"
    assert not archived["x/c.html"].islnk()
    assert manifest["b.html"] == manifest["a.html"] == {"sha256": sha(b"<p>" * 100), "size": 300}


def test_a_local_plan_is_handed_over_once_and_shares_each_blob_path(tmp_path):
    shas, blobs = blob_store(tmp_path, 3)
    for n in range(3):
        blobs.copy_to(shas[n], f"/out/d/{n}.bin")
        blobs.copy_to(shas[n], f"/out/d/{n}-again.bin")

    known = blobs.known()
    handed = dict(blobs.files())

    assert len(handed) == 6
    assert dict(blobs.files()) == {}
    assert set(known.values()) == set(shas.values())
    by_path = {path: path for path in known}
    for path in handed.values():
        assert path is by_path[path]  # the same string object, not a copy a destination
    assert handed["/out/d/1-again.bin"] == blobs.path_of(shas[1])


def test_the_manifest_reads_as_the_dict_it_stands_for_and_its_text_is_json(tmp_path):
    manifest = Manifest()
    manifest.add("a/b.json", "0" * 64, 3)
    manifest.add('c/"quoted" é.txt', "1" * 64, 0)

    assert manifest == {
        "a/b.json": {"sha256": "0" * 64, "size": 3},
        'c/"quoted" é.txt': {"sha256": "1" * 64, "size": 0},
    }
    assert len(manifest) == 2
    assert list(manifest) == ["a/b.json", 'c/"quoted" é.txt']
    text = bytes(manifest.text())
    assert text.isascii()
    assert json.loads(text) == {"algorithm": "sha256", "files": dict(manifest.items())}
    assert json.loads(bytes(Manifest().text())) == {"algorithm": "sha256", "files": {}}


def test_a_manifest_larger_than_a_chunk_is_archived_whole(tmp_path):
    root = tmp_path / "export"
    root.mkdir()
    shas, blobs = blob_store(tmp_path, 1)
    count = CHUNK // 90 + 500  # each manifest line is ~120 bytes: past one CHUNK
    for n in range(count):
        blobs.copy_to(shas[0], os.fspath(root / f"demonstrations/d{n:05}/pages/page-{n}-0.html"))

    manifest = write_archive(root, tmp_path / "x.tar.gz", top="x", planned=blobs.files(), known=blobs.known())

    with tarfile.open(tmp_path / "x.tar.gz") as tarred:
        stored = tarred.extractfile("x/manifest.json").read()
    assert len(stored) > CHUNK
    assert json.loads(stored)["files"] == manifest
    assert list(json.loads(stored)["files"]) == sorted(manifest)


def test_a_small_file_and_a_large_one_are_the_same_bytes_tarfile_reads(tmp_path):
    large = bytes(range(256)) * (CHUNK // 256 * 2 + 3)  # two chunks and a part
    for data in (b"", b"small", large):
        out = io.BytesIO()
        with TarWriter(out, 6, {}) as writer:
            writer.add_bytes("x/f", bytearray(data))
            writer.add_bytes("x/g", data)
        with tarfile.open(fileobj=io.BytesIO(out.getvalue())) as tarred:
            assert tarred.extractfile("x/f").read() == data
            assert tarred.extractfile("x/g").read() == data


def archive_peak(tmp_path, count: int) -> int:
    """What ``write_archive`` allocates at its peak (tracemalloc) archiving ``count`` planned blobs, beyond the plan."""
    shas, blobs = blob_store(tmp_path, count)
    root = tmp_path / "export"
    root.mkdir()
    for n in range(count):
        blobs.copy_to(shas[n], os.fspath(root / f"demonstrations/d{n // 40:04}/screenshots/screenshot-{n}-0.png"))
    known = blobs.known()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        manifest = write_archive(root, tmp_path / "x.tar.gz", top="x", planned=blobs.files(), known=known)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert len(manifest) == count
    return peak


def test_the_archive_keeps_under_a_kilobyte_a_planned_file(tmp_path):
    """The archive's peak memory grows by ~750 bytes a planned file (its listing, then the manifest's name and
    pair), measured as the difference between 2,000 and 6,000 files so that the compressor's fixed buffers cancel
    out. It grew by ~2,000 bytes a file when each kept its ``os.stat_result``, a manifest dict, its link entry and
    a manifest line."""
    (tmp_path / "small").mkdir(), (tmp_path / "large").mkdir()
    small, large = archive_peak(tmp_path / "small", 2000), archive_peak(tmp_path / "large", 6000)

    per_file = (large - small) / 4000
    assert per_file < 1024, f"{per_file:.0f} bytes a file"
