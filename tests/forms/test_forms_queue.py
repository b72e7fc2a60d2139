"""The work queue (Turkle's rules): what a worker gets next, accept/submit/skip/return/expire, task and batch
completion, who may work on a batch, concurrent accepts on the real database, and query counts."""

import datetime as dt

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.actions import Conflict, forms
from annotation.models import Assignment, AssignmentStatus, Batch, Role, Task
from tests.support.actors import make_user
from tests.support.forms_data import CSV, make_batch, run_at_once

NOW = timezone.now()


@pytest.fixture
def batch(alpha):
    return make_batch(alpha, assignments_per_task=2, allotted_seconds=600)


def indexes(assignments):
    return [a.task.index for a in assignments]


def submit(assignment, answers=None, at=None):
    return forms.do_submit(assignment.pk, answers or {"short": "x"}, at or timezone.now())


def test_a_worker_gets_tasks_in_order_and_never_the_same_task_twice(batch, owner):
    taken = []
    for _ in range(3):
        assignment = forms.do_accept_next(owner, batch)
        taken.append(assignment)
        submit(assignment)
    assert indexes(taken) == [0, 1, 2]
    assert forms.do_accept_next(owner, batch) is None  # three tasks, each done once by this worker: nothing left
    with pytest.raises(Conflict, match="no longer available"):
        forms.do_accept_task(owner, taken[0].task)


def test_a_second_worker_gets_a_slot_of_the_same_task_until_the_batch_number_is_reached(batch, owner, teammate):
    third = make_user("third", batch.project, Role.ANNOTATOR)
    first, second = forms.do_accept_next(owner, batch), forms.do_accept_next(teammate, batch)
    assert first.task == second.task  # two assignments per task
    assert forms.do_accept_next(third, batch).task.index == 1
    assert Task.objects.get(pk=first.task_id).taken == 2


def test_tasks_and_the_batch_complete_when_submissions_reach_the_batch_number(batch, owner, teammate):
    for worker in (owner, teammate):
        for _ in range(3):
            submit(forms.do_accept_next(worker, batch))
    batch.refresh_from_db()
    assert batch.completed
    assert list(batch.tasks.values_list("completed", "submitted", "taken")) == [(True, 2, 2)] * 3
    with pytest.raises(Conflict, match="is completed"):
        forms.do_accept_next(make_user("late", batch.project, Role.ANNOTATOR), batch)


def test_accepting_again_resumes_the_assignment_in_progress(batch, owner):
    first = forms.do_accept_next(owner, batch)
    assert forms.do_accept_next(owner, batch) == first
    assert Assignment.objects.count() == 1


def test_a_skipped_task_comes_after_the_others_and_its_slot_is_free(batch, owner, teammate):
    first = forms.do_accept_next(owner, batch)
    following = forms.do_skip(first)
    assert following.task.index == 1
    first.refresh_from_db()
    assert first.status == AssignmentStatus.SKIPPED
    assert Task.objects.get(index=0).taken == 0
    submit(following)
    assert forms.do_accept_next(owner, batch).task.index == 2  # the skipped task 0 comes last
    assert forms.do_accept_next(teammate, batch).task.index == 0


def test_skipping_the_last_task_leaves_nothing_but_the_skipped_one(alpha, owner):
    single = make_batch(alpha, csv_text="topic,sentence\na,b\n", name="single")
    assert forms.do_skip(forms.do_accept_next(owner, single)).task.index == 0  # offered again: nothing else left


def test_returning_a_task_frees_its_slot_for_anyone(batch, owner, teammate):
    third = make_user("third", batch.project, Role.ANNOTATOR)
    forms.do_accept_next(teammate, batch)
    returned = forms.do_return(forms.do_accept_next(owner, batch))
    assert returned.status == AssignmentStatus.RETURNED
    assert forms.do_accept_next(third, batch).task.index == 0
    with pytest.raises(Conflict, match="already returned"):
        forms.do_return(returned)


