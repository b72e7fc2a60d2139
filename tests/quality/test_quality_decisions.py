"""Decisions on form work as a team takes them and takes them back: two researchers and an admin review the work of
three workers; every decision (one by one, in bulk, by the results CSV, automatic, reopen, undo) lands in the
assignment's trail, read through the API and the assignment's page; an undo within FORM_DECISION_UNDO_MINUTES puts
the work back to pending (the worker and the figures see it), after the window or of a superseded decision it is a
409; a decision by filter and a reopen are confirmed with their counts, and a selection that changed in between is
asked again; the auto-approval delay is given in minutes; who may undo."""

import datetime as dt

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from annotation.actions import forms, quality
from annotation.models import Assignment, Role, Task
from tests.support.actors import make_user, token_client
from tests.support.forms_data import make_batch


@pytest.fixture
def rhea(alpha):
    return make_user("rhea", alpha, Role.RESEARCHER)


@pytest.fixture
def worked(alpha, owner, teammate, instructor):
    """Three tasks, two assignments each: owner and teammate do all three; instructor does none yet."""
    batch = make_batch(alpha, assignments_per_task=2)
    for worker in (owner, teammate):
        for _ in range(3):
            assignment = forms.do_accept_next(worker, batch)
            forms.do_submit(assignment.pk, {"polarity": "pos", "short": worker.username}, timezone.now())
    return batch


def work_of(batch, username) -> list[int]:
    rows = Assignment.objects.filter(task__batch=batch, worker__username=username).order_by("task__index")
    return list(rows.values_list("pk", flat=True))


def trail(api, pk) -> list[dict]:
    response = api.get(f"/api/decisions/{pk}/")
    assert response.status_code == 200, response.content
    return response.json()["trail"]


def kinds(api, pk) -> list[tuple]:
    return [(d["kind"], d["from_state"], d["to_state"], d["by"], d["undone"]) for d in trail(api, pk)]


def history(worker) -> dict:
    rows = token_client(worker).get("/api/assignments/", {"status": "submitted"}).json()["results"]
    return {row["id"]: (row["review"], row["feedback"]) for row in rows}


def text(response) -> str:
    return response.content.decode()


def test_every_kind_of_decision_lands_in_the_trail_read_through_the_api_and_the_page(
    client, worked, researcher, rhea, boss, owner, teammate
):
    batch = worked
    mine, theirs = work_of(batch, "owner"), work_of(batch, "teammate")
    api, api2 = token_client(researcher), token_client(rhea)
    assert api.post(f"/api/decisions/{mine[0]}/approve/", {}, format="json").status_code == 200
    rejected = api2.post(f"/api/decisions/{mine[1]}/reject/", {"feedback": "Copied <b>input</b>."}, format="json")
    assert rejected.json()["trail"][-1]["feedback"] == "Copied <b>input</b>."
    bulk = api.post("/api/decisions/decide/", {"decision": "approve", "assignments": theirs[:2]}, format="json")
    assert bulk.json() == {"changed": 2}
    csv = f'"AssignmentId","Approve","Reject"\r\n"{mine[2]}","","Too short"\r\n'.encode()
    uploaded = api2.post("/api/decisions/upload/", {"batch": batch.pk, "csv": SimpleUploadedFile("r.csv", csv)})
    assert uploaded.json() == {"approved": 0, "rejected": 1, "unchanged": 0}
    quality.do_update_quality_settings(batch, {"auto_approve_seconds": 60})
    assert quality.do_auto_approve_due(now=timezone.now() + dt.timedelta(minutes=5)) == 1  # theirs[2]
    assert api.post(f"/api/decisions/{mine[1]}/reopen/", {}, format="json").status_code == 200
    assert kinds(api, mine[0]) == [("manual", "pending", "approved", "researcher", False)]
    assert kinds(api, mine[1]) == [
        ("manual", "pending", "rejected", "rhea", False),
        ("reopen", "rejected", "rejected", "researcher", False),
    ]
    assert kinds(api, mine[2]) == [("csv", "pending", "rejected", "rhea", False)]
    assert [d[0] for d in kinds(api, theirs[0])] == ["bulk"]
    assert kinds(api2, theirs[2]) == [("auto", "pending", "approved", None, False)]
    # the page: each review row links to the assignment, whose page shows its answers and trail (escaped)
    client.force_login(boss)
    page = text(client.get(f"/work/batches/{batch.pk}/decisions/"))
    for pk in mine + theirs:
        assert f'href="/work/batches/{batch.pk}/decisions/{pk}/"' in page
    detail = client.get(f"/work/batches/{batch.pk}/decisions/{mine[1]}/")
    assert detail.status_code == 200
    body = text(detail)
    assert body.count('data-kind="manual"') == 1
    assert body.count('data-kind="reopen"') == 1
    assert "Copied &lt;b&gt;input&lt;/b&gt;." in body
    assert "<b>input</b>" not in body
    assert "polarity" in body
    assert "pos" in body
    auto = text(client.get(f"/work/batches/{batch.pk}/decisions/{theirs[2]}/"))
    assert "Approved automatically" in auto
    assert "automatic" in auto


