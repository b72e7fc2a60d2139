"""The quality pages as each role uses them: the batch's review page (filters, decisions on selected rows and by
filter, reopen, gold, settings, the CSV uploaded back), the worker's history with the reason, and the project's
qualifications page; refusals as the error pages (another project 404, a worker 403) or messages naming the field."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from annotation.actions import forms
from annotation.models import Assignment
from tests.support.forms_data import make_batch


@pytest.fixture
def worked(alpha, owner, teammate, instructor):
    batch = make_batch(alpha, assignments_per_task=3)
    for worker in (owner, teammate, instructor):
        for _ in range(3):
            assignment = forms.do_accept_next(worker, batch)
            forms.do_submit(assignment.pk, {"short": worker.username}, timezone.now())
    return batch


def ids_of(batch, username) -> list[str]:
    return [
        str(pk)
        for pk in Assignment.objects.filter(task__batch=batch, worker__username=username).values_list("pk", flat=True)
    ]


def text(response) -> str:
    return response.content.decode()


def test_the_review_page_decides_on_selected_rows_and_by_filter(client, worked, researcher, owner, teammate):
    batch = worked
    client.force_login(researcher)
    page = client.get(f"/work/batches/{batch.pk}/decisions/")
    assert page.status_code == 200
    assert text(page).count('class="row-select"') == 9
    decide = f"/work/batches/{batch.pk}/decisions/decide"
    rejected = client.post(
        decide,
        {"decision": "reject", "feedback": "Please write full sentences.", "assignment": ids_of(batch, "owner")[:2]},
    )
    assert rejected.status_code == 302
    no_reason = client.post(decide, {"decision": "reject", "assignment": ids_of(batch, "owner")[2:]}, follow=True)
    assert "feedback" in text(no_reason)
    assert "a rejection needs a reason" in text(no_reason)
    asked = client.post(decide, {"decision": "approve", "scope": "filter", "worker": "teammate"})
    assert 'data-count="3"' in text(asked)  # a confirmation counting the rows, nothing decided yet
    selection = asked.context["selection"]
    by_filter = client.post(
        decide, {"decision": "approve", "scope": "filter", "worker": "teammate", "selection": selection}, follow=True
    )
    assert "Approved 3 assignments" in text(by_filter)
    filtered = client.get(f"/work/batches/{batch.pk}/decisions/", {"review": "rejected"})
    assert text(filtered).count('class="row-select"') == 2
    bad = client.get(f"/work/batches/{batch.pk}/decisions/", {"gold_below": "2"})
    assert bad.status_code == 400
    client.force_login(owner)
    history = text(client.get("/work/"))
    assert history.count('data-review="rejected"') == 2
    assert "Please write full sentences." in history
    one = ids_of(batch, "owner")[0]
    assert "Please write full sentences." in text(client.get(f"/work/assignments/{one}/"))
    client.force_login(teammate)
    assert text(client.get("/work/")).count('data-review="approved"') == 3


def test_reopen_gold_settings_and_upload_on_the_page(client, worked, researcher, admin, alpha):
    batch = worked
    client.force_login(researcher)
    base = f"/work/batches/{batch.pk}/decisions"
    first = ids_of(batch, "instructor")[0]
    client.post(f"{base}/decide", {"decision": "reject", "feedback": "no", "assignment": [first]})
    assert 'data-count="1"' in text(client.post(f"{base}/{first}/reopen"))  # the confirmation
    assert client.post(f"{base}/{first}/reopen", {"confirm": "1"}).status_code == 302
    task = Assignment.objects.get(pk=first).task
    assert (task.taken, task.submitted, task.completed) == (2, 2, False)
    used = client.post(f"{base}/gold", {"assignment": ids_of(batch, "owner")[1]}, follow=True)
    assert "Changed 1 gold task" in text(used)
    assert "Gold: task 1." in text(used)  # the owner's second task: index 1, as every page numbers tasks
    no_gold = client.post(f"{base}/gold", {"tasks": "0"}, follow=True)
    assert "task 0 has no non-blank Answer.* value" in text(no_gold)
    out_of_range = client.post(f"{base}/settings", {"gold_rate": "1.5", "gold_threshold": ""}, follow=True)
    assert "gold_rate" in text(out_of_range)
    saved = client.post(
        f"{base}/settings", {"gold_rate": "0.2", "gold_threshold": "0.5", "gold_min_answers": "2"}, follow=True
    )
    assert "Quality settings saved." in text(saved)
    upload = SimpleUploadedFile("r.csv", f'"AssignmentId","Approve","Reject"\r\n"{first}","x",""\r\n'.encode())
    refused = client.post(f"{base}/upload", {"csv": upload}, follow=True)
    assert "csv row 1" in text(refused)
    assert "already rejected" in text(refused)


def test_who_may_open_the_quality_pages(client, worked, owner, reviewer, researcher, admin, outsider):
    batch = worked
    for user, status in ((owner, 403), (reviewer, 403), (researcher, 200), (admin, 200), (outsider, 404)):
        client.force_login(user)
        assert client.get(f"/work/batches/{batch.pk}/decisions/").status_code == status, user.username
        decide = client.post(
            f"/work/batches/{batch.pk}/decisions/decide", {"decision": "approve", "assignment": ids_of(batch, "owner")}
        )
        assert decide.status_code in (status, 302), user.username
    assert Assignment.objects.filter(review="approved").count() == 3  # owner's three, approved by the researcher
    for user, status in ((owner, 403), (researcher, 200), (admin, 200), (outsider, 404)):
        client.force_login(user)
        assert client.get("/projects/alpha/qualifications/").status_code == status, user.username


def test_admins_grant_and_revoke_on_the_qualifications_page(client, alpha, admin, researcher, owner):
    client.force_login(admin)
    client.post("/projects/alpha/qualifications/new", {"name": "english"})
    page = text(client.get("/projects/alpha/qualifications/"))
    assert 'data-qualification="english"' in page
    qid = alpha.qualifications.get().pk
    bad = client.post(f"/projects/alpha/qualifications/{qid}/grant", {"worker": "owner", "score": "7"}, follow=True)
    assert "score" in text(bad)
    client.post(f"/projects/alpha/qualifications/{qid}/grant", {"worker": "owner", "score": "0.9"})
    assert 'data-worker="owner"' in text(client.get("/projects/alpha/qualifications/"))
    client.force_login(researcher)
    assert client.post(f"/projects/alpha/qualifications/{qid}/revoke", {"worker": "owner"}).status_code == 403
    client.force_login(admin)
    client.post(f"/projects/alpha/qualifications/{qid}/revoke", {"worker": "owner"})
    assert 'data-worker="owner"' not in text(client.get("/projects/alpha/qualifications/"))
