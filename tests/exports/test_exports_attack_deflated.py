"""Attacks on the split files kept deflated (``archive.DeflatedFile``/``DeflatedFiles``) and spliced into a tar.gz
(``GzipWriter``, ``TarWriter.add_deflated``): odd sizes against real readers (GNU tar and gzip, tarfile's stream
mode), a file reopened under the same path, a file discarded after a failure, an output failing mid-splice, and a
Mind2Web export failing mid-way: no thread left, nothing spliced that is not whole."""

import os
import subprocess
import tarfile
import threading
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.corpus import ingest_corpus
from tests.support.payloads import Collected, sha
from workers.exports.archive import DeflatedFile, DeflatedFiles, GzipWriter, TarWriter, write_archive
from workers.exports.dataset import export_demos, storage_blobs
from workers.exports.exporters.mind2web import Mind2WebExporter
from workers.exports.mind2web_steps import process_demo


def no_threads_left() -> bool:
    return not any(thread.name.startswith(("gzip", "deflate")) for thread in threading.enumerate())


def stream_members(path) -> dict:
    """Members read as a stream (``r|gz``), as a pipe would: ``{name under the top folder: bytes}``."""
    with open(path, "rb") as handle, tarfile.open(fileobj=handle, mode="r|gz") as tarred:
        return {
            member.name.partition("/")[2]: tarred.extractfile(member).read() for member in tarred if member.isfile()
        }


