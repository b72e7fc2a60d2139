"""Batch management (MTurk's and Turkle's requester pages), through the API and the pages as each role: pause and
resume, extend the time, add assignments per task, edit the instructions; the batch page's task table and one
assignment's page. Every refusal: 403 for a role that may not, 404 for another project's batch, 409 for the
batch's state, 400 naming the field; a refused request changes nothing."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.actions import forms
from annotation.models import Assignment, AssignmentStatus, Batch, Role
from tests.support.actors import make_user, token_client
from tests.support.forms_data import make_batch


@pytest.fixture
def people(alpha, beta):
    """Three annotators, a reviewer, a researcher and an admin of alpha; beta's admin (the outsider here)."""
    return {
        "ann": make_user("ann", alpha, Role.ANNOTATOR),
        "abe": make_user("abe", alpha, Role.ANNOTATOR),
        "amy": make_user("amy", alpha, Role.ANNOTATOR),
        "vera": make_user("vera", alpha, Role.REVIEWER),
        "rex": make_user("rex", alpha, Role.RESEARCHER),
        "ada": make_user("ada", alpha, Role.ADMIN),
        "bea": make_user("bea", beta, Role.ADMIN),
    }


@pytest.fixture
def batch(alpha, people):
    return make_batch(alpha, people["rex"], assignments_per_task=2, allotted_seconds=600)


def page_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def snapshot(batch) -> tuple:
    batch.refresh_from_db()
    expiries = tuple(Assignment.objects.filter(task__batch=batch).order_by("pk").values_list("expires_at", flat=True))
    return (batch.active, batch.assignments_per_task, batch.allotted_seconds, batch.description, expiries)


def accept(user, batch):
    """Accept as the work page does: the batch as stored now."""
    return forms.do_accept_next(user, Batch.objects.get(pk=batch.pk))


def submit(assignment, answers=None):
    return forms.do_submit(assignment.pk, answers or {"short": "fine"})


# --- The API ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("manager", ["rex", "ada"])
def test_a_manager_pauses_and_resumes_through_the_api_and_a_paused_batch_hands_out_nothing(batch, people, manager):
    api = token_client(people[manager])
    held = accept(people["ann"], batch)
    response = api.post(f"/api/batches/{batch.pk}/pause/")
    assert response.status_code == 200, response.content
    assert response.json()["active"] is False
    # no new work for a second or third worker, by the queue and by the API's accept
    assert api.post(f"/api/batches/{batch.pk}/pause/").status_code == 409
    with pytest.raises(forms.queue.Conflict, match="paused"):
        accept(people["abe"], batch)
    # the assignment already out may still be submitted
    assert submit(held).status == AssignmentStatus.SUBMITTED
    response = api.post(f"/api/batches/{batch.pk}/resume/")
    assert response.status_code == 200
    assert response.json()["active"] is True
    assert api.post(f"/api/batches/{batch.pk}/resume/").json()["code"] == "conflict"
    assert accept(people["abe"], batch).task.index == 0  # second slot of task 1


