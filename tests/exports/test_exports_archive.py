"""Archives: every file once, with a manifest of sha256s that matches the archived bytes."""

import hashlib
import json
import tarfile
import zipfile

import pytest

from workers.exports.archive import isal_level, write_archive
from workers.exports.exporters.base import DirectoryBlobs


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "export"
    (root / "demonstrations" / "abc" / "pages").mkdir(parents=True)
    (root / "splits.json").write_text('{"train": ["abc"]}')
    (root / "demonstrations" / "abc" / "pages" / "page-0-0.html").write_text("<html></html>" * 1000)
    (root / "demonstrations" / "abc" / "shot.png").write_bytes(bytes(range(256)) * 50)
    return root


def read_members(archive, archive_format):
    if archive_format == "zip":
        with zipfile.ZipFile(archive) as zipped:
            return {name: zipped.read(name) for name in zipped.namelist()}
    with tarfile.open(archive) as tarred:
        return {m.name: tarred.extractfile(m).read() for m in tarred.getmembers() if m.isfile()}


@pytest.mark.parametrize("archive_format", ["tar.gz", "zip"])
def test_manifest_lists_every_file_with_the_sha256_of_its_archived_bytes(tree, tmp_path, archive_format):
    archive = tmp_path / f"proj-weblinx-1.{archive_format}"
    seen = []

    manifest = write_archive(tree, archive, archive_format, progress=seen.append)

    members = read_members(archive, archive_format)
    stored = json.loads(members.pop("proj-weblinx-1/manifest.json"))
    assert stored["files"] == manifest
    assert set(members) == {f"proj-weblinx-1/{name}" for name in manifest}
    for name, entry in manifest.items():
        data = members[f"proj-weblinx-1/{name}"]
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        assert len(data) == entry["size"]
    assert seen == sorted(seen)
    assert seen[-1] == 1.0


def test_an_unknown_archive_format_is_refused(tree, tmp_path):
    with pytest.raises(ValueError, match="unknown archive format 'rar'"):
        write_archive(tree, tmp_path / "x.rar", "rar")


def test_hard_linked_files_are_stored_once_and_extract_with_their_bytes(tree, tmp_path):
    import os

    page = tree / "demonstrations" / "abc" / "pages" / "page-0-0.html"
    os.link(page, tree / "demonstrations" / "abc" / "pages" / "page-1-0.html")
    archive = tmp_path / "linked.tar.gz"

    manifest = write_archive(tree, archive, "tar.gz")

    with tarfile.open(archive) as tarred:
        links = [m for m in tarred.getmembers() if m.islnk()]
        assert [m.name for m in links] == ["linked/demonstrations/abc/pages/page-1-0.html"]
        tarred.extractall(tmp_path / "out", filter="data")
    copy = (tmp_path / "out" / "linked" / "demonstrations" / "abc" / "pages" / "page-1-0.html").read_bytes()
    assert copy == page.read_bytes()
    assert manifest["demonstrations/abc/pages/page-1-0.html"] == manifest["demonstrations/abc/pages/page-0-0.html"]


class FailingStream:
    """An output (an S3 upload, say) that fails after a few bytes."""

    def __init__(self, after: int):
        self.after, self.written = after, 0

    def write(self, data) -> int:
        self.written += len(data)
        if self.written > self.after:
            raise OSError("the upload failed")
        return len(data)

    def flush(self):
        pass


def test_an_output_that_fails_raises_its_error_from_the_archive(tree):
    big = tree / "demonstrations" / "abc" / "big.bin"
    big.write_bytes(bytes(range(256)) * 40_000)  # ~10 MB: several compressed blocks
    with pytest.raises(OSError, match="the upload failed"):
        write_archive(tree, FailingStream(after=1000), "tar.gz", top="x")


def test_the_tar_gz_is_standard_gzip(tree, tmp_path):
    import gzip
    import subprocess

    archive = tmp_path / "plain.tar.gz"
    manifest = write_archive(tree, archive, "tar.gz")
    listed = subprocess.run(["tar", "-tzf", str(archive)], capture_output=True, text=True, check=True).stdout
    assert set(listed.split()) == {f"plain/{name}" for name in manifest} | {"plain/manifest.json"}
    assert gzip.decompress(archive.read_bytes())[:5] == b"plain"  # one tar stream inside


@pytest.mark.parametrize("archive_format", ["tar.gz", "zip"])
def test_planned_files_are_archived_from_their_own_files_as_if_linked_there(tree, tmp_path, archive_format):
    """An export job names local blobs without linking them (``PlannedBlobs``): the archive is the one the links
    would have made, a blob named twice stored once (tar)."""
    blob = tmp_path / "blobs" / "ab12"
    blob.parent.mkdir()
    blob.write_bytes(b"\x89PNG" + bytes(range(256)) * 40)
    folder = tree / "demonstrations" / "abc" / "screenshots"
    planned = {str(folder / "screenshot-0-0.png"): blob, str(folder / "screenshot-1-0.png"): blob}
    linked = tmp_path / "linked"
    import shutil

    shutil.copytree(tree, linked)
    (linked / "demonstrations" / "abc" / "screenshots").mkdir()
    for path in planned:
        (linked / path.removeprefix(f"{tree}/")).hardlink_to(blob)

    manifest = write_archive(tree, tmp_path / f"x.{archive_format}", archive_format, top="x", planned=planned)

    assert manifest == write_archive(linked, tmp_path / f"y.{archive_format}", archive_format, top="x")
    assert read_members(tmp_path / f"x.{archive_format}", archive_format) == read_members(
        tmp_path / f"y.{archive_format}", archive_format
    )
    if archive_format == "tar.gz":
        with tarfile.open(tmp_path / "x.tar.gz") as tarred:
            assert [m.name for m in tarred.getmembers() if m.islnk()] == [
                "x/demonstrations/abc/screenshots/screenshot-1-0.png"
            ]