def test_an_expired_assignment_frees_its_slot_and_its_late_submission_stores_nothing(batch, owner):
    assignment = forms.do_accept_next(owner, batch, now=NOW - dt.timedelta(hours=1))
    with pytest.raises(forms.AssignmentExpired):
        submit(assignment, at=NOW)
    assignment.refresh_from_db()
    assert assignment.status == AssignmentStatus.EXPIRED
    assert assignment.answers == {}
    assert Task.objects.get(pk=assignment.task_id).taken == 0


def test_the_beat_job_expires_every_overdue_assignment_and_nothing_else(batch, owner, teammate):
    overdue = forms.do_accept_next(owner, batch, now=NOW - dt.timedelta(hours=1))
    current = forms.do_accept_next(teammate, batch, now=NOW)
    assert forms.do_expire_due(NOW) == 1
    assert forms.do_expire_due(NOW) == 0
    assert Assignment.objects.get(pk=overdue.pk).status == AssignmentStatus.EXPIRED
    assert Assignment.objects.get(pk=current.pk).status == AssignmentStatus.ACTIVE
    assert Task.objects.get(index=0).taken == 1


def test_a_second_submission_is_refused_and_changes_nothing(batch, owner):
    assignment = forms.do_accept_next(owner, batch)
    submit(assignment, {"short": "first"})
    with pytest.raises(Conflict, match="already submitted"):
        submit(assignment, {"short": "second"})
    assignment.refresh_from_db()
    assert assignment.answers == {"short": "first"}
    assert Task.objects.get(pk=assignment.task_id).submitted == 1


def test_submitting_stores_answers_and_work_time(batch, owner):
    assignment = forms.do_accept_next(owner, batch, now=NOW)
    done = forms.do_submit(assignment.pk, {"tags": ["a", "c"], "short": "x"}, NOW + dt.timedelta(seconds=42.5))
    assert done.work_seconds == 42.5
    assert Assignment.objects.get(pk=assignment.pk).answers == {"tags": ["a", "c"], "short": "x"}


# --- Who may work ---------------------------------------------------------------------------------------------


def test_project_annotators_and_admins_work_on_a_batch_unless_it_names_its_workers(
    alpha, batch, owner, teammate, reviewer, researcher, outsider
):
    admin = make_user("boss", alpha, Role.ADMIN)
    assert {u.username for u in (owner, teammate, admin) if forms.can_work_on(u, batch)} == {
        "owner",
        "teammate",
        "boss",
    }
    assert not any(forms.can_work_on(u, batch) for u in (reviewer, researcher, outsider))
    batch.workers.set([teammate])
    assert not forms.can_work_on(owner, batch)
    assert forms.can_work_on(teammate, batch)
    group = Group.objects.create(name="linguists")
    reviewer.groups.add(group)
    batch.worker_groups.set([group])
    assert forms.can_work_on(reviewer, batch)
    outsider.groups.add(group)
    assert not forms.can_work_on(outsider, batch)  # named, but not in the project


def test_unpublished_and_inactive_batches_hand_out_no_work(batch, owner):
    for change in ({"published": False}, {"published": True, "active": False}):
        Batch.objects.filter(pk=batch.pk).update(**change)
        batch.refresh_from_db()
        with pytest.raises(Conflict):
            forms.do_accept_next(owner, batch)
        assert forms.available_counts(owner, Batch.objects.all()) == {}


def test_available_counts_leave_out_tasks_full_or_held(batch, owner, teammate):
    assert forms.available_counts(owner, Batch.objects.all()) == {batch.pk: 3}
    forms.do_accept_next(owner, batch)
    assert forms.available_counts(owner, Batch.objects.all()) == {batch.pk: 2}
    forms.do_accept_next(teammate, batch)
    third = make_user("third", batch.project, Role.ANNOTATOR)
    assert forms.available_counts(third, Batch.objects.all()) == {batch.pk: 2}


def test_fewer_assignments_per_task_completes_tasks_already_done(batch, owner):
    submit(forms.do_accept_next(owner, batch))
    forms.do_update_batch_settings(batch, assignments_per_task=1)
    assert list(batch.tasks.order_by("index").values_list("completed", flat=True)) == [True, False, False]


