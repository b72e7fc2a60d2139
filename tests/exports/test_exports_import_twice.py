"""Importing the same release twice through `POST /api/projects/<name>/imports/` (WebLINX and Mind2Web): the same
file again is a 409 at submission naming the earlier job while that job is queued, running or done; a failed job
does not hold it; two identical uploads at once give one 202 and one 409; a different archive whose items are all
imported already ends as a failed job whose report lists each item with why."""

import threading

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction

from annotation.actions.exports.imports import do_create_import
from annotation.models import Demonstration, ImportJob, Project, Role
from tests.support import mind2web_release, weblinx_release
from tests.support.actors import make_user, signed_in, token_client
from tests.support.jobs import poll_job
from tests.support.release_upload import tar_gz, upload, zipped
from tests.support.waits import wait_until
from workers.exports.imports import run_import

WEBLINX_ITEMS = ["alpha", "bravo", "charlie", "delta"]  # the release's good demos (echo's replay.json is broken)
MIND2WEB_ITEMS = ["t-missing", "t-odd", "t-plain", "t-web"]  # t-bad is malformed


def release(release_format, tmp_path) -> bytes:
    if release_format == "mind2web":
        return tar_gz(mind2web_release.write_release(tmp_path / "m2w"), "mind2web")
    return tar_gz(weblinx_release.write_release(tmp_path / "weblinx"), "weblinx")


@pytest.fixture
def people(alpha):
    return {
        "researcher": make_user("researcher", alpha, Role.RESEARCHER),
        "admin": make_user("admin-t", alpha, Role.ADMIN),
        "reviewer": make_user("reviewer", alpha, Role.REVIEWER),
    }


def as_queued(job_id: int) -> None:
    """The job as the broker holds it, whatever the broker answered (a test without a worker)."""
    ImportJob.objects.filter(pk=job_id).update(status="queued", error="")


@pytest.mark.django_db
@pytest.mark.parametrize("release_format", ["weblinx", "mind2web"])
def test_the_same_file_again_is_409_naming_the_job_that_took_it_queued_or_done(
    release_format, people, beta, tmp_path, media_storage
):
    data = release(release_format, tmp_path)
    researcher, admin = token_client(people["researcher"]), token_client(people["admin"])
    first = upload(researcher, data, release_format)
    assert first.status_code == 202, first.content
    job_id = first.json()["id"]
    as_queued(job_id)
    for client in (admin, researcher):  # queued: anyone of the project uploading the same bytes is refused
        again = upload(client, data, release_format, name="renamed.tar.gz")
        assert again.status_code == 409, again.content
        assert f"import {job_id} (queued, 'release.tar.gz') took it" in again.json()["detail"]
        assert again.json()["errors"] == [{"field": "file", "message": f"the same file as import {job_id}"}]
    assert upload(token_client(people["reviewer"]), data, release_format).status_code == 403  # roles first
    run_import(job_id)
    done = researcher.get(f"/api/imports/{job_id}/").json()
    assert done["status"] == "done", done
    assert len(done["sha256"]) == 64
    again = upload(admin, data, release_format)
    assert again.status_code == 409
    assert f"import {job_id} (done, 'release.tar.gz') took it" in again.json()["detail"]
    assert ImportJob.objects.count() == 1
    assert not list((media_storage / "imports").iterdir())  # no refused upload left behind
    other = make_user("beta-admin", beta, Role.ADMIN)  # another project takes the same file
    assert upload(token_client(other), data, release_format, project="beta").status_code == 202
    assert Demonstration.objects.filter(project__name="alpha").count() == 4


