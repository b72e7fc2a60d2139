"""A worker's job runs with what was alive before it (Django, the imports, the worker's caches) left out of the
garbage collector's passes (``gc.freeze``), and leaves nothing frozen, whether its work ends, fails or is stopped."""

import gc

import pytest

from annotation.models import ExportJob, JobStatus
from workers import runners

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("ending", ["done", "failed", "stopped"])
def test_a_job_leaves_out_what_came_before_it_and_leaves_nothing_frozen(alpha, researcher, ending):
    job = ExportJob.objects.create(project=alpha, owner=researcher, format="weblinx", statuses=["validated"])
    before = [["alive before the job"]]
    seen = []

    def work(job, workdir):
        made = [[n] for n in range(100)]
        # ``gc.get_objects()`` lists the collected generations, never the frozen ones. (Not the freeze count: an
        # object frozen with the rest may die while the job runs, as one of another thread did under load.)
        collected = {id(item) for item in gc.get_objects()}
        seen.append((gc.get_freeze_count(), id(before[0]) in collected, all(id(item) in collected for item in made)))
        if ending == "failed":
            raise RuntimeError("the work failed")
        if ending == "stopped":
            raise runners.JobStopped("cancelled")

    runners.run_job(ExportJob, job.pk, work)

    ((frozen, before_collected, made_collected),) = seen
    assert frozen > 10_000  # Django and the imports
    assert not before_collected  # what was alive before the job is left out of its collections
    assert made_collected  # the job's own objects stay in the collected generations
    assert gc.get_freeze_count() == 0
    job.refresh_from_db()
    assert job.status == (JobStatus.FAILED if ending == "failed" else JobStatus.RUNNING)