def test_a_planned_file_outside_the_folder_is_refused(tree, tmp_path):
    with pytest.raises(ValueError, match="is not under"):
        write_archive(tree, tmp_path / "x.tar.gz", planned={str(tmp_path / "elsewhere.png"): tree / "splits.json"})


def test_headers_are_the_bytes_tarfile_writes_for_ustar_and_pax_where_ustar_cannot_hold_a_member():
    """``ustar_header`` builds what tarfile's ustar writes; None (tarfile's pax headers then) for what ustar cannot
    hold: a name or link that is not ASCII, a link over 100 bytes, a path no "/" splits into 155 + 100 bytes."""
    from workers.exports.archive import ustar_header

    names = [
        "a/b.txt",
        "x" * 100,
        "top/" + "d" * 150 + "/" + "f" * 99,
        "p/" * 70 + "shot.png",
        "q" * 40 + "/" + "s" * 60,
    ]
    for name in names:
        for link, size in (("", 0), ("", 5), ("", 2**33 - 1), ("top/first/shot.png", 0)):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = size, 1_700_000_000, 0o644
            if link:
                info.type, info.linkname = tarfile.LNKTYPE, link
            assert ustar_header(name, size, 1_700_000_000, link) == info.tobuf(tarfile.USTAR_FORMAT, "ascii", "strict")
    for name, link in (("x" * 101, ""), ("top/" + "d" * 156 + "/f", ""), ("é/x", ""), ("a/b", "l" * 101), ("a", "é")):
        assert ustar_header(name, 0, 1_700_000_000, link) is None


def test_long_and_non_ascii_names_links_and_empty_files_extract_with_gnu_tar(tmp_path):
    """Every kind of member the writer makes (ustar split names, pax names, hard links to a long name, an empty
    file) lists and extracts with GNU tar as the files were."""
    import os
    import subprocess

    root = tmp_path / "export"
    deep = root / ("d" * 90) / ("e" * 90)
    deep.mkdir(parents=True)
    files = {
        deep / "page-0-0.html": b"<html>" * 300,
        root / "caf\u00e9.json": b'{"ok": true}',
        root / "empty.txt": b"",
        deep / ("f" * 99): bytes(range(256)) * 9,
    }
    for path, data in files.items():
        path.write_bytes(data)
    os.link(deep / "page-0-0.html", root / "linked.html")  # a link to a name over 100 bytes: pax
    archive = tmp_path / "kinds.tar.gz"

    manifest = write_archive(root, archive, "tar.gz")

    listed = subprocess.run(["tar", "-tzf", str(archive)], capture_output=True, text=True, check=True).stdout.split(
        "\n"
    )
    assert set(filter(None, listed)) == {f"kinds/{name}" for name in manifest} | {"kinds/manifest.json"}
    (tmp_path / "out").mkdir()
    subprocess.run(["tar", "-xzf", str(archive), "-C", str(tmp_path / "out")], check=True)
    for path, data in {**files, root / "linked.html": files[deep / "page-0-0.html"]}.items():
        assert (tmp_path / "out" / "kinds" / path.relative_to(root)).read_bytes() == data


def test_a_blob_copied_where_no_folder_is_yet_gets_its_folder_and_a_missing_blob_makes_none(tmp_path):
    """A blob source makes the destination's folder when it writes there (the exporters no longer make folders a
    planned export never writes); a blob that is not stored fails with its own error and leaves no folder behind."""
    stored = tmp_path / "blobs"
    stored.mkdir()
    (stored / "ab12").write_bytes(b"\x89PNG screenshot")
    blobs = DirectoryBlobs(lambda sha: stored / sha)
    for turn in range(2):  # the second finds its folder made
        blobs.copy_to("ab12", tmp_path / "out" / "task" / "t1" / "processed" / "screenshots" / f"{turn}.png")
    shots = tmp_path / "out" / "task" / "t1" / "processed" / "screenshots"
    assert sorted(path.name for path in shots.iterdir()) == ["0.png", "1.png"]
    assert (shots / "0.png").read_bytes() == b"\x89PNG screenshot"
    with pytest.raises(FileNotFoundError):
        blobs.copy_to("cd34", tmp_path / "out" / "task" / "t2" / "a.png")
    assert not (tmp_path / "out" / "task" / "t2").exists()


@pytest.mark.parametrize(("compresslevel", "isal"), [(0, 0), (1, 1), (2, 1), (3, 2), (6, 2), (8, 2), (9, 3)])
def test_zlib_levels_map_onto_isal_levels_with_exports_default_on_isal_2(compresslevel, isal):
    """ISA-L's level 3 packs web pages 2.5-6 % tighter than its 2 at four to five times the CPU: an export (6) uses
    2; only a caller asking for zlib's best (9) gets 3."""
    assert isal_level(compresslevel) == isal