@pytest.mark.django_db
@pytest.mark.parametrize("release_format", ["weblinx", "mind2web"])
def test_a_failed_job_does_not_hold_its_file(release_format, people, tmp_path, media_storage):
    data = release(release_format, tmp_path)
    client = token_client(people["admin"])
    for _attempt in range(2):  # the upload lost twice: each retry of the same file is taken
        answer = upload(client, data, release_format)
        assert answer.status_code == 202, answer.content
        job = ImportJob.objects.get(pk=answer.json()["id"])
        default_storage.delete(job.archive.name)
        as_queued(job.pk)
        run_import(job.pk)
        assert client.get(f"/api/imports/{job.pk}/").json()["status"] == "failed"
    retry = upload(token_client(people["researcher"]), data, release_format)
    assert retry.status_code == 202, retry.content
    as_queued(retry.json()["id"])
    run_import(retry.json()["id"])
    assert client.get(f"/api/imports/{retry.json()['id']}/").json()["status"] == "done"
    assert Demonstration.objects.filter(project__name="alpha").count() == 4


@pytest.mark.django_db
@pytest.mark.parametrize("release_format", ["weblinx", "mind2web"])
def test_another_file_of_items_all_imported_fails_listing_each_item(release_format, people, tmp_path, media_storage):
    client = token_client(people["researcher"])
    first = upload(client, release(release_format, tmp_path), release_format)
    as_queued(first.json()["id"])
    run_import(first.json()["id"])
    if release_format == "mind2web":  # one split file of the release, uploaded alone
        other, name, items = (tmp_path / "m2w" / "train.json").read_bytes(), "train.json", ["t-missing", "t-odd"]
        detail = "every task of this release is in project 'alpha' already; nothing was imported"
    else:  # the same release zipped
        other, name, items = zipped(tmp_path / "weblinx"), "release.zip", WEBLINX_ITEMS
        detail = (
            "no demo of this release is left to import: 4 in project 'alpha' already, 1 skipped for other reasons "
            "(see the report); nothing was imported"
        )
    second = upload(token_client(people["admin"]), other, release_format, name=name)
    assert second.status_code == 202, second.content
    as_queued(second.json()["id"])
    run_import(second.json()["id"])
    job = client.get(f"/api/imports/{second.json()['id']}/").json()
    assert (job["status"], job["error"]) == ("failed", detail)
    report = job["report"]
    assert report["demos"] == 0
    assert report["imported"] == []
    already = {row["item"]: row["why"] for row in report["skipped"] if "already imported" in row["why"]}
    assert sorted(already) == items
    names = dict(Demonstration.objects.filter(project__name="alpha").values_list("source_id", "name"))
    for item, why in already.items():
        assert why == f"already imported into this project as demo {names[item]}; not imported"
    assert report["errors"] == [{"field": "demonstrations", "message": f"already there: {', '.join(items)}"}]
    assert len(names) == 4


@pytest.mark.processes
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("release_format", ["weblinx", "mind2web"])
def test_two_identical_uploads_at_once_one_is_taken_and_imported_the_other_409(
    release_format, people, worker, tmp_path, media_storage
):
    data = release(release_format, tmp_path)
    clients = [token_client(people["researcher"]), token_client(people["admin"])]
    start, answers = threading.Barrier(len(clients)), [None] * len(clients)

    def send(n):
        try:
            start.wait()
            answers[n] = upload(clients[n], data, release_format)
        finally:
            connection.close()  # this thread's own database connection

    threads = [threading.Thread(target=send, args=(n,)) for n in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answer.status_code for answer in answers) == [202, 409], [a.content for a in answers]
    taken = next(answer for answer in answers if answer.status_code == 202).json()["id"]
    refused = next(answer for answer in answers if answer.status_code == 409).json()
    assert f"import {taken} (" in refused["detail"]
    job = poll_job(clients[0], f"/api/imports/{taken}/")[-1]
    assert job["status"] == "done", job
    assert job["report"]["demos"] == 4
    assert ImportJob.objects.filter(project=Project.objects.get(name="alpha")).count() == 1
    assert upload(clients[1], data, release_format).status_code == 409  # done, it still holds the file
    items = MIND2WEB_ITEMS if release_format == "mind2web" else WEBLINX_ITEMS
    assert sorted(Demonstration.objects.values_list("source_id", flat=True)) == items