def test_undo_puts_the_work_back_to_pending_for_the_worker_and_the_figures(
    worked, researcher, rhea, owner, teammate, api_for
):
    batch = worked
    mine, theirs = work_of(batch, "owner"), work_of(batch, "teammate")
    api, api2 = api_for(researcher), api_for(rhea)
    totals = lambda: api.get(f"/api/agreement/{batch.pk}/").json()["totals"]["assignments"]  # noqa: E731
    assert totals() == 6
    api.post(f"/api/decisions/{mine[0]}/reject/", {"feedback": "Wrong polarity."}, format="json")
    assert totals() == 5  # rejected work leaves the figures
    assert history(owner)[mine[0]] == ("rejected", "Wrong polarity.")
    # another researcher undoes it, with a reason kept in the trail
    undone = api2.post(f"/api/decisions/{mine[0]}/undo/", {"reason": "It was right."}, format="json")
    assert undone.status_code == 200, undone.content
    assert undone.json()["review"] == "pending"
    assert undone.json()["feedback"] == ""
    assert totals() == 6  # back in the figures after the undo
    assert history(owner)[mine[0]] == ("pending", "")
    steps = undone.json()["trail"]
    assert [(d["kind"], d["to_state"], d["by"], d["undone"]) for d in steps] == [
        ("manual", "rejected", "researcher", True),
        ("undo", "pending", "rhea", False),
    ]
    assert steps[1]["undoes"] == steps[0]["id"]
    assert steps[1]["feedback"] == "It was right."
    # the same decision again: already undone; an undo cannot be undone; nothing left to undo
    again = api.post(f"/api/decisions/{mine[0]}/undo/", {"decision": steps[0]["id"]}, format="json")
    assert again.status_code == 409
    assert "already undone" in again.json()["detail"]
    assert api.post(f"/api/decisions/{mine[0]}/undo/", {"decision": steps[1]["id"]}, format="json").status_code == 409
    assert api.post(f"/api/decisions/{mine[0]}/undo/", {}, format="json").status_code == 409
    # the second and third decisions on the same work: approve, undo, approve again
    api.post(f"/api/decisions/{mine[0]}/approve/", {}, format="json")
    assert api2.post(f"/api/decisions/{mine[0]}/undo/", {}, format="json").json()["review"] == "pending"
    assert api.post(f"/api/decisions/{mine[0]}/approve/", {}, format="json").json()["review"] == "approved"
    assert [d["kind"] for d in trail(api, mine[0])] == ["manual", "undo", "manual", "undo", "manual"]
    assert history(owner)[mine[0]] == ("approved", "")
    # work whose decision was undone waits for a person: the automatic approval leaves it pending
    api.post(f"/api/decisions/{theirs[0]}/approve/", {}, format="json")
    api.post(f"/api/decisions/{theirs[0]}/undo/", {}, format="json")
    quality.do_update_quality_settings(batch, {"auto_approve_seconds": 60})
    assert quality.do_auto_approve_due(now=timezone.now() + dt.timedelta(minutes=5)) == 4
    assert history(teammate)[theirs[0]] == ("pending", "")
    # a decision id of another assignment's trail is a 404, a malformed one a 400 naming it
    other = trail(api, mine[0])[0]["id"]
    assert api.post(f"/api/decisions/{theirs[0]}/undo/", {"decision": other}, format="json").status_code == 404
    bad = api.post(f"/api/decisions/{theirs[0]}/undo/", {"decision": "x"}, format="json")
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["field"] == "decision"


