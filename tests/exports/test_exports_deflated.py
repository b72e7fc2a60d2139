"""Files kept deflated as they are written (``archive.DeflatedFile``) and spliced into a tar.gz as they are
(``archive.GzipWriter``): one standard gzip member whose bytes are the archive's, the same members and manifest as
the plain files give, and a Mind2Web export job whose tar.gz holds what its zip (plain files) holds."""

import hashlib
import json
import subprocess
import tarfile
import threading
import zipfile
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.models import ExportJob
from tests.support.corpus import ingest_corpus
from tests.support.payloads import Collected, sha
from workers.exports.archive import DeflatedFile, DeflatedFiles, GzipWriter, write_archive
from workers.exports.jobs import run_export
from workers.exports.mind2web_steps import process_demo


def one_member(data: bytes) -> bytes:
    """The plain bytes of a gzip stream that must be exactly one member, nothing after it."""
    inflating = zlib.decompressobj(wbits=31)
    plain = inflating.decompress(data) + inflating.flush()
    assert inflating.eof
    assert inflating.unused_data == b""
    return plain


# Text-like pieces: a small alphabet repeats, so blocks refer back across their borders (and into a primed window).
pieces = st.binary(min_size=0, max_size=3000).map(lambda raw: bytes(b % 7 + 97 for b in raw))
operations = st.lists(st.tuples(st.booleans(), st.lists(pieces, max_size=5)), max_size=8)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(operations=operations, block=st.sampled_from([64, 1000, 4096]), level=st.sampled_from([1, 2, 3]))
def test_written_and_spliced_bytes_make_one_gzip_member_of_them_all(tmp_path_factory, operations, block, level):
    """At every ISA-L level, exports' (2, ``isal_level(6)``) included; a spliced file at another level than the
    stream's still continues it."""
    folder, out, expected = tmp_path_factory.mktemp("deflated"), Collected(), b""
    writer = GzipWriter(out, level=level, threads=2, block=block)
    try:
        for index, (splice, parts) in enumerate(operations):
            if splice:
                with DeflatedFile(folder / f"{index}.deflate", level=1 + index % 3, block=block) as file:
                    for part in parts:
                        file.write(part)
                writer.splice(file)
            else:
                for part in parts:
                    writer.write(part)
            expected += b"".join(parts)
        writer.close()
    finally:
        writer.stop()
    assert one_member(bytes(out.data)) == expected


def test_a_deflated_file_describes_its_plain_bytes(tmp_path):
    text = b"".join(b'{"step": %d, "html": "<div>row</div>"},\n' % n for n in range(50_000))
    with DeflatedFile(tmp_path / "a.deflate", level=3, block=65536) as file:
        for start in range(0, len(text), 777):
            file.write(text[start : start + 777])
    assert (file.size, file.crc, file.sha256) == (len(text), zlib.crc32(text), hashlib.sha256(text).hexdigest())
    stored = (tmp_path / "a.deflate").read_bytes()
    assert len(stored) < len(text) // 10
    assert zlib.decompress(stored + b"\x03\x00", wbits=-15) == text  # blocks ending on a byte, none the last


def test_a_deflated_file_cannot_be_spliced_before_it_is_closed_and_its_thread_ends_with_a_failure(tmp_path):
    file = DeflatedFile(tmp_path / "a.deflate", level=3)
    file.write(b"[")
    with pytest.raises(ValueError, match="not complete"):
        file.copy_into(Collected())
    file.write(b"x" * 3_000_000)  # pieces under way
    file.__exit__(RuntimeError, RuntimeError("the exporter failed"), None)  # as a ``with`` ends on an exception
    assert file.closed
    assert file.handle.closed
    assert not any(thread.name.startswith("deflate") for thread in threading.enumerate())


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "export"
    (root / "task" / "t1").mkdir(parents=True)
    (root / "task" / "t1" / "trace.json").write_text('{"steps": []}\n')
    (root / "quality.json").write_text("{}\n")
    return root


def split_text(n: int) -> bytes:
    return (
        "[" + ",".join(f'\n{{"annotation_id": "{i}", "html": "<p>é {i}</p>"}}' for i in range(n)) + "\n]\n"
    ).encode()


