"""An import job whose uploaded archive is gone before the worker runs it fails saying so, without naming where the
server stores uploads, and imports nothing."""

import io
import tarfile

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Demonstration, ImportJob
from tests.support.weblinx_release import write_release
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
