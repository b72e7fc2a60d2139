"""Hostile re-imports after deletion (``free_emptied_job``, ``file_freed_at``): a done job whose report is malformed
or lists no demo is never freed and its 409 does not tell to delete 0 demos (it was a 500 on a report that is not
an object or whose ``imported`` is not a list); another project's upload neither frees nor names this project's
job; two uploads right after the last demo is deleted give one 202 and one 409."""

import hashlib
import re
import threading

import pytest
from django.db import connection

from annotation.models import Demonstration, ImportJob, Project, Role
from tests.support import weblinx_release
from tests.support.actors import make_user, token_client
from tests.support.release_upload import tar_gz, upload


@pytest.fixture
def release(tmp_path) -> bytes:
    return tar_gz(weblinx_release.write_release(tmp_path / "weblinx"), "weblinx")


def done_job(project, owner, data: bytes, report) -> ImportJob:
    """A done import job of ``data`` as the worker leaves one, its report as given."""
    sha256 = hashlib.sha256(data).hexdigest()
    return ImportJob.objects.create(
        project=project, owner=owner, status="done", archive_name="secret-name-a.tar.gz", sha256=sha256, report=report
    )


MALFORMED = [
    [],
    ["x"],
    "text",
    {"demos": 4},
    {"imported": None},
    {"imported": 4},
    {"imported": "abcd"},
    {"imported": {"demo": "gone"}},
    {"imported": [{"demo": ["gone"]}]},
    {"imported": [{"demo": {"a": 1}}, 7, None]},
    {"imported": []},
]


@pytest.mark.django_db
@pytest.mark.parametrize("report", MALFORMED, ids=range(len(MALFORMED)))
def test_a_done_job_with_a_malformed_report_keeps_its_file_and_says_so_without_a_500(
    report, alpha, release, media_storage
):
    admin = make_user("admin-a", alpha, Role.ADMIN)
    job = done_job(alpha, admin, release, report)
    answer = upload(token_client(admin), release)
    assert answer.status_code == 409, answer.content
    detail = answer.json()["detail"]
    assert f"import {job.pk} (done, " in detail
    assert "Delete its 0 demonstrations" not in detail  # deleting nothing would not free it
    job.refresh_from_db()
    assert job.file_freed_at is None
    assert ImportJob.objects.count() == 1


@pytest.mark.django_db
def test_another_projects_upload_neither_frees_nor_names_this_projects_emptied_job(alpha, beta, release, media_storage):
    owner = make_user("admin-a", alpha, Role.ADMIN)
    emptied = done_job(alpha, owner, release, {"imported": [{"demo": "deleted1", "item": "alpha"}]})
    outsider = make_user("admin-b", beta, Role.ADMIN)
    beta_client = token_client(outsider)
    assert upload(beta_client, release, project="alpha").status_code == 404
    taken = upload(beta_client, release, project="beta")
    assert taken.status_code == 202, taken.content
    emptied.refresh_from_db()
    assert emptied.file_freed_at is None  # only an upload to its own project lets it go
    again = upload(beta_client, release, project="beta")
    assert again.status_code == 409
    detail = again.json()["detail"]
    assert set(re.findall(r"imports?/?\s?(\d+)", detail)) == {str(taken.json()["id"])}
    assert "secret-name-a" not in detail
    assert "alpha" not in detail
    assert beta_client.get(f"/api/imports/{emptied.pk}/").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_two_uploads_right_after_the_last_demo_is_deleted_one_is_taken_the_other_409(release, media_storage):
    alpha = Project.objects.create(name="alpha", title="Alpha")
    people = [make_user(f"admin-{n}", alpha, Role.ADMIN) for n in range(3)]
    emptied = done_job(alpha, people[0], release, {"imported": [{"demo": "gone1"}, {"demo": "gone2"}]})
    clients = [token_client(person) for person in people]
    start, answers = threading.Barrier(len(clients)), [None] * len(clients)

    def send(n):
        try:
            start.wait()
            answers[n] = upload(clients[n], release)
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(n,)) for n in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    codes = sorted(answer.status_code for answer in answers)
    assert codes == [202, 409, 409], [answer.content for answer in answers]
    taken = next(answer for answer in answers if answer.status_code == 202).json()["id"]
    for refused in (answer for answer in answers if answer.status_code == 409):
        assert f"import {taken} (queued, 'release.tar.gz') took it" in refused.json()["detail"]
    emptied.refresh_from_db()
    assert emptied.file_freed_at is not None
    holding = ImportJob.objects.filter(project=alpha, file_freed_at=None, status__in=["queued", "done"])
    assert list(holding.values_list("pk", flat=True)) == [taken]
    assert not Demonstration.objects.exists()
