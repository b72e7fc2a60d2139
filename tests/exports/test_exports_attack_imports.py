"""Hostile releases and lost uploads: an import job whose archive is gone before the worker runs it fails saying so,
without naming where the server stores uploads; a demo whose JSON holds a NUL (PostgreSQL stores none) is skipped
naming its file, and the others are imported."""

import io
import json
import tarfile

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.actions.exports.releases import do_import_weblinx
from annotation.models import Demonstration, ImportJob
from tests.support.weblinx_release import write_demo, write_json, write_release
from workers.exports.imports import run_import


def tar_gz(root) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        archive.add(root, arcname="weblinx")
    return buffer.getvalue()


@pytest.mark.django_db
def test_a_job_whose_upload_was_removed_fails_without_the_storage_path(
    api_for, researcher, alpha, tmp_path, media_storage
):
    client = api_for(researcher)
    for attempt in range(2):
        release = tar_gz(write_release(tmp_path / f"release-{attempt}"))
        answer = client.post("/api/projects/alpha/imports/", {"file": SimpleUploadedFile("r.tar.gz", release)})
        assert answer.status_code == 202, answer.content
        job = ImportJob.objects.get(pk=answer.json()["id"])
        default_storage.delete(job.archive.name)
        ImportJob.objects.filter(pk=job.pk).update(status="queued")  # as if the broker had it, whatever it answered
        run_import(job.pk)
        seen = client.get(f"/api/imports/{job.pk}/").json()
        assert seen["status"] == "failed"
        assert seen["error"] == "the uploaded archive is gone: upload the release again"
        assert str(media_storage) not in str(seen)
    assert not Demonstration.objects.filter(project=alpha).exists()


def with_nul(folder, name, key):
    document = json.loads((folder / name).read_text())
    document[key] = "before\x00after"
    write_json(folder / name, document)


@pytest.mark.django_db
def test_a_demo_whose_json_holds_a_nul_is_skipped_naming_the_file(alpha, researcher, tmp_path, media_storage):
    root = tmp_path / "release"
    write_demo(root, "good")
    write_demo(root, "utterance", utterance="a\x00b")
    with_nul(write_demo(root, "form"), "form.json", "website")
    with_nul(write_demo(root, "metadata"), "metadata.json", "userAgent")
    write_demo(root, "later")
    write_json(root / "splits.json", {"train": ["good", "utterance", "form"], "valid": ["metadata", "later"]})
    report = do_import_weblinx(root, alpha, researcher).as_dict()
    assert sorted(item["item"] for item in report["imported"]) == ["good", "later"]
    why = {item["item"]: item["why"] for item in report["skipped"]}
    assert why == {
        "form": "form.json: a string holds a NUL character (\\u0000)",
        "metadata": "metadata.json: a string holds a NUL character (\\u0000)",
        "utterance": "replay.json: a string holds a NUL character (\\u0000)",
    }
    stored = Demonstration.objects.filter(project=alpha).values_list("source_id", flat=True)
    assert sorted(stored) == ["good", "later"]
