"""`POST /api/projects/<name>/imports/`: a release archive uploaded, checked at once (roles, size, archive, layout),
then imported by a real Celery worker, its progress and report read at `/api/imports/<id>/`."""

import pytest

from annotation.models import Demonstration, ImportJob, Role
from tests.support.actors import make_user
from tests.support.jobs import poll_job
from tests.support.release_upload import tar_gz, upload, zipped
from tests.support.weblinx_release import write_demo, write_release

URL = "/api/projects/alpha/imports/"


@pytest.fixture
def archive(tmp_path):
    return tar_gz(write_release(tmp_path / "release"))


@pytest.mark.django_db
def test_only_researchers_and_admins_upload_other_roles_403_outsiders_404(
    api_for, researcher, reviewer, owner, outsider, archive, tmp_path, media_storage
):
    admin = make_user("admin-i", researcher.memberships.first().project, Role.ADMIN)
    for person, data in ((researcher, archive), (admin, zipped(write_release(tmp_path / "again")))):
        answer = upload(api_for(person), data)
        assert answer.status_code == 202, answer.content
        assert answer.json()["status"] in ("queued", "failed")  # failed only when no broker answers
    for person in (reviewer, owner):
        answer = upload(api_for(person), archive)
        assert answer.status_code == 403
        assert "import a release (needs researcher or admin)" in answer.json()["detail"]
    assert upload(api_for(outsider), archive).status_code == 404
    job = ImportJob.objects.first()
    assert api_for(reviewer).get(f"/api/imports/{job.pk}/").status_code == 403
    assert api_for(outsider).get(f"/api/imports/{job.pk}/").status_code == 404
    assert api_for(researcher).get(f"/api/imports/{job.pk}/").json()["archive_name"] == "release.tar.gz"
    assert ImportJob.objects.count() == 2


@pytest.mark.django_db
def test_bad_uploads_are_refused_naming_the_limit_or_the_part(api_for, researcher, tmp_path, settings, media_storage):
    client = api_for(researcher)
    answer = client.post(URL, {}, format="multipart")
    assert answer.status_code == 400
    assert answer.json()["errors"][0]["field"] == "file"

    answer = upload(client, b"this is not an archive at all", name="notes.tar.gz")
    assert answer.status_code == 400
    assert "not a .zip or .tar.gz archive" in answer.json()["detail"]

    (tmp_path / "stray" / "demonstrations").mkdir(parents=True)
    (tmp_path / "stray" / "readme.txt").write_text("no splits here")
    answer = upload(client, tar_gz(tmp_path / "stray"))
    assert answer.status_code == 400
    assert "splits.json: missing" in answer.json()["detail"]

    settings.IMPORT_MAX_UPLOAD_BYTES = 1000
    answer = upload(client, tar_gz(write_release(tmp_path / "big")))
    assert answer.status_code == 413
    assert "IMPORT_MAX_UPLOAD_BYTES (1000 bytes)" in answer.json()["detail"]
    assert not ImportJob.objects.exists()


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
def test_the_worker_imports_an_upload_and_the_job_shows_progress_summary_and_report(
    api_for, researcher, alpha, worker, tmp_path, media_storage
):
    client = api_for(researcher)
    answer = upload(client, zipped(write_release(tmp_path / "release")), name="release.zip")
    assert answer.status_code == 202, answer.content
    seen = poll_job(client, f"/api/imports/{answer.json()['id']}/")
    job = seen[-1]
    assert job["status"] == "done", job
    assert job["progress"] == 1.0
    report = job["report"]
    assert (report["demos"], report["turns"], report["screenshots"]) == (4, 16, 7)
    assert [item["item"] for item in report["skipped"]] == ["echo"]
    assert "replay.json: not valid JSON" in report["skipped"][0]["why"]
    listed = client.get("/api/demonstrations/", {"project__name": "alpha"}).json()["results"]
    assert sorted(row["source_id"] for row in listed) == ["alpha", "bravo", "charlie", "delta"]

    write_demo(tmp_path / "release", "foxtrot")  # the same release again, one demo more; then that very file again
    data = tar_gz(tmp_path / "release")
    second = poll_job(client, f"/api/imports/{upload(client, data).json()['id']}/")[-1]
    assert second["status"] == "done"
    assert second["report"]["demos"] == 1
    again = upload(client, data)
    assert again.status_code == 409
    assert f"import {second['id']} (done, 'release.tar.gz') took it" in again.json()["detail"]
    zipped_again = upload(client, zipped(tmp_path / "release"), name="r.zip").json()["id"]
    third = poll_job(client, f"/api/imports/{zipped_again}/")[-1]
    assert third["status"] == "failed"  # the same release in another file: nothing new
    assert "5 in project 'alpha' already, 1 skipped for other reasons" in third["error"]
    assert Demonstration.objects.filter(project=alpha).count() == 5
    uploads = media_storage / "imports"
    assert not uploads.exists() or not list(uploads.iterdir())  # each archive removed once run
