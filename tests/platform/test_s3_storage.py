"""The platform on S3 storage (django-storages) against a real S3-compatible server (SeaweedFS on loopback), with a
real Celery worker: blob ingest, thumbnails, re-alignment, exports uploaded as they are made (multipart), streamed
and ranged downloads, presigned redirects, and the sweep of what killed workers leave in the bucket."""

import errno
import hashlib
import io
import json
import os
import signal
import struct
import tarfile
import threading
import types
import urllib.request
import zipfile
from unittest import mock

import pytest
from django.core.cache import cache
from django.core.files.storage import default_storage

from annotation.models import DemoReview, ExportJob, JobStatus, Turn, TurnCuration, sha256_path
from annotation.store.blobstore import S3ObjectReader
from devtools.processes import celery_beat, celery_worker, free_port
from tests.support.corpus import ingest_corpus
from tests.support.exported import archived_members, exported_archive
from tests.support.review_data import recorded_demo
from tests.support.waits import wait_until
from workers.exports import packs
from workers.exports.archive import write_archive
from workers.exports.dataset import RemoteStorageBlobs
from workers.exports.jobs import sweep_export_folders
from workers.exports.packs import demo_shas, pack_name
from workers.exports.s3upload import MultipartWriter, abandoned_uploads

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]
EXPORTS = "/api/exports/"
MIB = 1024 * 1024


@pytest.fixture
def worker_env(worker_env, s3_storage):
    """A worker on this test's database and bucket (no media folder); exports in 5 MiB parts so even small ones are
    multipart."""
    local = {name: value for name, value in worker_env.items() if name != "MEDIA_ROOT"}
    return {**local, **s3_storage, "S3_PART_MB": "5", "S3_UPLOAD_CONCURRENCY": "2"}


def bucket_keys(s3_server, bucket: str, prefix: str = "") -> list[str]:
    listed = s3_server.client().list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(item["Key"] for item in listed.get("Contents", []))


def finished_job(client, job_id, timeout=240):
    def ended():
        body = client.get(f"{EXPORTS}{job_id}/").json()
        return body if body["status"] in ("done", "failed", "cancelled") else None

    return wait_until(ended, timeout, 0.2, f"export {job_id} to end")


def test_ingested_blobs_are_stored_in_the_bucket_and_read_back_whole_and_by_range(s3_server, s3_storage, api_for):
    demo = ingest_corpus(project="alpha", demos=1, turns=12, elements=200, seed=3)[0]
    turn = Turn.objects.filter(demonstration=demo, page__isnull=False).first()
    stored = bucket_keys(s3_server, s3_storage["AWS_STORAGE_BUCKET_NAME"], "blobs/")
    client = api_for(demo.navigator)

    whole = client.get(f"/api/blobs/{turn.page_id}")
    ranged = client.get(f"/api/blobs/{turn.page_id}", HTTP_RANGE="bytes=100-1123")
    tail = client.get(f"/api/blobs/{turn.page_id}", HTTP_RANGE="bytes=-10")

    assert sha256_path(turn.page_id) in stored
    assert sha256_path(turn.screenshot_id) in stored
    body = b"".join(whole.streaming_content)
    assert hashlib.sha256(body).hexdigest() == turn.page_id
    assert whole["Content-Length"] == str(len(body))
    assert ranged.status_code == 206
    assert ranged["Content-Range"] == f"bytes 100-1123/{len(body)}"
    assert b"".join(ranged.streaming_content) == body[100:1124]
    assert b"".join(tail.streaming_content) == body[-10:]
    assert client.get(f"/api/blobs/{turn.page_id}", HTTP_RANGE=f"bytes={len(body)}-").status_code == 416


def test_the_worker_makes_thumbnails_and_realigns_from_the_bucket(s3_server, s3_storage, client, reviewer, worker):
    demo = recorded_demo()
    cache.delete(f"review-work:{demo.pk}")
    framed = Turn.objects.get(demonstration=demo, client_id="framed-turn")
    client.force_login(reviewer)
    assert client.get(f"/review/{demo.name}/").status_code == 200

    wait_until(lambda: DemoReview.objects.filter(pk=demo.pk, realigned=True).exists(), 120, 0.2, "re-alignment")
    thumb = wait_until(
        lambda: (r := client.get(f"/review/thumbs/{framed.screenshot_id}"))["Content-Type"] == "image/webp" and r,
        120,
        0.2,
        "the thumbnail",
    )

    keys = bucket_keys(s3_server, s3_storage["AWS_STORAGE_BUCKET_NAME"], "thumbs/")
    assert f"thumbs/{framed.screenshot_id[:2]}/{framed.screenshot_id}.webp" in keys
    assert thumb.content[:4] == b"RIFF"
    assert TurnCuration.objects.get(turn=framed).suggested_screenshot == framed.frames[1]["screenshot"]


