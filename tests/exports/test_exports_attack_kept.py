"""Attacks on the files an export keeps out of its folder (``archive.KeptBytes``, ``DeflatedFile`` on threads) and on
blob sources making folders: odd sizes against GNU tar and gzip, callers' buffers changed after, paths climbing out,
memory bounded, no threads or partial files left behind."""

import array
import hashlib
import json
import subprocess
import tarfile
import threading

import pytest

from workers.exports.archive import CHUNK, DeflatedFile, DeflatedFiles, write_archive
from workers.exports.dataset import RemoteStorageBlobs


def sha(data):
    return hashlib.sha256(data).hexdigest()


def members(path):
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def check_all(path, top):
    subprocess.run(["gzip", "-t", str(path)], check=True)
    subprocess.run(["tar", "-tzf", str(path)], check=True, capture_output=True)
    files = {name.removeprefix(f"{top}/"): data for name, data in members(path).items()}
    manifest = json.loads(files.pop("manifest.json"))["files"]
    assert manifest == {name: {"sha256": sha(data), "size": len(data)} for name, data in files.items()}
    return files


@pytest.mark.parametrize("size", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK])
def test_zero_and_block_sized_deflated_and_kept_files_in_a_tar_gz(tmp_path, size):
    root = tmp_path / "out"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "disk.txt").write_bytes(b"d" * 700)
    kept = DeflatedFiles(tmp_path / "deflated")
    body = bytes(i % 251 for i in range(size))
    with kept.open(root / "a.json") as file:
        file.write(body)
    with kept.open(root / "empty.json"):
        pass
    kept.keep(root / "sub" / "trace.json", body)
    kept.keep(root / "z.json", b"")
    files = check_all_archive(root, tmp_path / "x.tar.gz", kept)
    assert (files["a.json"], files["empty.json"], files["sub/trace.json"]) == (body, b"", body)
    # GNU tar extracts the same bytes
    subprocess.run(["tar", "-xzf", str(tmp_path / "x.tar.gz"), "-C", str(tmp_path)], check=True)
    assert (tmp_path / "x" / "a.json").read_bytes() == body


def check_all_archive(root, path, kept):
    write_archive(root, path, "tar.gz", deflated=kept.files())
    return check_all(path, "x")


def test_kept_bytes_of_a_mutable_buffer_describe_what_is_archived(tmp_path):
    """A caller's buffer changed after ``keep`` changes neither the archived bytes nor their sha256."""
    root = tmp_path / "out"
    root.mkdir()
    kept = DeflatedFiles(tmp_path / "deflated")
    buffer = bytearray(b"original trace\n")
    kept.keep(root / "trace.json", buffer)
    buffer[:8] = b"ALTERED!"
    assert check_all_archive(root, tmp_path / "x.tar.gz", kept)["trace.json"] == b"original trace\n"


def test_a_kept_path_with_dotdot_never_names_a_member_outside_the_top(tmp_path):
    root = tmp_path / "out"
    root.mkdir()
    kept = DeflatedFiles(tmp_path / "deflated")
    kept.keep(root / "task" / ".." / ".." / "evil" / "trace.json", b"x")
    with pytest.raises(ValueError, match="climbs out"):
        write_archive(root, tmp_path / "x.tar.gz", "tar.gz", deflated=kept.files())


def test_a_memoryview_of_wide_items_is_counted_in_bytes(tmp_path):
    data = array.array("I", range(CHUNK // 4 + 10))
    with DeflatedFile(tmp_path / "f.deflate", level=3) as file:
        file.write(memoryview(data))
        assert file.buffered == 0  # counted in bytes: a block's worth went to compression at once
    assert (file.size, file.sha256) == (len(data.tobytes()), sha(data.tobytes()))


def test_no_deflate_threads_are_left_after_a_failed_write(tmp_path):
    before = {t.ident for t in threading.enumerate()}

    def failing_exporter():
        with DeflatedFile(tmp_path / "f.deflate", level=3, block=64) as file:
            for _ in range(50):
                file.write(b"y" * 100)
            raise RuntimeError("exporter failed")

    with pytest.raises(RuntimeError):
        failing_exporter()
    left = [t.name for t in threading.enumerate() if t.ident not in before and t.is_alive()]
    assert left == []


def test_a_missing_remote_blob_leaves_nothing_in_the_export_folder(tmp_path):
    """A remote blob source without a cache (a directory export on S3) makes the destination's folder to download
    into: a blob that cannot be read leaves neither an empty file nor that folder."""
    blobs = RemoteStorageBlobs(None)
    destination = tmp_path / "out" / "task" / "t1" / "processed" / "screenshots" / "a.png"
    with pytest.raises(FileNotFoundError):
        blobs.copy_to("0" * 64, destination)
    assert not destination.exists(), "an empty file stands for the blob"
    assert not destination.parent.exists(), "a folder was made for a blob never written"


def test_kept_files_past_the_memory_bound_are_written_out_and_archived_the_same(tmp_path, monkeypatch):
    """A project's traces kept in memory are bounded (``KEEP_BYTES``): past it they are written where they stand,
    and the archive holds the same members either way."""
    root = tmp_path / "out"
    root.mkdir()
    monkeypatch.setattr(DeflatedFiles, "KEEP_BYTES", 1000)
    kept = DeflatedFiles(tmp_path / "deflated")
    traces = {f"task/t{index}/trace.json": bytes([65 + index]) * 400 for index in range(5)}
    for name, data in traces.items():
        kept.keep(root / name, data)
    assert sum(1 for file in kept.files().values() if file.size) == 2  # 800 bytes kept, the rest written out
    assert sorted(path.relative_to(root).as_posix() for path in root.rglob("*.json")) == sorted(traces)[2:]
    assert check_all_archive(root, tmp_path / "x.tar.gz", kept) == traces
