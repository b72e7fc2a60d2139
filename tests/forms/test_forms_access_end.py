"""Access ends when the grant ends: a worker removed from the project, moved to a role that does not work,
deactivated, whose required qualification was revoked, or who was blocked, holds tasks already open; every way of
writing through them (the task frame, the assignment page's Skip, the API's submit and skip) is refused, nothing is
stored, the reason is shown (in the frame, on the assignment page, in the API's JSON and its ``ended_reason``) and the
slot goes back to the queue for the next worker. And the submission that blocks a worker is stored and confirmed,
with the reason they can take no more tasks, instead of a bare 403."""

import html

import lxml.html
import pytest
from django.test import Client

from annotation.actions import forms, manage, quality
from annotation.actions.forms import gold
from annotation.models import Assignment, AssignmentStatus, Membership, Role, Task
from tests.support.actors import make_user, token_client
from tests.support.forms_data import make_batch

CSV = "topic,sentence\n" + "".join(f"t{i},s{i}\n" for i in range(6))


@pytest.fixture
def english(alpha, admin, owner, teammate):
    qualification = quality.do_create_qualification(alpha, "english")
    for worker in (owner, teammate):
        quality.do_grant(qualification, worker, 0.9, admin)
    return qualification


@pytest.fixture
def batch(alpha, english):
    batch = make_batch(alpha, csv_text=CSV, assignments_per_task=1)
    quality.do_update_quality_settings(batch, {"requirements": [(english, 0.8)]})
    return batch


def remove(owner, alpha, admin, english, batch):
    manage.do_remove_member(alpha, Membership.objects.get(project=alpha, user=owner).pk)
    return "you are not a member of project 'alpha'"


def demote(owner, alpha, admin, english, batch):
    membership = Membership.objects.get(project=alpha, user=owner)
    manage.do_change_role(alpha, membership.pk, Role.REVIEWER)
    return "your role in 'alpha' (reviewer) does not work on batches"


def deactivate(owner, alpha, admin, english, batch):
    site_admin = make_user("root")
    site_admin.is_superuser = True
    site_admin.save()
    manage.do_set_active(site_admin, owner.pk, False)
    return "your account is deactivated"


def revoke(owner, alpha, admin, english, batch):
    quality.do_revoke(english, owner)
    return "requires qualifications you do not hold: english ≥ 0.8"


def block(owner, alpha, admin, english, batch):
    batch.gold_threshold = 0.6
    gold.block(batch, owner, 0.25, 4)
    return "25%"  # the block's reason names the worker's gold accuracy


CHANGES = [remove, demote, deactivate, revoke, block]


def open_three(owner, batch) -> list[Assignment]:
    """Three tasks held at once (accepted from their previews), as a worker with three tabs open."""
    return [forms.do_accept_task(owner, task) for task in batch.tasks.order_by("index")[:3]]


def reason_in(text: str, reason: str) -> bool:
    return reason in html.unescape(text)


def assert_taken_back(assignment: Assignment, reason: str) -> None:
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.RETURNED
    assert assignment.answers == {}
    assert assignment.submitted_at is None
    assert reason in assignment.ended_reason
    assert Task.objects.get(pk=assignment.task_id).taken == 0  # the slot is back in the queue