def test_undo_after_the_window_or_of_a_superseded_decision_is_a_409(worked, researcher, instructor, settings, api_for):
    settings.FORM_DECISION_UNDO_MINUTES = 5
    batch = worked
    mine, theirs = work_of(batch, "owner"), work_of(batch, "teammate")
    api = api_for(researcher)
    old = timezone.now() - dt.timedelta(minutes=6)
    quality.do_decide(researcher, quality.check_reviewable(researcher, [mine[0]]), "approve", now=old)
    late = api.post(f"/api/decisions/{mine[0]}/undo/", {}, format="json")
    assert late.status_code == 409
    assert "older than 5 minutes" in late.json()["detail"]
    assert trail(api, mine[0])[0]["undoable"] is False
    assert api.get(f"/api/decisions/{mine[0]}/").json()["review"] == "approved"  # it stands
    # reject then reopen: the rejection is superseded until the reopen is undone
    api.post(f"/api/decisions/{mine[1]}/reject/", {"feedback": "No."}, format="json")
    api.post(f"/api/decisions/{mine[1]}/reopen/", {}, format="json")
    reject_id, reopen_id = (d["id"] for d in trail(api, mine[1]))
    superseded = api.post(f"/api/decisions/{mine[1]}/undo/", {"decision": reject_id}, format="json")
    assert superseded.status_code == 409
    assert "superseded" in superseded.json()["detail"]
    task = Task.objects.get(assignments=mine[1])
    assert (task.taken, task.submitted, task.completed) == (1, 1, False)
    back = api.post(f"/api/decisions/{mine[1]}/undo/", {"decision": reopen_id}, format="json")
    assert back.status_code == 200
    assert back.json()["reopened_at"] is None
    task.refresh_from_db()
    assert (task.taken, task.submitted, task.completed) == (2, 2, True)
    assert api.post(f"/api/decisions/{mine[1]}/undo/", {"decision": reject_id}, format="json").json()["review"] == (
        "pending"
    )
    # a reopened slot another worker took: the reopen stands
    api.post(f"/api/decisions/{mine[2]}/reject/", {"feedback": "No."}, format="json")
    api.post(f"/api/decisions/{mine[2]}/reopen/", {}, format="json")
    taken = forms.do_accept_next(instructor, batch)
    assert taken.task_id == Task.objects.get(assignments=mine[2]).pk
    refused = api.post(f"/api/decisions/{mine[2]}/undo/", {}, format="json")
    assert refused.status_code == 409
    assert "taken by another worker" in refused.json()["detail"]
    assert api.get(f"/api/decisions/{mine[2]}/").json()["reopened_at"] is not None
    assert api.post(f"/api/decisions/{theirs[0]}/undo/", {}, format="json").status_code == 409  # nothing decided


def test_undo_on_the_page(client, worked, researcher, rhea, owner):
    batch = worked
    mine = work_of(batch, "owner")
    client.force_login(researcher)
    client.post(
        f"/work/batches/{batch.pk}/decisions/decide",
        {"decision": "reject", "feedback": "Not a sentence.", "assignment": [mine[0]]},
    )
    client.force_login(rhea)
    url = f"/work/batches/{batch.pk}/decisions/{mine[0]}/"
    page = text(client.get(url))
    assert page.count('class="undo"') == 1
    done = client.post(f"{url}undo", {"reason": "Second look: fine."}, follow=True)
    assert "Undone: assignment" in text(done)
    assert "is submitted again" in text(done)
    assert 'data-review="pending"' in text(done)
    assert "Second look: fine." in text(done)
    assert 'data-undone="true"' in text(done)
    again = client.post(f"{url}undo", {}, follow=True)
    assert "has no decision to undo" in text(again)
    client.force_login(owner)
    assert "Not reviewed yet." in text(client.get(f"/work/assignments/{mine[0]}/"))