# --- Statistics ----------------------------------------------------------------------------------------------


def test_batch_statistics_count_per_status_and_time_per_worker(batch, owner, teammate):
    for seconds in (10, 30, 50):
        assignment = forms.do_accept_next(owner, batch, now=NOW)
        forms.do_submit(assignment.pk, {}, NOW + dt.timedelta(seconds=seconds))
    forms.do_return(forms.do_accept_next(teammate, batch))
    forms.do_accept_next(teammate, batch)
    stats = forms.batch_stats(batch)
    assert stats["tasks_total"] == 3
    assert stats["tasks_done"] == 0
    assert stats["assignments"] == {"active": 1, "submitted": 3, "returned": 1, "skipped": 0, "expired": 0}
    assert stats["work_seconds_total"] == 90
    assert stats["work_seconds_median"] == 30
    by_name = {w["username"]: w for w in stats["workers"]}
    assert by_name["owner"]["submitted"] == 3
    assert by_name["owner"]["work_seconds_median"] == 30
    assert by_name["teammate"]["returned"] == 1
    assert by_name["teammate"]["work_seconds_median"] is None


# --- Concurrency and query counts ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_workers_accepting_at_once_never_fill_a_slot_twice(alpha):
    batch = make_batch(alpha, assignments_per_task=2, csv_text=CSV)
    workers = [make_user(f"w{i}", alpha, Role.ANNOTATOR) for i in range(8)]
    for _ in range(2):  # twice: the second round finds every slot taken
        results = run_at_once([lambda user=user: forms.do_accept_next(user, batch) for user in workers])
        got = [r for r in results if r is not None]
        assert len({(a.task_id, a.worker_id) for a in got}) == len(got)
    held = Assignment.objects.filter(status=AssignmentStatus.ACTIVE)
    assert held.count() == 6  # 3 tasks x 2 slots, however the 16 accepts interleaved
    for task in Task.objects.all():
        assert task.taken == held.filter(task=task).count() == 2


@pytest.mark.django_db(transaction=True)
def test_one_worker_accepting_in_two_tabs_at_once_holds_one_assignment(alpha, owner):
    batch = make_batch(alpha, assignments_per_task=1)
    results = run_at_once([lambda: forms.do_accept_next(owner, batch)] * 4)
    assert Assignment.objects.count() == 1
    assert {r.pk for r in results} == {Assignment.objects.get().pk}


def queries(function) -> int:
    with CaptureQueriesContext(connection) as captured:
        function()
    return len(captured)


def test_accepting_and_submitting_take_as_many_queries_in_a_big_batch_as_in_a_small_one(alpha, owner):
    small = make_batch(alpha, name="small")
    big = make_batch(alpha, name="big", csv_text="topic,sentence\n" + "".join(f"t{i},s{i}\n" for i in range(500)))
    counts = []
    for batch in (small, big):
        holder = []
        accepting = queries(lambda batch=batch, holder=holder: holder.append(forms.do_accept_next(owner, batch)))
        submitting = queries(lambda holder=holder: submit(holder[0]))
        counts.append((accepting, submitting))
    assert counts[0] == counts[1]
    assert counts[0][0] <= 8
    assert counts[0][1] <= 10  # asks again whether the worker may still work; writes the figures version


def test_the_admin_shows_batches_tasks_and_assignments_and_changes_settings_through_the_action(batch, owner, client):
    from django.contrib.auth import get_user_model

    submit(forms.do_accept_next(owner, batch))
    client.force_login(get_user_model().objects.create_superuser("root", "root@x.org", "pw"))
    for path in ("batch/", f"batch/{batch.pk}/change/", "task/", "assignment/"):
        assert client.get(f"/admin/annotation/{path}").status_code == 200, path
    form = {
        "name": batch.name,
        "description": "",
        "assignments_per_task": 1,
        "allotted_seconds": 600,
        "published": "on",
        "active": "on",
    }
    response = client.post(f"/admin/annotation/batch/{batch.pk}/change/", form)
    assert response.status_code == 302
    assert list(batch.tasks.order_by("index").values_list("completed", flat=True)) == [True, False, False]
