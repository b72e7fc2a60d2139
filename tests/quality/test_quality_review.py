"""Requester review of form work through the API and the actions, with three workers on a batch of three tasks
done by two workers each: approve, reject with a reason the worker reads back, bulk and by filter, reopen (the slot
goes to another worker, the counters stay right), automatic approval, the results CSV uploaded back (all or
nothing), and the refusals (another project 404, a worker 403, work not submitted 409)."""

import csv
import datetime as dt
import io
import tarfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from annotation.actions import forms, quality
from annotation.models import Assignment, ReviewState, Role, Task
from tests.support.actors import make_user, token_client
from tests.support.forms_data import make_batch
from workers.exports.jobs import run_export
from workers.tasks import auto_approve_assignments


def submit(assignment, answers=None, at=None):
    return forms.do_submit(assignment.pk, answers or {"short": "x"}, at or timezone.now())


@pytest.fixture
def workers(alpha, owner, teammate, instructor):
    return [owner, teammate, instructor]


@pytest.fixture
def worked(alpha, workers):
    """Three tasks × two workers: owner and teammate do all three, instructor none yet."""
    batch = make_batch(alpha, assignments_per_task=2)
    done = {}
    for worker in workers[:2]:
        for _ in range(3):
            assignment = forms.do_accept_next(worker, batch)
            done[(worker.username, assignment.task.index)] = submit(assignment, {"short": f"{worker.username}"})
    return batch, done


def reviews(client, **params) -> list[dict]:
    response = client.get("/api/decisions/", params)
    assert response.status_code == 200, response.content
    return response.json()["results"]


def my_history(worker) -> dict:
    rows = token_client(worker).get("/api/assignments/", {"status": "submitted"}).json()["results"]
    return {row["id"]: row for row in rows}


def test_approve_and_reject_one_by_one_the_worker_reads_the_reason(worked, researcher, owner, teammate):
    batch, done = worked
    api = token_client(researcher)
    listed = reviews(api, batch=batch.pk)
    assert len(listed) == 6
    assert {row["review"] for row in listed} == {"pending"}
    first, second = done[("owner", 0)], done[("teammate", 0)]
    approved = api.post(f"/api/decisions/{first.pk}/approve/", {}, format="json")
    assert approved.status_code == 200
    assert approved.json()["review"] == "approved"
    assert approved.json()["reviewed_by"] == "researcher"
    no_reason = api.post(f"/api/decisions/{second.pk}/reject/", {}, format="json")
    assert no_reason.status_code == 400
    assert no_reason.json()["errors"][0]["field"] == "feedback"
    rejected = api.post(f"/api/decisions/{second.pk}/reject/", {"feedback": "You copied the input."}, format="json")
    assert rejected.status_code == 200
    assert rejected.json()["review"] == "rejected"
    history = my_history(teammate)
    assert history[second.pk]["review"] == "rejected"
    assert history[second.pk]["feedback"] == "You copied the input."
    assert my_history(owner)[first.pk]["review"] == "approved"
    # decided otherwise: 409, and the decision stands
    again = api.post(f"/api/decisions/{second.pk}/approve/", {}, format="json")
    assert again.status_code == 409
    assert reviews(api, batch=batch.pk, review="rejected")[0]["id"] == second.pk
    # the same decision twice changes nothing
    assert api.post(f"/api/decisions/{first.pk}/approve/", {}, format="json").status_code == 200