@pytest.mark.parametrize("change", CHANGES, ids=lambda change: change.__name__)
def test_every_write_through_an_open_task_is_refused_once_the_grant_ends(
    change, alpha, admin, owner, teammate, english, batch
):
    frame_one, page_one, api_one = open_three(owner, batch)
    api = token_client(owner)  # made before the change: a deactivated account's token stops working
    client = Client()
    client.force_login(owner)
    reason = change(owner, alpha, admin, english, batch)
    owner.refresh_from_db()

    # The task frame (authorised by its URL, no session): the submission is refused, the page says why.
    response = Client().post(forms.work_url(frame_one), {"short": "mine"})
    assert response.status_code in (403, 409)  # a block has already taken the task back: 409 with its reason
    page = lxml.html.document_fromstring(response.content.decode())
    assert reason_in(page.get_element_by_id("submit-result").text_content(), reason)
    assert_taken_back(frame_one, reason)
    again = Client().get(forms.work_url(frame_one))
    assert again.status_code == 409
    assert reason_in(again.content.decode(), reason)

    # The assignment page: Skip is refused and the page says why (a deactivated account is signed out).
    skipped = client.post(f"/work/assignments/{page_one.pk}/skip")
    if change is deactivate:
        assert skipped.status_code == 302
        assert skipped["Location"].startswith("/accounts/login/")
        forms.do_end_without_access(Assignment.objects.select_related("worker", "task__batch").get(pk=page_one.pk))
    else:
        assert skipped.status_code == 302
        shown = client.get(skipped["Location"]).content.decode()
        assert reason_in(shown, reason)
        own_page = client.get(f"/work/assignments/{page_one.pk}/")
        ended = lxml.html.document_fromstring(own_page.content.decode()).get_element_by_id("ended-reason")
        assert reason_in(ended.text_content(), reason)
    assert_taken_back(page_one, reason)
    assert not Assignment.objects.filter(worker=owner, status=AssignmentStatus.ACTIVE).exclude(pk=api_one.pk).exists()

    # The API: a 403 in the API's error shape (a deactivated account's token is refused before anything).
    submitted = api.post(f"/api/assignments/{api_one.pk}/submit/", {"answers": {"short": "mine"}}, format="json")
    if change is deactivate:
        assert submitted.status_code == 401
        assert (
            forms.do_end_without_access(Assignment.objects.select_related("worker", "task__batch").get(pk=api_one.pk))
            == reason
        )
    elif change is block:
        assert submitted.status_code == 409
        assert reason_in(submitted.json()["detail"], reason)
    else:
        assert submitted.status_code == 403
        body = submitted.json()
        assert body["code"] == "access_ended"
        assert reason_in(body["detail"], reason)
        assert "Nothing was stored" in body["detail"]
        assert set(body) == {"detail", "code", "errors"}
        assert (
            api.get(f"/api/assignments/{api_one.pk}/").json()["ended_reason"]
            == Assignment.objects.get(pk=api_one.pk).ended_reason
        )
    assert_taken_back(api_one, reason)

    # The three slots went back to the queue: the next worker takes them, and nothing of the owner's was stored.
    freed = {a.task_id for a in (frame_one, page_one, api_one)}
    taken = set()
    while (assignment := forms.do_accept_next(teammate, batch)) is not None:
        taken.add(assignment.task_id)
        forms.do_submit(assignment.pk, {"short": "teammate"})
    assert freed <= taken
    download = token_client(admin).get(f"/api/batches/{batch.pk}/results/")
    results = b"".join(download.streaming_content).decode()
    assert "mine" not in results
    assert results.count("teammate") >= 6


def test_the_api_skip_is_refused_too_and_a_worker_who_keeps_the_grant_is_untouched(
    alpha, admin, owner, teammate, english, batch
):
    mine = forms.do_accept_next(owner, batch)
    theirs = forms.do_accept_next(teammate, batch)
    quality.do_revoke(english, owner)
    refused = token_client(owner).post(f"/api/assignments/{mine.pk}/skip/")
    assert refused.status_code == 403
    assert refused.json()["code"] == "access_ended"
    assert "english ≥ 0.8" in refused.json()["detail"]
    assert_taken_back(mine, "english")
    skipped = token_client(teammate).post(f"/api/assignments/{theirs.pk}/skip/")
    assert skipped.status_code == 200
    assert skipped.json()["skipped"]["status"] == "skipped"
    assert skipped.json()["next"]["worker"] == "teammate"
    submitted = token_client(teammate).post(
        f"/api/assignments/{skipped.json()['next']['id']}/submit/", {"answers": {"short": "ok"}}, format="json"
    )
    assert submitted.status_code == 200
    assert submitted.json()["status"] == "submitted"
    assert submitted.json()["answers"] == {"short": "ok"}