def inserting_blocked() -> bool:
    """Another connection's INSERT of an import job waits on a lock (the constraint's index entry of an uncommitted
    row)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s",
            ['INSERT INTO "annotation_importjob"%'],
        )
        return cursor.fetchone()[0] > 0


@pytest.mark.django_db(transaction=True)
def test_an_upload_racing_one_not_yet_committed_waits_for_it_and_is_refused_by_the_constraint(
    people, tmp_path, media_storage
):
    data = release("weblinx", tmp_path)
    holding, let_go, taken = threading.Event(), threading.Event(), []
    answers = []

    def first():  # created, then held uncommitted: the second upload's check cannot see it
        try:
            with transaction.atomic():
                upload_file = SimpleUploadedFile("release.tar.gz", data)
                project = Project.objects.get(name="alpha")
                taken.append(do_create_import(people["researcher"], project, upload_file).pk)
                holding.set()
                let_go.wait(timeout=60)
        finally:
            connection.close()

    def second():
        try:
            answers.append(upload(token_client(people["admin"]), data, "weblinx"))
        finally:
            connection.close()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    assert holding.wait(timeout=60)
    threads[1].start()
    wait_until(inserting_blocked, timeout=60, interval=0.05, message="the second insert waiting on the first")
    let_go.set()
    for thread in threads:
        thread.join()
    assert answers[0].status_code == 409, answers[0].content
    assert f"import {taken[0]} (queued, 'release.tar.gz') took it" in answers[0].json()["detail"]
    assert list(ImportJob.objects.values_list("pk", flat=True)) == taken
    assert len(list((media_storage / "imports").iterdir())) == 1  # the refused upload's copy removed


def admin_deletes(staff, demos) -> None:
    """Staff delete demonstrations as the admin site does: the list's "Delete selected", confirmed."""
    body = {"action": "delete_selected", "_selected_action": [demo.pk for demo in demos], "post": "yes"}
    answer = signed_in(staff).post("/admin/annotation/demonstration/", body)
    assert answer.status_code == 302, answer.content[:2000]


@pytest.mark.django_db
@pytest.mark.parametrize("release_format", ["weblinx", "mind2web"])
def test_once_every_demo_of_the_file_is_deleted_it_imports_again(release_format, people, tmp_path, media_storage):
    data = release(release_format, tmp_path)
    staff = make_user("staff")
    staff.is_staff = staff.is_superuser = True
    staff.save()
    admin = token_client(people["admin"])
    first = upload(admin, data, release_format).json()["id"]
    as_queued(first)
    run_import(first)
    items = MIND2WEB_ITEMS if release_format == "mind2web" else WEBLINX_ITEMS
    demos = list(Demonstration.objects.filter(project__name="alpha").order_by("source_id"))
    assert [demo.source_id for demo in demos] == items

    admin_deletes(staff, demos[:1])  # one of the file's demos deleted: the rest still hold it
    again = upload(admin, data, release_format)
    assert again.status_code == 409, again.content
    assert f"Delete its 3 demonstrations to import it again (/api/imports/{first}/)" in again.json()["detail"]
    admin_deletes(staff, demos[1:])
    taken = upload(admin, data, release_format, name="renamed.tar.gz")
    assert taken.status_code == 202, taken.content
    assert admin.get(f"/api/imports/{first}/").json()["file_freed_at"] is not None
    as_queued(taken.json()["id"])
    run_import(taken.json()["id"])
    job = admin.get(f"/api/imports/{taken.json()['id']}/").json()
    assert (job["status"], job["report"]["demos"], job["file_freed_at"]) == ("done", 4, None)
    assert sorted(Demonstration.objects.values_list("source_id", flat=True)) == items
    refused = upload(token_client(people["researcher"]), data, release_format)
    assert refused.status_code == 409  # the new job holds the file now
    assert f"import {taken.json()['id']} (done, 'renamed.tar.gz') took it" in refused.json()["detail"]
