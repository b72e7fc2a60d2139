"""Expiry by Celery beat: a real beat process schedules ``workers.expire_assignments`` and a real worker runs it
against the test database; an assignment past its time becomes expired and its task's slot is free again."""

import time
import uuid

import pytest
from django.db import connection

from annotation.actions import forms
from annotation.models import Assignment, AssignmentStatus, Task
from devtools.processes import celery_beat, celery_worker, database_url
from tests.support.forms_data import make_batch

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]


def test_an_assignment_expires_by_the_beat_job(alpha, owner, teammate, tmp_path):
    batch = make_batch(alpha, allotted_seconds=1)
    overdue = forms.do_accept_next(owner, batch)
    env = {
        "DATABASE_URL": database_url(connection.settings_dict),
        "FORM_EXPIRY_SWEEP_SECONDS": "1",
        "CELERY_QUEUE": f"beat-test-{uuid.uuid4().hex[:8]}",  # this test's worker only
    }
    with (
        celery_worker(env, tmp_path / "worker.log"),
        celery_beat(env, tmp_path / "beat.log", tmp_path / "beat-schedule"),
    ):
        deadline = time.monotonic() + 90
        while Assignment.objects.get(pk=overdue.pk).status == AssignmentStatus.ACTIVE:
            assert time.monotonic() < deadline, (tmp_path / "beat.log").read_text()[-3000:]
            time.sleep(0.2)
    assert Assignment.objects.get(pk=overdue.pk).status == AssignmentStatus.EXPIRED
    assert Task.objects.get(pk=overdue.task_id).taken == 0
    assert "workers.expire_assignments" in (tmp_path / "worker.log").read_text()
    assert forms.do_accept_next(teammate, batch).task_id == overdue.task_id