def members(path) -> dict:
    with tarfile.open(path) as tarred:
        return {m.name: tarred.extractfile(m).read() for m in tarred.getmembers() if m.isfile()}


def test_kept_files_archive_as_the_plain_files_would_in_their_place(tree, tmp_path):
    texts = {"train.json": split_text(40_000), "test_task.json": split_text(3), "test_domain.json": b"]\n"}
    kept = DeflatedFiles(tmp_path / "kept")
    for name, text in texts.items():
        with kept.open(tree / name) as file:
            file.write(text)
    trace = b'{"format": "webtasks-trace/1", "steps": []}\n'
    kept.keep(tree / "task" / "t2" / "trace.json", trace)  # in memory, its folder never made
    plain = tmp_path / "plain"
    subprocess.run(["cp", "-r", str(tree), str(plain)], check=True)
    for name, text in texts.items():
        (plain / name).write_bytes(text)
    (plain / "task" / "t2").mkdir()
    (plain / "task" / "t2" / "trace.json").write_bytes(trace)

    manifest = write_archive(tree, tmp_path / "x.tar.gz", top="x", deflated=kept.files())

    assert not (tree / "task" / "t2").exists()
    assert manifest["task/t2/trace.json"] == {"sha256": sha(trace), "size": len(trace)}
    assert manifest == write_archive(plain, tmp_path / "y.tar.gz", top="x")
    assert members(tmp_path / "x.tar.gz") == members(tmp_path / "y.tar.gz")
    with tarfile.open(tmp_path / "x.tar.gz") as tarred:  # in path order, as a folder's files are
        names = tarred.getnames()
    assert names == sorted(names[:-1]) + ["x/manifest.json"]
    assert one_member((tmp_path / "x.tar.gz").read_bytes())[:100].rstrip(b"\0") == names[0].encode()
    tested = subprocess.run(["gzip", "-t", str(tmp_path / "x.tar.gz")], capture_output=True, text=True)
    assert tested.returncode == 0, tested.stderr  # GNU gzip reads it as one stream
    listed = subprocess.run(["tar", "-tzf", str(tmp_path / "x.tar.gz")], capture_output=True, text=True, check=True)
    assert listed.stdout.split() == names


def test_kept_files_go_into_a_tar_gz_only(tree, tmp_path):
    kept = DeflatedFiles(tmp_path / "kept")
    with kept.open(tree / "train.json") as file:
        file.write(b"[]\n")
    with pytest.raises(ValueError, match="tar.gz only"):
        write_archive(tree, tmp_path / "x.zip", "zip", deflated=kept.files())


def zip_members(path) -> dict:
    with zipfile.ZipFile(path) as zipped:
        return {name.partition("/")[2]: zipped.read(name) for name in zipped.namelist()}


@pytest.mark.django_db(transaction=True)
def test_a_mind2web_tar_gz_job_holds_what_its_zip_holds_run_after_run(alpha, owner, media_storage):
    for demo in ingest_corpus(project="alpha", demos=4, turns=16, elements=40, seed=11):
        process_demo(demo)
    archives = {}
    for archive_format in ("tar.gz", "zip", "tar.gz"):
        job = ExportJob.objects.create(
            project=alpha, owner=owner, format="mind2web", statuses=["validated"], archive_format=archive_format
        )
        run_export(job.pk)
        job.refresh_from_db()
        assert job.status == "done", job.error
        stored = (media_storage / job.file.name).read_bytes()
        assert (job.sha256, job.size) == (sha(stored), len(stored))
        if archive_format == "zip":
            files = zip_members(media_storage / job.file.name)
        else:
            one_member(stored)
            files = {name.partition("/")[2]: data for name, data in members(media_storage / job.file.name).items()}
        manifest = json.loads(files.pop("manifest.json"))["files"]
        files.pop("quality.json"), manifest.pop("quality.json")  # generated_at differs
        assert manifest == {name: {"sha256": sha(data), "size": len(data)} for name, data in files.items()}
        archives.setdefault(archive_format, []).append(files)
    first, second = archives["tar.gz"]
    assert first == second == archives["zip"][0]
    records = json.loads(first["train.json"]) + json.loads(first["test_task.json"])
    assert len(records) == 4
    assert all(record["actions"] for record in records)
