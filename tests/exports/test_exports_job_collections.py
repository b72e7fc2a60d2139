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
    seen = []

    def work(job, workdir):
        frozen = gc.get_freeze_count()
        made = [[n] for n in range(100)]
        seen.append((frozen, gc.get_freeze_count(), all(gc.is_tracked(item) for item in made)))
        if ending == "failed":
            raise RuntimeError("the work failed")
        if ending == "stopped":
            raise runners.JobStopped("cancelled")

    runners.run_job(ExportJob, job.pk, work)

    ((frozen, after_making, tracked),) = seen
    assert frozen > 10_000  # Django and the imports
    assert (after_making, tracked) == (frozen, True)  # the job's own objects stay in the collected generations
    assert gc.get_freeze_count() == 0
    job.refresh_from_db()
    assert job.status == (JobStatus.FAILED if ending == "failed" else JobStatus.RUNNING)