def test_an_export_is_uploaded_in_parts_and_downloads_whole_and_by_range(
    s3_server, s3_storage, researcher, api_for, worker, settings
):
    demos = ingest_corpus(project="alpha", demos=4, turns=30, elements=1200, seed=5)
    client = api_for(researcher)

    job_id = client.post(EXPORTS, {"project": "alpha", "format": "weblinx"}, format="json").json()["id"]
    final = finished_job(client, job_id)

    assert final["status"] == "done", final["error"]
    key = f"exports/{job_id}/alpha-weblinx-{job_id}.tar.gz"
    head = s3_server.client().head_object(Bucket=s3_storage["AWS_STORAGE_BUCKET_NAME"], Key=key)
    assert final["size"] > 5 * MIB
    assert head["ContentLength"] == final["size"]
    assert head["ETag"].strip('"').endswith(f"-{-(-final['size'] // (5 * MIB))}")  # one part per 5 MiB
    assert list(settings.EXPORT_TMP_DIR.iterdir()) == []  # the work folder is gone; the archive was never in it
    data = b"".join(client.get(final["download_url"]).streaming_content)
    assert hashlib.sha256(data).hexdigest() == final["sha256"]
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        names = tar.getnames()
    assert sum(name.endswith("/replay.json") for name in names) == len(demos)
    middle = client.get(final["download_url"], HTTP_RANGE=f"bytes={3 * MIB}-{6 * MIB - 1}")
    assert middle.status_code == 206
    assert b"".join(middle.streaming_content) == data[3 * MIB : 6 * MIB]


def test_a_zip_export_downloads_through_a_presigned_redirect_with_range(
    s3_storage, researcher, api_for, worker, settings
):
    ingest_corpus(project="alpha", demos=2, turns=20, elements=100, seed=9)
    client = api_for(researcher)
    job_id = client.post(
        EXPORTS, {"project": "alpha", "format": "mind2web", "archive_format": "zip"}, format="json"
    ).json()["id"]
    final = finished_job(client, job_id)
    assert final["status"] == "done", final["error"]
    settings.S3_DOWNLOAD_REDIRECT = True

    redirect = client.get(final["download_url"])

    assert redirect.status_code == 302
    assert redirect["Location"].startswith(s3_storage["AWS_S3_ENDPOINT_URL"])
    with urllib.request.urlopen(redirect["Location"], timeout=30) as response:  # no token: the URL is the grant
        data = response.read()
        assert f"alpha-mind2web-{job_id}.zip" in response.headers["Content-Disposition"]
    assert hashlib.sha256(data).hexdigest() == final["sha256"]
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert f"alpha-mind2web-{job_id}/manifest.json" in archive.namelist()
    ranged = urllib.request.Request(redirect["Location"], headers={"Range": "bytes=10-19"})
    with urllib.request.urlopen(ranged, timeout=30) as response:
        assert response.status == 206
        assert response.read() == data[10:20]
    forged = redirect["Location"].replace(f"{job_id}.zip", f"{job_id}.zip.x")
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(forged, timeout=30)


def test_the_multipart_writer_holds_a_bounded_number_of_parts(s3_server, s3_storage):
    writer = MultipartWriter(default_storage, "exports/0/big.bin", "application/octet-stream", 5 * MIB, 2)
    most_held, expected = 0, hashlib.sha256()
    for index in range(12):
        chunk = bytes([index]) * (2 * MIB)
        expected.update(chunk)
        writer.write(chunk)
        most_held = max(most_held, len(writer.buffer) + 5 * MIB * len(writer.in_flight))
    writer.complete()

    assert most_held <= 3 * 5 * MIB  # the part being filled and at most two in flight
    stored = s3_server.client().get_object(Bucket=s3_storage["AWS_STORAGE_BUCKET_NAME"], Key="exports/0/big.bin")
    assert hashlib.sha256(stored["Body"].read()).hexdigest() == expected.hexdigest() == writer.digest.hexdigest()
    assert writer.size == 24 * MIB