def test_bulk_and_filter_decisions(worked, researcher, owner):
    batch, done = worked
    api = token_client(researcher)
    ids = [done[("teammate", i)].pk for i in range(3)]
    bulk = api.post("/api/decisions/decide/", {"decision": "approve", "assignments": ids}, format="json")
    assert bulk.status_code == 200
    assert bulk.json() == {"changed": 3}
    by_filter = api.post(
        "/api/decisions/decide/",
        {"decision": "reject", "feedback": "Too short.", "filter": {"batch": batch.pk, "worker": "owner"}},
        format="json",
    )
    assert by_filter.json() == {"changed": 3}
    assert {r["review"] for r in reviews(api, batch=batch.pk, worker="owner")} == {"rejected"}
    assert {r["review"] for r in reviews(api, batch=batch.pk, worker="teammate")} == {"approved"}
    # a bulk list naming one decided otherwise refuses them all
    mixed = api.post(
        "/api/decisions/decide/", {"decision": "approve", "assignments": [ids[0], done[("owner", 0)].pk]}, format="json"
    )
    assert mixed.status_code == 409
    bad = api.get("/api/decisions/", {"batch": batch.pk, "gold_below": "1.5"})
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["field"] == "gold_below"


def test_refusals_other_project_404_worker_403_not_submitted_409(worked, researcher, owner, beta, alpha, workers):
    batch, done = worked
    some = done[("owner", 1)].pk
    boss = make_user("bea", beta, Role.ADMIN)
    assert token_client(boss).post(f"/api/decisions/{some}/approve/", {}, format="json").status_code == 404
    assert token_client(boss).get("/api/decisions/", {"batch": batch.pk}).status_code == 404
    for worker in workers:
        refused = token_client(worker).post(f"/api/decisions/{some}/approve/", {}, format="json")
        assert refused.status_code == 403, worker.username
    active = forms.do_accept_next(workers[2], make_batch(alpha, name="more"))
    not_yet = token_client(researcher).post(f"/api/decisions/{active.pk}/approve/", {}, format="json")
    assert not_yet.status_code == 409
    assert Assignment.objects.get(pk=some).review == ReviewState.PENDING


def test_a_rejected_assignment_reopened_goes_to_another_worker(worked, researcher, owner, teammate, instructor):
    batch, done = worked
    api = token_client(researcher)
    rejected = done[("owner", 2)]
    task = Task.objects.get(pk=rejected.task_id)
    assert (task.taken, task.submitted, task.completed) == (2, 2, True)
    assert forms.do_accept_next(instructor, batch) is None  # every slot is taken
    assert api.post(f"/api/decisions/{rejected.pk}/reopen/", {}, format="json").status_code == 409  # not rejected
    api.post(f"/api/decisions/{rejected.pk}/reject/", {"feedback": "Wrong."}, format="json")
    reopened = api.post(f"/api/decisions/{rejected.pk}/reopen/", {}, format="json")
    assert reopened.status_code == 200
    assert reopened.json()["reopened_at"]
    task.refresh_from_db()
    assert (task.taken, task.submitted, task.completed) == (1, 1, False)
    assert api.get(f"/api/batches/{batch.pk}/").json()["tasks_done"] == 2  # the batch's counter follows
    assert api.post(f"/api/decisions/{rejected.pk}/reopen/", {}, format="json").status_code == 409
    assert forms.do_accept_next(owner, batch) is None  # the rejected worker does not get it back
    assert forms.do_accept_next(teammate, batch) is None
    taken = forms.do_accept_next(instructor, batch)
    assert taken.task_id == task.pk
    submit(taken)
    task.refresh_from_db()
    assert (task.taken, task.submitted, task.completed) == (2, 2, True)
    assert token_client(researcher).get(f"/api/batches/{batch.pk}/").json()["completed"] is True
    assert api.get(f"/api/batches/{batch.pk}/").json()["tasks_done"] == 3