def test_the_api_submission_names_bad_answers_and_someone_elses_assignment_is_404(owner, teammate, batch):
    mine = forms.do_accept_next(owner, batch)
    api = token_client(owner)
    for body, field in (
        ({"answers": ["x"]}, "answers"),
        ({"answers": {"short": 3}}, "answers.short"),
        ({"answers": {"short": "a\x00b"}}, "short"),
        ({}, "answers"),
        ({"answers": {'=HYPERLINK("http://x")': "1"}}, "answers"),  # not a field of the form, nor named like one
        ({"answers": {"<img src=x>": "1"}}, "answers"),
        ({"answers": {f"f{n}": "1" for n in range(301)}}, "answers"),  # over FORM_ANSWER_FIELDS_MAX
        ({"answers": {"short ": "x"}}, "answers"),  # a look-alike of the form's own field
        ({"answers": {"short": "x" * 32768}}, "short"),
        ({"answers": {"tags": ["a"] * 1001}}, "tags"),
    ):
        response = api.post(f"/api/assignments/{mine.pk}/submit/", body, format="json")
        assert response.status_code == 400, body
        assert response.json()["errors"][0]["field"] == field
    other = token_client(teammate)
    assert other.post(f"/api/assignments/{mine.pk}/submit/", {"answers": {}}, format="json").status_code == 404
    assert token_client(teammate).post(f"/api/assignments/{mine.pk}/return/").status_code == 404
    for action in ("submit", "skip", "return"):  # an id that is not a number is a 404 as well, never a 500
        assert api.post(f"/api/assignments/null%2Cnull/{action}/").status_code == 404
    mine.refresh_from_db()
    assert mine.status == AssignmentStatus.ACTIVE
    returned = api.post(f"/api/assignments/{mine.pk}/return/")
    assert returned.status_code == 200
    assert returned.json()["status"] == "returned"
    assert api.post(f"/api/assignments/{mine.pk}/return/").status_code == 409


def test_opening_a_frame_after_the_grant_ended_ends_the_task_and_says_why(alpha, admin, owner, english, batch):
    assignment = forms.do_accept_next(owner, batch)
    quality.do_revoke(english, owner)
    response = Client().get(forms.work_frame_url(assignment))
    assert response.status_code == 403
    assert "sandbox" in response["Content-Security-Policy"]
    assert reason_in(response.content.decode(), "english ≥ 0.8")
    assert "mturk_form" not in response.content.decode()
    assert_taken_back(assignment, "english")


# --- The submission that blocks -----------------------------------------------------------------------------------

GOLD_CSV = "topic,sentence,Answer.polarity\n" + "".join(f"t{i},s{i},{'pos' if i % 2 else 'neg'}\n" for i in range(8))


def test_the_submission_that_blocks_is_stored_confirmed_and_says_why(alpha, admin, owner, teammate):
    batch = make_batch(alpha, csv_text=GOLD_CSV, name="graded", assignments_per_task=2)
    quality.do_mark_gold(batch, quality.check_gold_request(batch, {"tasks": list(range(8))}))
    quality.do_update_quality_settings(batch, {"gold_rate": 1.0, "gold_threshold": 0.5, "gold_min_answers": 1})
    client = Client()
    client.force_login(owner)
    assignment = forms.do_accept_next(owner, batch)
    wrong = "pos" if assignment.task.index % 2 == 0 else "neg"
    frame = Client().post(forms.work_url(assignment), {"polarity": wrong})
    assert frame.status_code == 200
    said = lxml.html.document_fromstring(frame.content.decode()).get_element_by_id("submit-result")
    assert said.get("data-status") == "submitted"
    assert "Your answers were submitted, but you can take no more tasks of this batch" in said.text_content()
    assert "gold accuracy" in said.text_content()
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.SUBMITTED
    assert assignment.answers == {"polarity": wrong}

    state = client.get(f"/work/assignments/{assignment.pk}/state").json()
    assert state["status"] == "submitted"
    assert state["batch_open"] is False  # the page does not ask for the next task
    assert "gold accuracy" in state["stop_reason"]

    # Submit & next as the page would have sent it anyway (a stale page): the submitted work, confirmed, not a 403
    following = client.post(f"/work/batches/{batch.pk}/accept/", {"submitted": str(assignment.pk)})
    assert following.status_code == 302
    assert following["Location"] == f"/work/assignments/{assignment.pk}/?submitted=1"
    page = client.get(following["Location"])
    assert page.status_code == 200
    document = lxml.html.document_fromstring(page.content.decode())
    assert "Submitted task" in document.text_content()
    assert "gold accuracy" in document.get_element_by_id("stop-reason").text_content()
    assert not document.xpath('//*[@id="next-task"]')
    # without a submission to confirm, accepting is the 403 page saying why
    refused = client.post(f"/work/batches/{batch.pk}/accept/")
    assert refused.status_code == 403
    assert "blocked" in refused.content.decode()
    # the other worker carries on
    other = forms.do_accept_next(teammate, batch)
    assert Client().post(forms.work_url(other), {"polarity": "x"}).status_code == 200