def test_a_killed_export_leaves_nothing_downloadable_and_the_sweep_clears_the_bucket(
    s3_server, s3_storage, researcher, api_for, worker, worker_env, settings, tmp_path
):
    """A worker killed mid-upload leaves an incomplete multipart upload (never visible as an object); an archive
    whose job never got marked done is an orphan. Beat's sweep reaps the job, aborts the upload and deletes the
    orphan, and keeps finished exports."""
    settings.JOB_STALE_SECONDS = 10
    bucket = s3_storage["AWS_STORAGE_BUCKET_NAME"]
    ingest_corpus(project="alpha", demos=12, turns=30, elements=1500, seed=6)
    client = api_for(researcher)
    job_id = client.post(EXPORTS, {"project": "alpha", "format": "weblinx"}, format="json").json()["id"]
    wait_until(lambda: list(abandoned_uploads(default_storage, "exports/")), 240, 0.2, "the upload to start")
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    s3_server.client().put_object(Bucket=bucket, Key="exports/99999/orphan.tar.gz", Body=b"left by a killed worker")

    env = {**worker_env, "JOB_STALE_SECONDS": "10", "EXPORT_SWEEP_SECONDS": "1"}
    with (
        celery_worker(env, tmp_path / "sweeper.log"),
        celery_beat(env, tmp_path / "beat.log", tmp_path / "beat-schedule"),
    ):
        wait_until(
            lambda: not list(abandoned_uploads(default_storage, "exports/")), 120, 0.2, "the sweep to abort the upload"
        )
        wait_until(
            lambda: not bucket_keys(s3_server, bucket, "exports/99999/"), 120, 0.2, "the sweep to delete the orphan"
        )
        other = client.post(EXPORTS, {"project": "alpha", "format": "mind2web"}, format="json").json()["id"]
        assert (ended := finished_job(client, other))["status"] == "done", ended["error"]
    sweep_export_folders()  # once more, here: a finished export is never swept

    killed = ExportJob.objects.get(pk=job_id)
    assert killed.status == JobStatus.FAILED
    assert not killed.file
    assert client.get(f"{EXPORTS}{job_id}/download/").status_code == 409
    assert bucket_keys(s3_server, bucket, "exports/") == [f"exports/{other}/alpha-mind2web-{other}.tar.gz"]
    assert not s3_server.client().list_multipart_uploads(Bucket=bucket).get("Uploads")


def test_the_export_reader_copies_objects_and_names_what_is_missing(s3_server, s3_storage, tmp_path):
    """Blobs for an export are read with presigned GETs through the storage client's own HTTP session: the bytes
    (a body bigger than one read chunk included) and their sha256 come back; a missing object is named."""
    small, big = b"<html>tiny</html>", os.urandom(3 * MIB + 17)
    default_storage.save("blobs/aa/small", io.BytesIO(small))
    default_storage.save("blobs/bb/big", io.BytesIO(big))
    reader = S3ObjectReader(default_storage)

    with (tmp_path / "copy").open("w+b") as out:
        out.write(b"left from an earlier attempt" * 1000)
        digests = [reader.copy("blobs/aa/small", out)]
        out.seek(0)
        copied_small = out.read()
        digests.append(reader.copy("blobs/bb/big", out))
        out.seek(0)
        copied_big = out.read()

    assert (copied_small, copied_big) == (small, big)
    assert digests == [hashlib.sha256(small).hexdigest(), hashlib.sha256(big).hexdigest()]
    with pytest.raises(FileNotFoundError, match="blobs/cc/absent"), (tmp_path / "absent").open("wb") as out:
        reader.copy("blobs/cc/absent", out)


def test_the_export_reader_gives_up_on_an_unreachable_server_after_its_attempts(s3_server, s3_storage, tmp_path):
    from storages.backends.s3 import S3Storage

    unreachable = S3Storage(endpoint_url=f"http://127.0.0.1:{free_port()}")
    reader = S3ObjectReader(unreachable)
    with pytest.raises(OSError, match=f"after {reader.ATTEMPTS} attempts"), (tmp_path / "x").open("wb") as out:
        reader.copy("blobs/aa/small", out)