def test_extend_gives_the_active_assignments_more_time_and_sets_the_time_per_assignment(batch, people):
    api = token_client(people["rex"])
    first, second = accept(people["ann"], batch), accept(people["abe"], batch)
    done = submit(accept(people["amy"], batch))
    before = {a.pk: a.expires_at for a in (first, second, done)}
    response = api.post(f"/api/batches/{batch.pk}/extend/", {"active_extra_seconds": 3600}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["extended_assignments"] == 2
    after = dict(Assignment.objects.filter(task__batch=batch).values_list("pk", "expires_at"))
    assert (after[first.pk] - before[first.pk]).total_seconds() == 3600
    assert (after[second.pk] - before[second.pk]).total_seconds() == 3600
    assert after[done.pk] == before[done.pk]  # a submitted assignment keeps its times
    response = api.post(f"/api/batches/{batch.pk}/extend/", {"allotted_seconds": 7200}, format="json")
    assert response.json()["allotted_seconds"] == 7200
    assert response.json()["extended_assignments"] == 0
    fourth = make_user("ava", batch.project, Role.ANNOTATOR)
    new = accept(fourth, batch)
    assert round((new.expires_at - new.accepted_at).total_seconds()) == 7200


def test_adding_assignments_reopens_completed_tasks_for_more_workers(batch, people):
    api = token_client(people["ada"])
    for name in ("ann", "abe"):
        for _ in range(3):
            submit(forms.do_accept_next(people[name], batch))
    batch.refresh_from_db()
    assert batch.completed
    with pytest.raises(forms.queue.Conflict, match="completed"):
        accept(people["amy"], batch)
    response = api.post(f"/api/batches/{batch.pk}/add-assignments/", {"count": 1}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["assignments_per_task"] == 3
    assert body["completed"] is False
    assert body["tasks_done"] == 0
    third = accept(people["amy"], batch)
    assert third.task.index == 0
    for _ in range(3):
        submit(third)
        third = accept(people["amy"], batch) if not Batch.objects.get(pk=batch.pk).completed else None
        if third is None:
            break
    batch.refresh_from_db()
    assert batch.completed
    assert list(batch.tasks.values_list("submitted", flat=True)) == [3, 3, 3]


def test_instructions_are_replaced_through_the_api(batch, people):
    api = token_client(people["rex"])
    response = api.post(f"/api/batches/{batch.pk}/instructions/", {"description": "  Read twice.  "}, format="json")
    assert response.status_code == 200
    assert response.json()["description"] == "Read twice."


ACTIONS = [
    ("pause", {}),
    ("resume", {}),
    ("extend", {"active_extra_seconds": 60}),
    ("add-assignments", {"count": 1}),
    ("instructions", {"description": "x"}),
]


@pytest.mark.parametrize(("path", "body"), ACTIONS)
@pytest.mark.parametrize("who", ["ann", "abe", "vera"])
def test_workers_and_reviewers_get_403_and_nothing_changes(batch, people, path, body, who):
    before = snapshot(batch)
    response = token_client(people[who]).post(f"/api/batches/{batch.pk}/{path}/", body, format="json")
    assert response.status_code == 403, response.content
    assert response.json()["code"] == "forbidden"
    assert snapshot(batch) == before


@pytest.mark.parametrize(("path", "body"), ACTIONS)
def test_another_projects_admin_gets_404_and_nothing_changes(batch, people, path, body):
    before = snapshot(batch)
    response = token_client(people["bea"]).post(f"/api/batches/{batch.pk}/{path}/", body, format="json")
    assert response.status_code == 404
    assert snapshot(batch) == before


BAD = [
    ("extend", {}, "allotted_seconds"),
    ("extend", {"allotted_seconds": 0}, "allotted_seconds"),
    ("extend", {"allotted_seconds": "soon"}, "allotted_seconds"),
    ("extend", {"active_extra_seconds": -5}, "active_extra_seconds"),
    ("extend", {"active_extra_seconds": 2**31}, "active_extra_seconds"),
    ("add-assignments", {}, "count"),
    ("add-assignments", {"count": 0}, "count"),
    ("add-assignments", {"count": 1001}, "count"),
    ("add-assignments", {"count": "many"}, "count"),
    ("instructions", {}, "description"),
    ("instructions", {"description": "x" * 100_001}, "description"),
    ("instructions", {"description": "a\x00b"}, "description"),
]


@pytest.mark.parametrize(("path", "body", "field"), BAD)
def test_bad_values_are_400_naming_the_field_and_nothing_changes(batch, people, path, body, field):
    accept(people["ann"], batch)
    before = snapshot(batch)
    response = token_client(people["rex"]).post(f"/api/batches/{batch.pk}/{path}/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in [error["field"] for error in response.json()["errors"]], response.json()
    assert snapshot(batch) == before


def test_a_body_that_is_not_an_object_is_400(batch, people):
    response = token_client(people["rex"]).post(f"/api/batches/{batch.pk}/extend/", [1], format="json")
    assert response.status_code == 400


def test_the_api_refuses_an_unknown_batch_with_404(people):
    assert token_client(people["rex"]).post("/api/batches/999999/pause/").status_code == 404


# --- The pages ----------------------------------------------------------------------------------------------


def test_the_batch_page_lists_every_task_with_its_assignments_for_a_manager(batch, people):
    a1, b1 = accept(people["ann"], batch), accept(people["abe"], batch)
    submit(a1, {"short": "sunny"})
    response = page_client(people["rex"]).get(f"/work/batches/{batch.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert f'data-assignment="{a1.pk}" data-worker="ann" data-status="submitted"' in html
    assert f'data-assignment="{b1.pk}" data-worker="abe" data-status="active"' in html
    assert html.count("no assignment yet") == 2  # tasks 2 and 3
    assert "10 min per assignment" in html
    assert "600 s" not in html
    # a reviewer sees the progress, neither the controls nor the answers
    html = page_client(people["vera"]).get(f"/work/batches/{batch.pk}/").content.decode()
    assert 'id="task-table"' not in html
    assert 'id="batch-pause"' not in html


def test_the_task_table_is_paginated_and_its_queries_do_not_grow_with_the_assignments(alpha, people):
    rows = "".join(f"t{i},sentence {i}\n" for i in range(120))
    big = make_batch(alpha, people["rex"], csv_text="topic,sentence\n" + rows, name="big", assignments_per_task=3)
    client = page_client(people["rex"])
    client.get(f"/work/batches/{big.pk}/")  # warm the session and caches

    def queries() -> int:
        with CaptureQueriesContext(connection) as context:
            assert client.get(f"/work/batches/{big.pk}/?page=2").status_code == 200
        return len(context)

    few = queries()
    for name in ("ann", "abe", "amy"):
        for _ in range(60):
            submit(forms.do_accept_next(people[name], big))
    html = client.get(f"/work/batches/{big.pk}/?page=2").content.decode()
    assert "tasks 50–99 of 120" in html
    assert html.count('data-worker="amy" data-status="submitted"') == 10  # tasks 50..59 on this page
    assert queries() == few
    last = client.get(f"/work/batches/{big.pk}/?page=3").content.decode()
    assert "tasks 100–119 of 120" in last
    assert last.count("no assignment yet") == 20
    assert 'data-task="119"' in last  # tasks are numbered from 0, as the CSVs and the API number them
    assert 'data-task="99"' not in last


@pytest.mark.parametrize("manager", ["rex", "ada"])
def test_a_manager_pauses_extends_adds_and_edits_on_the_batch_page(batch, people, manager):
    client = page_client(people[manager])
    held = accept(people["ann"], batch)
    response = client.post(f"/work/batches/{batch.pk}/pause", follow=True)
    assert "Paused" in response.content.decode()
    assert not Batch.objects.get(pk=batch.pk).active
    assert client.post(f"/work/batches/{batch.pk}/pause").status_code == 409  # the styled conflict page
    client.post(f"/work/batches/{batch.pk}/resume")
    assert Batch.objects.get(pk=batch.pk).active
    response = client.post(f"/work/batches/{batch.pk}/extend", {"allotted_minutes": "90", "active_extra_minutes": "5"})
    assert response.status_code == 302
    batch.refresh_from_db()
    assert batch.allotted_seconds == 5400
    assert (Assignment.objects.get(pk=held.pk).expires_at - held.expires_at).total_seconds() == 300
    client.post(f"/work/batches/{batch.pk}/add-assignments", {"count": "2"})
    client.post(f"/work/batches/{batch.pk}/instructions", {"description": "Be brief."})
    batch.refresh_from_db()
    assert (batch.assignments_per_task, batch.description) == (4, "Be brief.")
    assert "90 min per assignment" in client.get(f"/work/batches/{batch.pk}/").content.decode()


@pytest.mark.parametrize(
    ("path", "data", "field"),
    [
        ("extend", {"allotted_minutes": "soon", "active_extra_minutes": "7"}, "allotted_minutes"),
        ("extend", {"allotted_minutes": "", "active_extra_minutes": ""}, "allotted_minutes"),
        ("extend", {"active_extra_minutes": "0"}, "active_extra_minutes"),
        ("add-assignments", {"count": "-1"}, "count"),
        ("add-assignments", {"count": ""}, "count"),
    ],
)
def test_a_bad_value_on_the_page_is_400_naming_the_field_and_keeps_what_was_typed(batch, people, path, data, field):
    before = snapshot(batch)
    response = page_client(people["rex"]).post(f"/work/batches/{batch.pk}/{path}", data)
    assert response.status_code == 400
    html = response.content.decode()
    assert f'data-field="{field}"' in html
    for value in data.values():
        if value:
            assert f'value="{value}"' in html
    assert snapshot(batch) == before


@pytest.mark.parametrize("path", ["pause", "resume", "extend", "add-assignments", "instructions"])
def test_the_pages_refuse_workers_with_403_and_other_projects_with_404(batch, people, path):
    before = snapshot(batch)
    data = {"active_extra_minutes": "5", "count": "1", "description": "x"}
    for who in ("ann", "vera"):
        assert page_client(people[who]).post(f"/work/batches/{batch.pk}/{path}", data).status_code == 403
    assert page_client(people["bea"]).post(f"/work/batches/{batch.pk}/{path}", data).status_code == 404
    assert snapshot(batch) == before


def test_one_assignments_page_shows_inputs_answers_times_and_worker_to_managers_only(batch, people):
    assignment = submit(accept(people["abe"], batch), {"short": "rainy", "tags": ["a", "c"]})
    url = f"/work/batches/assignments/{assignment.pk}/"
    for manager in ("rex", "ada"):
        response = page_client(people[manager]).get(url)
        assert response.status_code == 200
        html = response.content.decode()
        assert '<td id="assignment-worker">abe</td>' in html
        assert "It rains." in html
        assert "rainy" in html
        assert 'data-field="tags"' in html
        assert "/forms/assignments/" in html  # the submitted work in its read-only frame
    for who in ("ann", "abe", "vera"):  # the worker reads their own work on their assignment page
        assert page_client(people[who]).get(url).status_code == 403
    assert page_client(people["bea"]).get(url).status_code == 404
    assert page_client(people["rex"]).get("/work/batches/assignments/999999/").status_code == 404


def test_an_active_assignments_page_says_it_has_no_answers_yet(batch, people):
    assignment = accept(people["ann"], batch)
    html = page_client(people["ada"]).get(f"/work/batches/assignments/{assignment.pk}/").content.decode()
    assert "No answers: the assignment is active." in html
    assert timezone.now() < assignment.expires_at


def test_work_page_offers_upload_before_any_batch_and_never_to_an_annotator(alpha, people):
    html = page_client(people["rex"]).get("/work/").content.decode()
    assert 'id="upload-batch"' in html
    assert 'id="managed-empty"' in html
    html = page_client(people["ann"]).get("/work/").content.decode()
    assert 'id="upload-batch"' not in html
    assert "/work/batches/new/" not in html
    response = page_client(people["ann"]).get("/work/batches/new/")
    assert response.status_code == 403
    assert "cannot upload a batch" in response.content.decode()


def test_a_failed_upload_keeps_what_was_typed_and_asks_for_the_files_again(alpha, people):
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = {
        "project": "alpha",
        "name": "my batch",
        "assignments_per_task": "3",
        "allotted_minutes": "45",
        "description": "Read the sentence.",
        "template": SimpleUploadedFile("t.html", b"<p>${nothing}</p>"),
        "csv": SimpleUploadedFile("c.csv", b"topic\n"),
    }
    response = page_client(people["rex"]).post("/work/batches/new/", data)
    assert response.status_code == 400
    html = response.content.decode()
    assert 'value="my batch"' in html
    assert 'value="3"' in html
    assert 'value="45"' in html
    assert "Read the sentence." in html
    assert 'value="alpha" selected' in html
    assert html.count("Choose the file again") == 2
    assert not Batch.objects.filter(name="my batch").exists()