# sizes around deflate's and tar's borders: empty, one byte, a tar block either side, the 32 KiB window, a block
sizes = st.one_of(st.sampled_from([0, 1, 511, 512, 513, 1023, 1024, 32767, 32768, 32769, 65536]), st.integers(0, 9000))
texts = st.tuples(sizes, st.integers(0, 255)).map(
    lambda spec: bytes((spec[1] + i * 7 + i // 13) % 251 for i in range(spec[0])) if spec[0] else b""
)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    layout=st.lists(st.tuples(st.booleans(), texts), min_size=1, max_size=5),
    pieces=st.sampled_from([1, 7, 512, 4096]),
)
def test_any_mix_of_kept_and_plain_files_reads_back_byte_for_byte_with_real_tools(tmp_path_factory, layout, pieces):
    base = tmp_path_factory.mktemp("mix")
    root, plain, kept = base / "export", base / "plain", DeflatedFiles(base / "kept")
    root.mkdir()
    plain.mkdir()
    expected = {}
    for index, (deflate, text) in enumerate(layout):  # kept files at the start, the end, side by side
        name = f"{index:02d}.json"
        expected[name] = text
        (plain / name).write_bytes(text)
        if deflate:
            with kept.open(root / name) as file:
                for start in range(0, len(text), pieces):
                    file.write(text[start : start + pieces])
        else:
            (root / name).write_bytes(text)

    manifest = write_archive(root, base / "x.tar.gz", top="x", deflated=kept.files())

    assert manifest == write_archive(plain, base / "y.tar.gz", top="x")
    assert manifest == {name: {"sha256": sha(text), "size": len(text)} for name, text in expected.items()}
    got = stream_members(base / "x.tar.gz")
    got.pop("manifest.json")
    assert got == expected
    assert subprocess.run(["gzip", "-t", str(base / "x.tar.gz")], capture_output=True).returncode == 0
    listed = subprocess.run(["tar", "-tzf", str(base / "x.tar.gz")], capture_output=True, text=True, check=True)
    assert listed.stdout.split() == [f"x/{name}" for name in sorted(expected)] + ["x/manifest.json"]


def test_a_path_opened_again_never_shares_its_deflated_file_with_another(tmp_path):
    """``DeflatedFiles.open`` named each file by how many paths it holds: a path opened again (an exporter run twice
    on the same registry) left the count as it was, and the next path's file was created over a file in use."""
    root, kept = tmp_path / "export", DeflatedFiles(tmp_path / "kept")
    root.mkdir()
    with kept.open(root / "train.json") as file:
        file.write(b"[a first try]\n")
    with kept.open(root / "train.json") as file:
        file.write(b"[" + b"A" * 5000 + b"]\n")
    with kept.open(root / "test_task.json") as file:
        file.write(b"[" + b"B" * 7000 + b"]\n")

    write_archive(root, tmp_path / "x.tar.gz", top="x", deflated=kept.files())

    got = stream_members(tmp_path / "x.tar.gz")
    assert got["train.json"] == b"[" + b"A" * 5000 + b"]\n"
    assert got["test_task.json"] == b"[" + b"B" * 7000 + b"]\n"


def test_a_deflated_file_discarded_after_a_failure_is_never_spliced(tmp_path):
    """A file whose writing ended on an exception holds no sync flush, and its size, crc32 and sha256 describe what
    was taken so far: it must not pass for a complete one (``closed`` alone said both)."""
    file = DeflatedFile(tmp_path / "a.deflate", level=3, block=4096)
    file.write(b"[" + b'{"x": 1},\n' * 2000)
    file.__exit__(RuntimeError, RuntimeError("the exporter failed"), None)
    assert no_threads_left()
    with pytest.raises(ValueError, match="not complete"):
        file.copy_into(Collected())
    writer = GzipWriter(Collected(), level=3, threads=2)
    try:
        with pytest.raises(ValueError, match="not complete"):
            writer.splice(file)
    finally:
        writer.stop()


class FailingOutput:
    """An output (an S3 upload) that fails once ``limit`` bytes have gone through it."""

    def __init__(self, limit: int):
        self.limit, self.size = limit, 0

    def write(self, data) -> int:
        self.size += len(data)
        if self.size > self.limit:
            raise OSError("the upload failed")
        return len(data)


@pytest.mark.parametrize("limit", [5, 2000, 200_000])  # in the header, in the tar header, in the spliced bytes
def test_an_output_failing_mid_splice_fails_the_archive_and_leaves_no_thread(tmp_path, limit):
    root, kept = tmp_path / "export", DeflatedFiles(tmp_path / "kept")
    (root / "task").mkdir(parents=True)
    (root / "task" / "a.bin").write_bytes(os.urandom(300_000))
    with kept.open(root / "train.json") as file:
        file.write(os.urandom(1_000_000))
    with pytest.raises(OSError, match="upload failed"):
        write_archive(root, FailingOutput(limit), top="x", deflated=kept.files())
    assert no_threads_left()


@pytest.mark.django_db(transaction=True)
def test_a_mind2web_export_failing_mid_way_leaves_no_thread_and_nothing_to_splice(alpha, tmp_path):
    for demo in ingest_corpus(project="alpha", demos=3, turns=6, elements=16, seed=5):
        process_demo(demo)

    def failing(demos):
        for done, demo in enumerate(demos):
            if done == 2:
                raise RuntimeError("the database went away")
            yield demo

    kept = DeflatedFiles(tmp_path / "kept")
    with pytest.raises(RuntimeError, match="went away"):
        Mind2WebExporter(kept).export(
            failing(export_demos(alpha, "mind2web", ["validated"])), tmp_path / "out", storage_blobs()
        )
    assert no_threads_left()
    deflated = {path: file for path, file in kept.files().items() if isinstance(file, DeflatedFile)}
    assert deflated  # the split files had been opened
    assert all(file.handle.closed for file in deflated.values())
    assert not any(path.name.endswith(".json") for path in (tmp_path / "out").iterdir())
    with TarWriter(Collected(), 6, {}) as archive:
        for path, file in deflated.items():
            with pytest.raises(ValueError, match="not complete"):
                archive.add_deflated(f"x/{os.path.basename(path)}", file)


def test_spliced_stream_ends_are_what_zlib_and_gzip_read_as_one_member(tmp_path):
    """A splice as the very first and very last thing in the member, and empty files side by side."""
    out, texts = Collected(), [b"", b"", b"[" + b"z" * 70_000 + b"]", b""]
    writer = GzipWriter(out, level=3, threads=2, block=4096)
    try:
        for index, text in enumerate(texts):
            with DeflatedFile(tmp_path / f"{index}.deflate", level=3, block=1000) as file:
                file.write(text)
            writer.splice(file)
        writer.close()
    finally:
        writer.stop()
    inflating = zlib.decompressobj(wbits=31)
    assert inflating.decompress(bytes(out.data)) == b"".join(texts)
    assert inflating.eof
    assert inflating.unused_data == b""
    (tmp_path / "s.gz").write_bytes(bytes(out.data))
    assert subprocess.run(["gzip", "-dc", str(tmp_path / "s.gz")], capture_output=True, check=True).stdout == b"".join(
        texts
    )
