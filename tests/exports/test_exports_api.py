"""The researcher API around exports: creating jobs, their validation and permissions, cancel, download."""

import hashlib

import pytest
from django.core.files.base import ContentFile

from annotation.models import ExportJob, JobStatus, Membership, Role

EXPORTS = "/api/exports/"


@pytest.fixture
def client(researcher, api_for):
    return api_for(researcher)


def create(client, **fields):
    return client.post(EXPORTS, {"project": "alpha", "format": "weblinx", **fields}, format="json")


def test_a_researcher_starts_an_export_which_is_queued_and_enqueued_after_commit(
    client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = create(client, splits=["train", "valid"])

    assert response.status_code == 202
    body = response.json()
    assert (body["status"], body["progress"], body["download_url"]) == ("queued", 0.0, None)
    assert (body["format"], body["splits"], body["statuses"], body["archive_format"]) == (
        "weblinx",
        ["train", "valid"],
        ["validated"],
        "tar.gz",
    )
    assert len(callbacks) == 1
    assert ExportJob.objects.get().owner.username == "researcher"


def test_every_status_but_recording_may_be_exported(client):
    statuses = ["recorded", "in_review", "returned", "validated", "rejected"]
    response = create(client, statuses=statuses)
    assert response.status_code == 202
    assert response.json()["statuses"] == statuses
    refused = create(client, statuses=["recording"]).json()["errors"][0]
    assert (refused["field"], refused["message"].count(",")) == ("statuses[0]", 4)


@pytest.mark.parametrize(
    ("fields", "field", "allowed"),
    [
        ({"format": "csv"}, "format", "weblinx, mind2web"),
        ({"splits": ["train", "test_nope"]}, "splits[1]", "test_iid"),
        ({"format": "mind2web", "splits": ["valid"]}, "splits[0]", "test_task"),
        ({"statuses": ["validated", "bogus"]}, "statuses[1]", "rejected"),
        ({"archive_format": "rar"}, "archive_format", "tar.gz, zip"),
    ],
)
def test_bad_parameters_get_400_naming_the_field_and_what_is_allowed(client, fields, field, allowed):
    response = create(client, **fields)

    assert response.status_code == 400
    error = response.json()["errors"][0]
    assert error["field"] == field
    assert allowed in error["message"]
    assert not ExportJob.objects.exists()


def test_a_missing_project_is_named(client):
    response = client.post(EXPORTS, {"format": "weblinx"}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "project"


def test_annotators_and_reviewers_cannot_export_and_outsiders_do_not_see_the_project(
    owner, reviewer, outsider, api_for
):
    assert create(api_for(owner)).status_code == 403
    assert create(api_for(reviewer)).status_code == 403
    assert create(api_for(outsider)).status_code == 404
    assert not ExportJob.objects.exists()


def test_a_researcher_of_another_project_cannot_see_cancel_or_download_a_job(client, beta, api_for):
    job_id = create(client).json()["id"]
    other = api_for(Membership.objects.create(project=beta, user=make_researcher("other"), role=Role.RESEARCHER).user)

    assert other.get(f"{EXPORTS}{job_id}/").status_code == 404
    assert other.post(f"{EXPORTS}{job_id}/cancel/").status_code == 404
    assert other.get(f"{EXPORTS}{job_id}/download/").status_code == 404
    assert other.get(EXPORTS).json()["count"] == 0


def make_researcher(username):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user(username=username, password="x")


def test_only_the_jobs_owner_or_a_project_admin_cancels_it(client, alpha, api_for):
    from tests.support.actors import make_user

    job_id = create(client).json()["id"]
    colleague = api_for(make_user("colleague", alpha, Role.RESEARCHER))

    assert colleague.get(f"{EXPORTS}{job_id}/").status_code == 200
    assert colleague.post(f"{EXPORTS}{job_id}/cancel/").status_code == 403
    assert client.get(f"{EXPORTS}{job_id}/").json()["status"] == "queued"
    admin = api_for(make_user("boss", alpha, Role.ADMIN))
    assert admin.post(f"{EXPORTS}{job_id}/cancel/").status_code == 200


def test_a_queued_job_can_be_cancelled_once(client):
    job_id = create(client).json()["id"]

    first = client.post(f"{EXPORTS}{job_id}/cancel/")
    second = client.post(f"{EXPORTS}{job_id}/cancel/")

    assert first.status_code == 200
    assert first.json()["status"] == "cancelled"
    assert second.status_code == 409
    assert "already cancelled" in second.json()["detail"]


def test_an_unfinished_export_cannot_be_downloaded(client):
    job_id = create(client).json()["id"]
    response = client.get(f"{EXPORTS}{job_id}/download/")
    assert response.status_code == 409
    assert "queued" in response.json()["detail"]


@pytest.fixture
def finished_job(alpha, researcher):
    data = bytes(range(256)) * 40
    job = ExportJob.objects.create(
        project=alpha,
        owner=researcher,
        format="weblinx",
        statuses=["validated"],
        status=JobStatus.DONE,
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
    )
    job.file.save(f"exports/{job.pk}/{job.filename}", ContentFile(data), save=True)
    return job, data


def test_a_finished_export_streams_whole_or_by_range(client, finished_job):
    job, data = finished_job
    url = f"{EXPORTS}{job.pk}/download/"

    whole = client.get(url)
    part = client.get(url, HTTP_RANGE="bytes=100-199")
    tail = client.get(url, HTTP_RANGE="bytes=-10")
    outside = client.get(url, HTTP_RANGE=f"bytes={len(data)}-")

    assert whole.status_code == 200
    assert b"".join(whole.streaming_content) == data
    assert whole["Accept-Ranges"] == "bytes"
    assert whole["ETag"] == f'"{job.sha256}"'
    assert f'filename="{job.filename}"' in whole["Content-Disposition"]
    assert part.status_code == 206
    assert part["Content-Range"] == f"bytes 100-199/{len(data)}"
    assert b"".join(part.streaming_content) == data[100:200]
    assert b"".join(tail.streaming_content) == data[-10:]
    assert outside.status_code == 416
    assert outside["Content-Range"] == f"bytes */{len(data)}"


def test_the_job_lists_a_download_url_once_done(client, finished_job):
    job, _ = finished_job
    body = client.get(f"{EXPORTS}{job.pk}/").json()
    assert body["download_url"].endswith(f"/api/exports/{job.pk}/download/")
    assert client.post(f"{EXPORTS}{job.pk}/cancel/").status_code == 409


def test_a_running_job_whose_worker_went_silent_is_reported_failed(client, alpha, researcher, settings):
    import datetime as dt

    from django.utils import timezone

    settings.JOB_STALE_SECONDS = 5
    job = ExportJob.objects.create(
        project=alpha,
        owner=researcher,
        format="weblinx",
        statuses=["validated"],
        status=JobStatus.RUNNING,
        progress=0.4,
        heartbeat_at=timezone.now() - dt.timedelta(seconds=6),
    )

    body = client.get(f"{EXPORTS}{job.pk}/").json()

    assert body["status"] == "failed"
    assert "stopped responding" in body["error"]
    assert client.get(f"{EXPORTS}{job.pk}/download/").status_code == 409


def test_an_export_of_a_selection_writes_only_the_selected_demos(client, alpha):
    import io
    import json
    import tarfile

    from tests.support.corpus import ingest_corpus
    from workers.exports.jobs import run_export

    demos = ingest_corpus(project="alpha", demos=3, turns=6, elements=20, seed=11, status="recorded")
    chosen = sorted(demo.name for demo in demos[:2])
    created = create(client, demos=[*chosen, chosen[0]], statuses=["recorded"])
    assert created.status_code == 202, created.json()
    assert created.json()["demos"] == chosen  # duplicates dropped, order kept
    run_export(created.json()["id"])
    job = ExportJob.objects.get(pk=created.json()["id"])
    assert (job.status, job.counts["demos"]) == (JobStatus.DONE, 2), job.error
    data = b"".join(client.get(f"/api/exports/{job.pk}/download/").streaming_content)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        splits = json.load(tar.extractfile(f"alpha-weblinx-{job.pk}/splits.json"))
    assert sorted(name for names in splits.values() for name in names) == chosen


def test_a_selection_names_every_demo_the_export_would_leave_out(client, alpha, beta, outsider):
    from tests.support.corpus import ingest_corpus

    recorded = ingest_corpus(project="alpha", demos=1, turns=4, elements=20, seed=12, status="recorded")[0]
    elsewhere = ingest_corpus(project="beta", demos=1, turns=4, elements=20, seed=13, status="validated")[0]
    response = create(client, demos=[recorded.name, elsewhere.name, "no-such-demo"])
    assert response.status_code == 400
    error = response.json()["errors"][0]
    assert error["field"] == "demos"
    message = response.json()["detail"]
    assert f"{recorded.name} (recorded)" in message  # statuses default to validated
    assert f"{elsewhere.name} (not in alpha)" in message
    assert "no-such-demo (not in alpha)" in message
    assert create(client, demos=[recorded.name], statuses=["recorded"], splits=["test_vis"]).status_code == 400
    assert create(client, demos=[""]).status_code == 400
    too_many = create(client, demos=[f"d{i}" for i in range(5001)])
    assert (too_many.status_code, too_many.json()["errors"][0]["field"]) == (400, "demos")
    tb = client.post(EXPORTS, {"project": "alpha", "format": "turkingbench", "demos": [recorded.name]}, format="json")
    assert (tb.status_code, tb.json()["errors"][0]["field"]) == (400, "demos")
    assert not ExportJob.objects.exists()


@pytest.mark.parametrize("outcome", ["done", "failed"])
def test_a_job_is_seen_ended_only_once_its_work_folder_is_gone(client, alpha, settings, monkeypatch, tmp_path, outcome):
    """Whoever reads a job as done or failed (an API client, a test) finds its work folder already removed: under
    load the folder used to outlive the status by a moment (the S3 export test read it in between)."""
    from annotation.actions.exports import jobs
    from tests.support.corpus import ingest_corpus
    from workers import runners
    from workers.exports import jobs as export_jobs
    from workers.exports.jobs import run_export

    settings.EXPORT_TMP_DIR = tmp_path / "exports"
    ingest_corpus(project="alpha", demos=2, turns=4, elements=20, seed=14)
    folders_at_the_end = []

    def finish_job(job, status, **fields):
        folders_at_the_end.append(sorted(path.name for path in settings.EXPORT_TMP_DIR.iterdir()))
        return jobs.finish_job(job, status, **fields)

    def broken_archive(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(runners, "finish_job", finish_job)
    if outcome == "failed":
        monkeypatch.setattr(export_jobs, "write_archive", broken_archive)
    created = create(client)
    run_export(created.json()["id"])

    assert ExportJob.objects.get(pk=created.json()["id"]).status == outcome
    assert folders_at_the_end == [[]]


def test_the_admins_export_page_links_the_archive_where_it_is_served(finished_job):
    """The admin shows the archive as a link to the API's download (``/media/`` is not served: it was a 404)."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    job, data = finished_job
    admin = Client()
    admin.force_login(get_user_model().objects.create_superuser("root", "root@x.org", "pw"))
    page = admin.get(f"/admin/annotation/exportjob/{job.pk}/change/").content.decode()

    assert f'href="/api/exports/{job.pk}/download/"' in page
    assert "/media/" not in page
    assert b"".join(admin.get(f"/api/exports/{job.pk}/download/").streaming_content) == data


def test_the_browsable_apis_format_links_answer(client, finished_job):
    """``?format=json`` and ``?format=api`` (the browsable API's own links) pick the renderer (they were a 400: a
    ``format`` filter took them for export formats)."""
    browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    job, _ = finished_job
    as_json = client.get(f"{EXPORTS}?format=json", HTTP_ACCEPT=browser)
    as_page = client.get(f"{EXPORTS}?format=api", HTTP_ACCEPT=browser)
    assert as_json.status_code == as_page.status_code == 200
    assert [row["id"] for row in as_json.json()["results"]] == [job.pk]
    assert as_page["Content-Type"].startswith("text/html")
    for query in ("format=json", "format=api"):
        assert client.get(f"/api/evaluations/?{query}", HTTP_ACCEPT=browser).status_code == 200
