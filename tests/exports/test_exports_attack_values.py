"""Attacks on re-curation's imports and value edits (issue 40): an archive of more members than allowed is refused
before the rest is read."""

import io
import tarfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.lib import release_archive
from annotation.models import ImportJob

URL = "/api/projects/alpha/imports/"


def many_members(count: int) -> bytes:
    """A .tar.gz of ``count`` empty files whose compressed stream is cut short at its end: read to the end, it is
    damaged; read only to a member limit, it is not."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for n in range(count):
            archive.addfile(tarfile.TarInfo(f"weblinx/demonstrations/d{n}/replay.json"), io.BytesIO(b""))
    return buffer.getvalue()[:-64]


@pytest.mark.django_db
def test_an_archive_of_too_many_members_is_refused_without_reading_them_all(
    api_for, researcher, alpha, media_storage, monkeypatch
):
    monkeypatch.setattr(release_archive, "MAX_MEMBERS", 50)  # the limit of 500,000, smaller for a test's archive
    answer = api_for(researcher).post(URL, {"file": SimpleUploadedFile("r.tar.gz", many_members(5_000))})
    assert answer.status_code == 413, answer.content
    assert answer.json()["errors"] == [{"field": "file", "message": "file: more than 50 members"}]
    assert not ImportJob.objects.exists()