def test_an_export_fails_cleanly_on_a_blob_whose_stored_bytes_are_not_its_hash(
    s3_server, s3_storage, researcher, api_for, worker
):
    """Blobs are named by their sha256, so what comes back from the bucket is checked against it: a blob altered
    in storage fails the export with its name, instead of shipping bytes the manifest would vouch for."""
    demo = ingest_corpus(project="alpha", demos=1, turns=6, elements=120, seed=8)[0]
    page = Turn.objects.filter(demonstration=demo, page__isnull=False).first().page_id
    bucket = s3_storage["AWS_STORAGE_BUCKET_NAME"]
    # the worker packs the finished demo's blobs; without its pack the export reads each blob's own object
    wait_until(
        lambda: pack_name(demo.name) in bucket_keys(s3_server, bucket, "blobpacks/"), 120, 0.2, "the demo's blob pack"
    )
    s3_server.client().delete_object(Bucket=bucket, Key=pack_name(demo.name))
    s3_server.client().put_object(Bucket=bucket, Key=sha256_path(page), Body=b"<html>not what was uploaded</html>")
    client = api_for(researcher)

    job_id = client.post(EXPORTS, {"project": "alpha", "format": "weblinx"}, format="json").json()["id"]
    final = finished_job(client, job_id)

    assert final["status"] == "failed"
    assert page in final["error"]
    assert "does not match its sha256" in final["error"]
    assert not bucket_keys(s3_server, bucket, f"exports/{job_id}/")


def test_blobs_read_one_at_a_time_go_through_the_checked_reader(s3_server, s3_storage):
    """``read`` (the Mind2Web exporter's pages and bboxes, outside any ``with`` block) uses the same presigned,
    sha256-checked reader as the export's fetchers: altered bytes are refused by name."""
    good, altered = b"<html>kept</html>", b"<html>original</html>"
    good_sha, altered_sha = hashlib.sha256(good).hexdigest(), hashlib.sha256(altered).hexdigest()
    default_storage.save(sha256_path(good_sha), io.BytesIO(good))
    default_storage.save(sha256_path(altered_sha), io.BytesIO(b"<html>changed in the bucket</html>"))
    blobs = RemoteStorageBlobs()

    assert isinstance(blobs.reader, S3ObjectReader)
    assert blobs.read(good_sha) == good
    with pytest.raises(OSError, match=f"{altered_sha} read from storage does not match its sha256"):
        blobs.read(altered_sha)


def exported_manifest(client, job_id) -> dict:
    """The finished export's manifest (``{path: {sha256, size}}``) of its data files, read from the archive as a user
    downloads it. ``quality.json`` is left out: it carries the time it was generated, so two exports differ there."""
    final = finished_job(client, job_id)
    assert final["status"] == "done", final["error"]
    data = b"".join(client.get(final["download_url"]).streaming_content)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        manifest = next(member for member in tar.getmembers() if member.name.endswith("/manifest.json"))
        files = json.loads(tar.extractfile(manifest).read())["files"]
    return {name: entry for name, entry in files.items() if name != "quality.json"}


def test_exports_read_each_demo_from_its_blob_pack_and_fall_back_to_single_blobs(
    s3_server, s3_storage, researcher, api_for, worker
):
    """Once a recording finishes the worker packs its blobs into one object; exports read a demo's blobs from it
    (one GET) and give the same files as from the blobs' own objects. A pack is only a copy: a blob missing from it,
    or a pack that fails its check, is read on its own."""
    first, second = ingest_corpus(project="alpha", demos=2, turns=10, elements=150, seed=11)
    bucket, s3 = s3_storage["AWS_STORAGE_BUCKET_NAME"], s3_server.client()
    for demo in (first, second):
        wait_until(
            lambda d=demo: pack_name(d.name) in bucket_keys(s3_server, bucket, "blobpacks/"), 120, 0.2, "the blob packs"
        )
    client = api_for(researcher)
    new_export = lambda: client.post(EXPORTS, {"project": "alpha", "format": "weblinx"}, format="json").json()["id"]  # noqa: E731
    before = exported_manifest(client, new_export())
    assert sum(name.endswith("/replay.json") for name in before) == 2

    # the first demo's blobs now only in its pack: the export still has every file, with the same bytes
    only_first = set(demo_shas(first)) - set(demo_shas(second))
    assert only_first
    for sha in only_first:
        s3.delete_object(Bucket=bucket, Key=sha256_path(sha))
    # the second demo's pack damaged: its blobs are read from their own objects
    pack = s3.get_object(Bucket=bucket, Key=pack_name(second.name))["Body"].read()
    s3.put_object(Bucket=bucket, Key=pack_name(second.name), Body=pack[:-100] + bytes(100))

    assert exported_manifest(client, new_export()) == before