def test_a_decision_by_filter_is_confirmed_with_its_count_and_asked_again_when_the_rows_changed(
    client, worked, researcher, rhea
):
    batch = worked
    theirs = work_of(batch, "teammate")
    decide = f"/work/batches/{batch.pk}/decisions/decide"
    client.force_login(researcher)
    form = {"decision": "reject", "feedback": "Too fast.", "scope": "filter", "worker": "teammate"}
    asked = client.post(decide, form)
    assert asked.status_code == 200
    assert 'data-count="3"' in text(asked)
    assert "questions" in text(asked)
    assert "Too fast." in text(asked)
    assert quality.review_counts(batch)["rejected"] == 0  # nothing decided before the confirmation
    # meanwhile a colleague approves one of those rows
    token_client(rhea).post(f"/api/decisions/{theirs[1]}/approve/", {}, format="json")
    stale = client.post(decide, {**form, "selection": asked.context["selection"]})
    assert stale.status_code == 409
    assert "The selection changed" in text(stale)
    assert 'data-count="2"' in text(stale)
    assert quality.review_counts(batch)["rejected"] == 0
    done = client.post(decide, {**form, "selection": stale.context["selection"]}, follow=True)
    assert "Rejected 2 assignments." in text(done)
    assert [Assignment.objects.get(pk=pk).review for pk in theirs] == ["rejected", "approved", "rejected"]
    # a third time: no pending row left, the confirmation says so and offers nothing to confirm
    empty = client.post(decide, form)
    assert 'data-count="0"' in text(empty)
    assert 'id="confirm"' not in text(empty)
    # a rejection without a reason is refused before any confirmation
    refused = client.post(decide, {**form, "feedback": ""}, follow=True)
    assert "a rejection needs a reason" in text(refused)


def test_the_api_confirms_a_decision_by_filter_with_a_dry_run(worked, researcher, rhea, api_for):
    batch = worked
    mine = work_of(batch, "owner")
    api = api_for(researcher)
    body = {"decision": "approve", "filter": {"batch": batch.pk, "worker": "owner"}}
    dry = api.post("/api/decisions/decide/", {**body, "dry_run": True}, format="json").json()
    assert dry["changed"] == 0
    assert dry["selected"] == 3
    api_for(rhea).post(f"/api/decisions/{mine[0]}/reject/", {"feedback": "No."}, format="json")
    stale = api.post("/api/decisions/decide/", {**body, "selection": dry["selection"]}, format="json")
    assert stale.status_code == 409
    assert "now selects 2 pending rows" in stale.json()["detail"]
    assert stale.json()["errors"][0]["field"] == "selection"
    assert [Assignment.objects.get(pk=pk).review for pk in mine] == ["rejected", "pending", "pending"]
    again = api.post("/api/decisions/decide/", {**body, "dry_run": True}, format="json").json()
    assert again["selected"] == 2
    done = api.post("/api/decisions/decide/", {**body, "selection": again["selection"]}, format="json")
    assert done.json() == {"changed": 2}
    assert [d["kind"] for d in trail(api, mine[1])] == ["bulk"]
    bad = api.post("/api/decisions/decide/", {**body, "selection": "nope"}, format="json")
    assert bad.status_code == 400
    assert bad.json()["errors"][0]["field"] == "selection"


def test_reopen_is_confirmed_with_what_changes(client, worked, researcher):
    batch = worked
    mine = work_of(batch, "owner")
    client.force_login(researcher)
    base = f"/work/batches/{batch.pk}/decisions"
    client.post(f"{base}/decide", {"decision": "reject", "feedback": "No.", "assignment": mine[:2]})
    asked = client.post(f"{base}/{mine[0]}/reopen")
    assert asked.status_code == 200
    assert 'data-count="1"' in text(asked)
    assert "questions" in text(asked)
    assert "owner" in text(asked)
    assert Assignment.objects.get(pk=mine[0]).reopened_at is None
    done = client.post(f"{base}/{mine[0]}/reopen", {"confirm": "1"}, follow=True)
    assert "Reopened assignment" in text(done)
    assert Assignment.objects.get(pk=mine[0]).reopened_at is not None
    # from the assignment's page, back to it
    back = client.post(f"{base}/{mine[1]}/reopen", {"confirm": "1", "back": "assignment"}, follow=True)
    assert back.request["PATH_INFO"] == f"{base}/{mine[1]}/"
    assert text(back).count('data-kind="reopen"') == 1


def test_who_may_read_the_trail_and_undo(client, worked, researcher, owner, reviewer, alpha, beta, api_for):
    batch = worked
    mine = work_of(batch, "owner")
    api_for(researcher).post(f"/api/decisions/{mine[0]}/reject/", {"feedback": "No."}, format="json")
    elsewhere = make_user("elsewhere", beta, Role.RESEARCHER)
    for user, status in ((owner, 403), (reviewer, 403), (elsewhere, 404)):
        assert api_for(user).post(f"/api/decisions/{mine[0]}/undo/", {}, format="json").status_code == status
        assert api_for(user).get(f"/api/decisions/{mine[0]}/").status_code == status
        client.force_login(user)
        assert client.post(f"/work/batches/{batch.pk}/decisions/{mine[0]}/undo").status_code == status
        assert client.get(f"/work/batches/{batch.pk}/decisions/{mine[0]}/").status_code == status
        assert client.post(f"/work/batches/{batch.pk}/decisions/{mine[0]}/reopen").status_code == status
    assert Assignment.objects.get(pk=mine[0]).review == "rejected"
    # an assignment of another batch under this batch's address is not found
    other = make_batch(alpha, name="other")
    client.force_login(researcher)
    assert client.get(f"/work/batches/{other.pk}/decisions/{mine[0]}/").status_code == 404


