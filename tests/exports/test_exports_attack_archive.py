"""Attack: archives (``workers.exports.archive``) of hostile trees: names about the ustar limits, non-ASCII names,
hard links whose first name is long or non-ASCII, empty files and files of whole and partial chunks, planned blobs
that are symlinks. GNU tar and tarfile's data filter extract every member inside the top folder with the bytes the
manifest describes; the zip holds the same; a file that changes size while archived never gets a manifest entry
that disagrees with its archived bytes."""

import hashlib
import json
import os
import subprocess
import tarfile
import zipfile

import pytest

from workers.exports.archive import CHUNK, write_archive


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hostile_tree(root) -> dict:
    """{relative name: bytes} of a tree written under ``root`` (hard links included)."""
    files = {}
    for length in (98, 99, 100, 101, 154, 155, 156):
        files[f"n/{'a' * length}"] = b"x" * length
        files[f"{'p' * min(length, 150)}/{'q' * 90}/{length}"] = b"y" * length
    files["d" * 150 + "/" + "e" * 100] = b"split exactly at 150 + 100"
    files["caf\u00e9/\u00fcber-\u6f22\u5b57.json"] = b'{"a": 1}'
    files["\u00e9" * 60 + "/long-non-ascii.bin"] = bytes(range(256)) * 3
    files["odd/sp ace & amp;'quote\"\tlt<gt>.txt"] = b"odd"
    files["odd/-leading-dash"] = b"dash"
    files["empty/zero"] = b""
    files["chunks/one"] = bytes(CHUNK)
    files["chunks/one-and-one"] = os.urandom(CHUNK + 1)
    files["chunks/two-minus-one"] = os.urandom(2 * CHUNK - 1)
    files["chunks/block"] = b"b" * 512
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    first = "\u00e9" * 60 + "/long-non-ascii.bin"  # a link whose first name is long and not ASCII: pax linkpath
    for link in ("links/to-long-non-ascii", "z" * 120 + "/link"):
        (root / link).parent.mkdir(parents=True, exist_ok=True)
        os.link(root / first, root / link)
        files[link] = files[first]
    os.link(root / "empty/zero", root / "links/empty")
    files["links/empty"] = b""
    return files


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "export"
    root.mkdir()
    return root, hostile_tree(root)


def assert_manifest(manifest: dict, files: dict):
    assert manifest == {name: {"sha256": sha(data), "size": len(data)} for name, data in files.items()}


def test_a_hostile_tar_gz_extracts_with_tarfiles_data_filter_and_gnu_tar_as_the_manifest_says(tree, tmp_path):
    root, files = tree
    archive = tmp_path / "top.tar.gz"
    assert_manifest(write_archive(root, archive, "tar.gz"), files)
    with tarfile.open(archive) as tarred:
        names = tarred.getnames()
        assert all(name.startswith("top/") and ".." not in name.split("/") for name in names)
        tarred.extractall(tmp_path / "py", filter="data")
    (tmp_path / "gnu").mkdir()
    subprocess.run(["tar", "-xzf", str(archive), "-C", str(tmp_path / "gnu")], check=True)
    for out in ("py", "gnu"):
        manifest = json.loads((tmp_path / out / "top" / "manifest.json").read_bytes())
        assert manifest["algorithm"] == "sha256"
        assert_manifest(manifest["files"], files)
        for name, data in files.items():
            assert (tmp_path / out / "top" / name).read_bytes() == data, (out, name)
        on_disk = {
            os.path.relpath(os.path.join(folder, file), tmp_path / out / "top")
            for folder, _, found in os.walk(tmp_path / out)
            for file in found
        }
        assert on_disk == set(files) | {"manifest.json"}


def test_the_zip_holds_what_the_tar_gz_holds(tree, tmp_path):
    root, files = tree
    assert_manifest(write_archive(root, tmp_path / "top.zip", "zip"), files)
    with zipfile.ZipFile(tmp_path / "top.zip") as zipped:
        held = {info.filename: zipped.read(info) for info in zipped.infolist()}
    manifest = json.loads(held.pop("top/manifest.json"))["files"]
    assert held == {f"top/{name}": data for name, data in files.items()}
    assert_manifest(manifest, files)


def test_a_planned_blob_that_is_a_symlink_is_archived_as_its_target(tmp_path):
    root, store = tmp_path / "export", tmp_path / "store"
    root.mkdir(), store.mkdir()
    (store / "real").write_bytes(b"blob bytes")
    (store / "alias").symlink_to(store / "real")
    planned = {str(root / "a/shot.png"): store / "alias", str(root / "b/shot.png"): store / "real"}
    manifest = write_archive(root, tmp_path / "top.tar.gz", "tar.gz", planned=planned)
    assert_manifest(manifest, {"a/shot.png": b"blob bytes", "b/shot.png": b"blob bytes"})
    with tarfile.open(tmp_path / "top.tar.gz") as tarred:
        tarred.extractall(tmp_path / "out", filter="data")
        assert tarred.getmember("top/b/shot.png").islnk()  # the same file met twice: a hard link
    assert (tmp_path / "out/top/b/shot.png").read_bytes() == b"blob bytes"


def test_a_missing_planned_blob_fails_the_archive(tmp_path):
    root = tmp_path / "export"
    root.mkdir()
    with pytest.raises(FileNotFoundError):
        write_archive(root, tmp_path / "top.tar.gz", "tar.gz", planned={str(root / "x"): tmp_path / "gone"})


@pytest.mark.parametrize("archive_format", ["tar.gz", "zip"])
@pytest.mark.parametrize("change", [b"", b"longer now: appended after it was listed"])
def test_a_file_that_changes_size_while_archived_fails_or_is_archived_as_the_manifest_says(
    tmp_path, archive_format, change
):
    """``a`` is archived first; while the progress callback runs, ``b`` (listed at 600 bytes) is cut short or
    grows. Either the archive fails, or ``b``'s manifest entry is its archived bytes."""
    root = tmp_path / "export"
    root.mkdir()
    (root / "a").write_bytes(b"first")
    (root / "b").write_bytes(b"B" * 600)
    changed = []

    def changing(fraction):
        if not changed:
            changed.append(True)
            (root / "b").write_bytes(b"B" * 100 + change if not change else b"B" * 600 + change)

    archive = tmp_path / f"top.{archive_format}"
    try:
        manifest = write_archive(root, archive, archive_format, changing)
    except OSError:
        assert not change, "a file that grew may be archived at its listed size, not refused"
        return
    if archive_format == "zip":
        with zipfile.ZipFile(archive) as zipped:
            data = zipped.read("top/b")
    else:
        with tarfile.open(archive) as tarred:
            data = tarred.extractfile("top/b").read()
    assert manifest["b"] == {"sha256": sha(data), "size": len(data)}