def stored_blob(data: bytes, stored: bytes | None = None) -> str:
    """A blob saved in the bucket under its sha256 (with ``stored``: other bytes under that name); its sha256."""
    sha = hashlib.sha256(data).hexdigest()
    default_storage.save(sha256_path(sha), io.BytesIO(data if stored is None else stored))
    return sha


def test_evaluations_get_real_files_and_export_jobs_archive_blobs_from_the_cache_unlinked(s3_storage, tmp_path):
    """Without ``planned`` (evaluations, ``export_dataset``) each blob is a file in the folder, the cache's own;
    with it (export jobs) nothing is written in the folder: ``files()`` names each destination's checked cache file,
    each blob fetched once, whatever the number of destinations."""
    page, shot = stored_blob(b"<html>page</html>"), stored_blob(b"\x89PNG shot")
    folder = tmp_path / "out"
    folder.mkdir()
    with RemoteStorageBlobs(tmp_path / "linked") as blobs:
        blobs.copy_to(page, folder / "page.html")
        blobs.copy_to(shot, folder / "a.png")
        blobs.copy_to(shot, folder / "b.png")
    assert (folder / "page.html").read_bytes() == b"<html>page</html>"
    assert (folder / "a.png").read_bytes() == (folder / "b.png").read_bytes() == b"\x89PNG shot"
    assert (folder / "a.png").stat().st_ino == (tmp_path / "linked" / shot).stat().st_ino

    planned = tmp_path / "planned"
    planned.mkdir()
    with RemoteStorageBlobs(tmp_path / "cache", planned=True) as blobs:
        for name, sha in (("page.html", page), ("a.png", shot), ("b.png", shot)):
            blobs.copy_to(sha, str(planned / name))
        files = blobs.files()
        for file in files.values():
            blobs.wait(file)
    assert list(planned.iterdir()) == []
    assert files == {str(planned / "page.html"): str(tmp_path / "cache" / page)} | {
        str(planned / name): str(tmp_path / "cache" / shot) for name in ("a.png", "b.png")
    }
    assert sorted(blobs.checked.values()) == sorted([page, shot])
    assert sorted(path.name for path in (tmp_path / "cache").iterdir()) == sorted([page, shot])


def test_a_planned_blob_that_fails_its_check_fails_the_archive_with_its_error(s3_storage, tmp_path):
    """The archive waits for a planned blob still arriving; one whose stored bytes are not its sha256 never arrives:
    the archive raises the fetch's own error, and leaving the block raises it too."""
    good, altered = stored_blob(b"kept"), stored_blob(b"original", stored=b"changed in the bucket")
    root = tmp_path / "out"
    root.mkdir()
    (root / "replay.json").write_text("{}")
    mismatch = f"{altered} read from storage does not match its sha256"

    def archive_then_leave():
        with RemoteStorageBlobs(tmp_path / "cache", planned=True) as blobs:
            blobs.copy_to(good, str(root / "a.png"))
            blobs.copy_to(altered, str(root / "b.png"))
            with pytest.raises(OSError, match=mismatch):  # the archive, waiting for the blob
                write_archive(root, tmp_path / "x.tar.gz", planned=blobs.files(), known=blobs.checked, arriving=blobs)

    with pytest.raises(OSError, match=mismatch):  # leaving the block: the fetch's failure again
        archive_then_leave()
    assert not (tmp_path / "cache" / altered).exists()