def test_automatic_approval_after_the_batch_delay(worked, researcher):
    batch, done = worked
    api = token_client(researcher)
    assert (
        api.patch(f"/api/batch-quality/{batch.pk}/", {"auto_approve_seconds": 3600}, format="json").status_code == 200
    )
    old = [done[("owner", i)] for i in range(3)]
    Assignment.objects.filter(pk__in=[a.pk for a in old]).update(submitted_at=timezone.now() - dt.timedelta(hours=2))
    api.post(f"/api/decisions/{old[0].pk}/reject/", {"feedback": "no"}, format="json")
    Assignment.objects.filter(pk=old[1].pk).update(flagged="worker blocked")
    assert auto_approve_assignments() == 1  # the beat task: only the unflagged pending one past the delay
    states = {row["id"]: row["review"] for row in reviews(api, batch=batch.pk)}
    assert states[old[0].pk] == "rejected"
    assert states[old[1].pk] == "pending"
    assert states[old[2].pk] == "approved"
    assert {states[done[("teammate", i)].pk] for i in range(3)} == {"pending"}
    off = api.patch(f"/api/batch-quality/{batch.pk}/", {"auto_approve_seconds": None}, format="json")
    assert off.status_code == 200
    assert off.json()["auto_approve_seconds"] is None
    Assignment.objects.filter(task__batch=batch).update(submitted_at=timezone.now() - dt.timedelta(days=30))
    assert quality.do_auto_approve_due() == 0