def test_the_auto_approval_delay_is_given_in_minutes_on_the_page(client, worked, researcher, api_for):
    batch = worked
    client.force_login(researcher)
    page = text(client.get(f"/work/batches/{batch.pk}/decisions/"))
    assert "after minutes" in page
    assert 'name="auto_approve_minutes"' in page
    assert "seconds" not in page
    saved = client.post(f"/work/batches/{batch.pk}/decisions/settings", {"auto_approve_minutes": "90"}, follow=True)
    assert "Quality settings saved." in text(saved)
    assert 'value="90"' in text(saved)
    shown = api_for(researcher).get(f"/api/batch-quality/{batch.pk}/").json()
    assert (shown["auto_approve_seconds"], shown["auto_approve_minutes"]) == (5400, 90)
    bad = client.post(f"/work/batches/{batch.pk}/decisions/settings", {"auto_approve_minutes": "1.5"}, follow=True)
    assert "auto_approve_minutes" in text(bad)
    off = client.post(f"/work/batches/{batch.pk}/decisions/settings", {"auto_approve_minutes": ""}, follow=True)
    assert "Quality settings saved." in text(off)
    assert api_for(researcher).get(f"/api/batch-quality/{batch.pk}/").json()["auto_approve_minutes"] is None
    both = api_for(researcher).patch(
        f"/api/batch-quality/{batch.pk}/", {"auto_approve_minutes": 5, "auto_approve_seconds": 300}, format="json"
    )
    assert both.status_code == 400
    assert both.json()["errors"][0]["field"] == "auto_approve_minutes"


def test_nobody_decides_on_their_own_work_on_any_path(client, alpha, boss, rhea, teammate):
    """An admin and a researcher who also work on a batch: each one's work is decided by the other, never by
    themselves (one by one, in bulk, by filter, by CSV, reopen, undo); a filter leaves their own rows out."""
    batch = make_batch(alpha, assignments_per_task=3, workers=(boss, rhea, teammate))
    for worker in (boss, rhea, teammate):
        assignment = forms.do_accept_next(worker, batch)
        forms.do_submit(assignment.pk, {"polarity": "pos", "short": worker.username}, timezone.now())
    (own,), (other,) = work_of(batch, "boss"), work_of(batch, "rhea")
    api = token_client(boss)
    for path, body in (
        (f"/api/decisions/{own}/approve/", {}),
        ("/api/decisions/decide/", {"decision": "approve", "assignments": [own, other]}),
    ):
        refused = api.post(path, body, format="json")
        assert refused.status_code == 403
        assert "your own work" in refused.json()["detail"]
    dry = api.post(
        "/api/decisions/decide/", {"decision": "approve", "filter": {"batch": batch.pk}, "dry_run": True}, format="json"
    )
    assert dry.json()["selected"] == 2  # rhea's and teammate's, not boss's own
    csv = f'"AssignmentId","Approve","Reject"\r\n"{own}","x",""\r\n'.encode()
    uploaded = api.post("/api/decisions/upload/", {"batch": batch.pk, "csv": SimpleUploadedFile("r.csv", csv)})
    assert uploaded.status_code == 400
    assert "your own work" in uploaded.content.decode()
    decided = api.post("/api/decisions/decide/", {"decision": "approve", "filter": {"batch": batch.pk}}, format="json")
    assert decided.json() == {"changed": 2}
    assert history(boss)[own] == ("pending", "")
    rejected = token_client(rhea).post(f"/api/decisions/{own}/reject/", {"feedback": "Too short"}, format="json")
    assert rejected.status_code == 200
    assert api.post(f"/api/decisions/{own}/reopen/").status_code == 403
    assert api.post(f"/api/decisions/{own}/undo/", {}, format="json").status_code == 403
    client.force_login(boss)
    page = client.post(f"/work/batches/{batch.pk}/decisions/{own}/undo", {}, follow=True)
    assert "your own work" in text(page)
    assert history(boss)[own] == ("rejected", "Too short")