@pytest.mark.parametrize("planned", [True, False])
def test_a_blob_name_that_is_no_sha256_is_refused_before_the_cache_is_touched(s3_storage, tmp_path, planned):
    """Blob names come from the database and from imported releases, and are joined to the cache folder: a name that
    is a path would have the fetch write beside it and the archive read it."""
    secret = tmp_path / "secret.txt"
    secret.write_text("not a blob")
    root = tmp_path / "out"
    root.mkdir()
    with RemoteStorageBlobs(tmp_path / "cache", planned) as blobs:
        for name in (str(secret), "../secret.txt", hashlib.sha256(b"x").hexdigest().upper()):
            with pytest.raises(ValueError, match="is not a blob's sha256"):
                blobs.copy_to(name, str(root / "a.png"))
    assert blobs.claims == {}
    assert sorted(path.name for path in tmp_path.iterdir()) == ["cache", "out", "secret.txt"]
    assert list(root.iterdir()) == []


def test_reading_ahead_claims_only_names_that_are_sha256s(s3_storage, tmp_path):
    """A chosen screenshot is a string of the review's: reading a demo's pack ahead never joins one that is a path to
    the cache (its ``.part`` would be written beside what it names); ``copy_to`` refuses it when the exporter asks."""
    page = stored_blob(b"<html>page</html>")
    turn = types.SimpleNamespace(page=page, bboxes=None, screenshot="../escape")
    with RemoteStorageBlobs(tmp_path / "cache", planned=True) as blobs:
        demos = list(blobs.prefetch([types.SimpleNamespace(name="no-pack", turns=(turn,))]))
    assert [demo.turns for demo in demos] == [(turn,)]
    assert set(blobs.claims) == blobs.fetched == {page}
    assert sorted(path.name for path in tmp_path.iterdir()) == ["cache"]
    assert [path.name for path in (tmp_path / "cache").iterdir()] == [page]


def stored_pack(demo_name: str, blobs: list[bytes]) -> None:
    """A raw (``MAGIC_RAW``) pack of ``blobs`` saved in the bucket as the demo's."""
    index = json.dumps({"blobs": [[hashlib.sha256(blob).hexdigest(), len(blob)] for blob in blobs]}).encode()
    body = packs.MAGIC_RAW + struct.pack(">Q", len(index)) + index + b"".join(blobs)
    default_storage.save(pack_name(demo_name), io.BytesIO(body))


def failing_close(self):
    """``PackWriter.close`` doing its work, then failing as a full disk does when the body is done."""
    real_close(self)
    if getattr(self, "entries", None) is not None:  # not the close its constructor makes
        raise OSError(errno.ENOSPC, "No space left on device")


real_close = packs.PackWriter.close


def waited(blobs, files) -> list:
    """``wait`` on each file from a thread of its own; what each did within a minute (a hang is "still waiting")."""
    outcomes = {}

    def wait(file):
        try:
            blobs.wait(file)
            outcomes[file] = "in"
        except Exception as error:
            outcomes[file] = repr(error)

    threads = [threading.Thread(target=wait, args=(file,), daemon=True) for file in files]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return [outcomes.get(file, "still waiting") for file in files]


def test_a_pack_reader_whose_cleanup_fails_still_settles_every_claim(s3_storage, tmp_path):
    """Closing the pack's writer may fail (a full disk flushing a blob): the blobs it found are still in, the rest
    are read on their own, and the archive never waits forever for a claim nobody settles."""
    packed, loose = b"<html>in the pack</html>", b"\x89PNG not in the pack"
    page, shot = stored_blob(packed), stored_blob(loose)
    stored_pack("demo", [packed])
    turn = types.SimpleNamespace(page=page, bboxes=None, screenshot=shot)
    with (
        mock.patch.object(packs.PackWriter, "close", failing_close),
        RemoteStorageBlobs(tmp_path / "cache", planned=True) as blobs,
    ):
        list(blobs.prefetch([types.SimpleNamespace(name="demo", turns=(turn,))]))
        blobs.copy_to(page, str(tmp_path / "page.html"))
        blobs.copy_to(shot, str(tmp_path / "shot.png"))
        files = blobs.files()
        assert waited(blobs, list(files.values())) == ["in", "in"]
        # the pack's blob kept in memory for the archive, the other read on its own into the cache
        assert blobs.taken(files[str(tmp_path / "page.html")]) == (packed, page)
        assert blobs.read(page) == packed
        assert blobs.taken(files[str(tmp_path / "shot.png")]) is None
    assert (tmp_path / "cache" / shot).read_bytes() == loose
    assert not (tmp_path / "cache" / page).exists()
    assert blobs.held == {}  # given back when the block ends
    assert blobs.holding == 0