def results(api, batch) -> list[dict]:
    response = api.get(f"/api/batches/{batch.pk}/results/", HTTP_ACCEPT="text/csv")
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def as_csv(rows: list[dict]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def upload(api, batch, data: bytes):
    return api.post(
        "/api/decisions/upload/",
        {"batch": batch.pk, "csv": SimpleUploadedFile("results.csv", data, content_type="text/csv")},
        format="multipart",
    )


def test_the_results_csv_round_trip_is_all_or_nothing(worked, researcher):
    batch, done = worked
    api = token_client(researcher)
    rows = results(api, batch)
    assert len(rows) == 6
    assert {r["AssignmentStatus"] for r in rows} == {"Submitted"}
    assert {(r["Approve"], r["Reject"], r["ApprovalTime"], r["RejectionTime"]) for r in rows} == {("", "", "", "")}
    by_id = {int(r["AssignmentId"]): r for r in rows}
    by_id[done[("owner", 0)].pk]["Approve"] = "x"
    by_id[done[("owner", 1)].pk]["Reject"] = "Answer is empty."
    # bad rows: both columns, an unknown assignment; nothing is applied
    both = dict(by_id[done[("teammate", 0)].pk], Approve="x", Reject="no")
    unknown = dict(by_id[done[("teammate", 1)].pk], AssignmentId="999999", Approve="x")
    bad = upload(api, batch, as_csv([*by_id.values(), both, unknown]))
    assert bad.status_code == 400
    fields = {e["field"]: e["message"] for e in bad.json()["errors"]}
    assert fields.keys() == {"csv row 7", "csv row 8"}
    assert "both Approve and Reject" in fields["csv row 7"]
    assert "unknown assignment" in fields["csv row 8"]
    assert {r["review"] for r in reviews(api, batch=batch.pk)} == {"pending"}
    good = upload(api, batch, as_csv(list(by_id.values())))
    assert good.status_code == 200
    assert good.json() == {"approved": 1, "rejected": 1, "unchanged": 0}
    after = {int(r["AssignmentId"]): r for r in results(api, batch)}
    assert after[done[("owner", 0)].pk]["AssignmentStatus"] == "Approved"
    assert after[done[("owner", 0)].pk]["ApprovalTime"]
    assert after[done[("owner", 1)].pk]["AssignmentStatus"] == "Rejected"
    assert after[done[("owner", 1)].pk]["RequesterFeedback"] == "Answer is empty."
    assert after[done[("owner", 1)].pk]["RejectionTime"]
    # the same file again changes nothing; a decision against one taken is a 400 naming the row
    assert upload(api, batch, as_csv(list(by_id.values()))).json() == {"approved": 0, "rejected": 0, "unchanged": 2}
    flipped = dict(by_id[done[("owner", 1)].pk], Reject="", Approve="x")
    refused = upload(api, batch, as_csv([flipped]))
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["field"] == "csv row 1"
    assert "already rejected" in refused.json()["errors"][0]["message"]
    no_columns = upload(api, batch, b'"AssignmentId"\r\n"1"\r\n')
    assert no_columns.status_code == 400
    assert no_columns.json()["errors"][0]["field"] == "csv"
    assert upload(token_client(done[("owner", 0)].worker), batch, as_csv(rows)).status_code == 403


def test_pay_counts_approved_work_and_shows_pending_apart(worked, researcher, alpha, owner, teammate):
    from annotation.actions.stats import activity
    from annotation.models import PayRates

    batch, done = worked
    PayRates.objects.create(project=alpha, per_submitted_assignment="1.00")
    api = token_client(researcher)
    api.post(f"/api/decisions/{done[('owner', 0)].pk}/approve/", {}, format="json")
    api.post(f"/api/decisions/{done[('owner', 1)].pk}/reject/", {"feedback": "no"}, format="json")
    rates = PayRates.for_project(alpha)
    report = {row["person"]: row for row in activity.pay_report(activity.activity(alpha, None, rates), rates)}
    assert report["owner"]["approved_assignments"] == 1
    assert report["owner"]["pending_assignments"] == 1
    assert report["owner"]["pay"] == 1
    assert report["teammate"]["approved_assignments"] == 0
    assert report["teammate"]["pending_assignments"] == 3
    assert report["teammate"]["pay"] == 0


def test_rejected_work_leaves_the_results_export_and_agreement(worked, researcher):
    """Rejected answers stay in the results CSV (marked) but leave what a researcher publishes: the TurkingBench
    export's rows and the agreement figures, both read through the API as a user reads them."""
    batch, done = worked
    api = token_client(researcher)
    assert api.get(f"/api/agreement/{batch.pk}/").json()["totals"]["assignments"] == 6
    rejected = done[("teammate", 1)]
    assert (
        api.post(f"/api/decisions/{rejected.pk}/reject/", {"feedback": "Off topic."}, format="json").status_code == 200
    )
    assert api.get(f"/api/agreement/{batch.pk}/").json()["totals"]["assignments"] == 5
    statuses = {int(row["AssignmentId"]): row["AssignmentStatus"] for row in results(api, batch)}
    assert statuses[rejected.pk] == "Rejected"
    created = api.post("/api/exports/", {"project": batch.project.name, "format": "turkingbench"}, format="json")
    assert created.status_code == 202, created.content  # accepted: the worker runs it (here, in this process)
    run_export(created.json()["id"])
    data = b"".join(api.get(f"/api/exports/{created.json()['id']}/download/").streaming_content)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(f"/tasks/{batch.name}/batch.csv"))
        rows = list(csv.DictReader(io.StringIO(tar.extractfile(member).read().decode())))
    answered = [row for row in rows if row.get("Answer.short")]
    assert len(answered) == 5
    assert sorted(row["Answer.short"] for row in answered) == ["owner"] * 3 + ["teammate"] * 2


def test_a_task_marked_gold_counts_in_the_agreement_pages_gold_accuracy(worked, researcher):
    """One notion of gold: a task marked gold from an assignment's answers scores workers on the agreement page too."""
    batch, done = worked
    api = token_client(researcher)
    workers = {row["worker"]: row for row in api.get(f"/api/agreement/{batch.pk}/").json()["workers"]}
    assert workers["owner"]["gold_accuracy"] is None  # no gold yet
    marked = api.post(f"/api/batch-quality/{batch.pk}/gold/", {"assignment": done[("owner", 0)].pk}, format="json")
    assert marked.status_code == 200, marked.content
    workers = {row["worker"]: row for row in api.get(f"/api/agreement/{batch.pk}/").json()["workers"]}
    assert workers["owner"]["gold_accuracy"] == 1.0  # its own answers are the gold
    assert workers["teammate"]["gold_accuracy"] < 1.0  # "teammate" against the gold "owner"