def test_a_destination_that_cannot_be_linked_still_lets_the_blobs_missing_from_the_pack_be_read(s3_storage, tmp_path):
    """Linking (evaluations, ``export_dataset``): a destination the pack's blob cannot be linked to fails the export
    with its error, and the blob the pack lacked is still read: whoever reads it is not left waiting."""
    packed, loose = b"<html>in the pack</html>", b"\x89PNG not in the pack"
    page, shot = stored_blob(packed), stored_blob(loose)
    stored_pack("demo", [packed])
    turn = types.SimpleNamespace(page=page, bboxes=None, screenshot=shot)
    gate, read = threading.Event(), {}

    def export():
        with RemoteStorageBlobs(tmp_path / "cache") as blobs:
            copy = blobs.reader.copy
            blobs.reader.copy = lambda *args, **kwargs: gate.wait(60) and copy(*args, **kwargs)
            list(blobs.prefetch([types.SimpleNamespace(name="demo", turns=(turn,))]))  # both claimed by the pack
            blobs.copy_to(page, tmp_path / "a-file" / "page.html")  # waits for the pack, then cannot be linked
            gate.set()
            reader = threading.Thread(target=lambda: read.update(shot=blobs.read(shot)), daemon=True)
            reader.start()
            reader.join(60)

    (tmp_path / "a-file").write_bytes(b"")
    with pytest.raises(NotADirectoryError):  # the destination's folder is a file: the export fails with it
        export()
    assert read == {"shot": loose}


def test_an_export_job_on_s3_archives_the_files_and_links_it_archives_on_local_storage(
    s3_server, s3_storage, settings, tmp_path, researcher
):
    """The same demos exported by the job on S3 (blobs from packs and from their own objects, archived from the
    cache) and on local storage (archived from the store): the same members, links, bytes and manifest."""
    demos = ingest_corpus(project="alpha", demos=3, turns=12, elements=120, seed=13)
    for demo in demos[:2]:  # the third demo's blobs are read one by one
        packs.pack_demo(demo)
    on_s3 = archived_members(exported_archive(demos[0].project, researcher))

    bucket, s3 = s3_storage["AWS_STORAGE_BUCKET_NAME"], s3_server.client()
    keys = bucket_keys(s3_server, bucket, "blobs/")
    media = tmp_path / "local-media"
    for key in keys:
        (media / key).parent.mkdir(parents=True, exist_ok=True)
        (media / key).write_bytes(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(media)}},
    }
    on_local = archived_members(exported_archive(demos[0].project, researcher))

    assert on_s3 == on_local
    members, manifest = on_s3
    assert any(kind == tarfile.LNKTYPE for kind, _, _ in members.values())  # a blob used twice: archived once
    assert sum(name.endswith("/replay.json") for name in manifest) == 3


def test_blobs_larger_than_a_pack_holds_are_left_out_of_it_and_exported_all_the_same(
    s3_server, s3_storage, researcher, monkeypatch
):
    """A blob over ``packs.MAX_BLOB_BYTES`` is not packed (an export would not take it from a pack): the export
    reads it on its own, and every archived file still has its bytes."""
    (demo,) = ingest_corpus(project="alpha", demos=1, turns=10, elements=120, seed=21)
    sizes = {sha: default_storage.size(sha256_path(sha)) for sha in demo_shas(demo)}
    cap = sorted(sizes.values())[len(sizes) // 2]
    monkeypatch.setattr(packs, "MAX_BLOB_BYTES", cap)

    packed = packs.pack_demo(demo)
    assert packed == sum(size <= cap for size in sizes.values())
    assert 0 < packed < len(sizes)

    members, manifest = archived_members(exported_archive(demo.project, researcher))
    blob_files = 0
    for name, entry in manifest.items():
        kind, link, content = members[name]
        content = members[link][2] if kind == tarfile.LNKTYPE else content
        assert hashlib.sha256(content).hexdigest() == entry["sha256"], name
        blob_files += entry["sha256"] in sizes
    assert blob_files >= len(sizes)
