"""The life of a background job on the worker, whatever it does: claim the row (queued → running), run its work in
a private folder with a heartbeat (``Progress``), notice a cancel (``JobStopped``), record failure, remove the folder;
and sweep the folders a killed worker left behind. What each kind of job does: ``workers.exports.jobs`` (exports,
evaluations), ``workers.agents.runs`` (agent runs).
"""

import gc
import logging
import shutil
import tempfile
import time
from pathlib import Path

from django.conf import settings

from annotation.actions.exports.jobs import beat, claim_job, finish_job, reap_stale_jobs
from annotation.models import AgentRun, Evaluation, ExportJob, ImportJob, JobStatus, PredictionRun

log = logging.getLogger(__name__)
BEAT_SECONDS = 0.5


class JobStopped(Exception):
    """The job was cancelled (or reaped) while it ran; stop and publish nothing."""


class Progress:
    """Turns a phase's own progress into the job's progress and heartbeat, at most every ``BEAT_SECONDS``."""

    def __init__(self, job, start: float, share: float):
        self.job, self.start, self.share, self.last = job, start, share, 0.0

    def __call__(self, fraction: float, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last >= BEAT_SECONDS:
            self.last = now
            if not beat(self.job, self.start + self.share * fraction, **self.fields()):
                raise JobStopped(f"job {self.job.pk} is no longer running")

    def fields(self) -> dict:
        """What else each heartbeat records (an agent run: where it is)."""
        return {}


JOB_MODELS = {model.__name__.lower(): model for model in (ExportJob, Evaluation, AgentRun, PredictionRun, ImportJob)}


def workdir_for(job) -> Path:
    """A private folder under ``EXPORT_TMP_DIR`` named ``<model>-<pk>-<random>``, so a sweep knows its job."""
    settings.EXPORT_TMP_DIR.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{type(job).__name__.lower()}-{job.pk}-", dir=settings.EXPORT_TMP_DIR))


def folder_job(name: str) -> tuple[str, int] | None:
    """``("exportjob", 12)`` for ``exportjob-12-x1y2``; None for a name no job gave."""
    model, _, rest = name.partition("-")
    pk = rest.partition("-")[0]
    return (model, int(pk)) if model in JOB_MODELS and pk.isdecimal() else None


def sweep_job_folders() -> int:
    """Remove the work folders of jobs that are not running (failed, cancelled, reaped, deleted). A job's own worker
    removes its folder when the job ends; a killed worker never does, so beat runs this every EXPORT_SWEEP_SECONDS
    (``workers.exports.jobs.sweep_export_folders``). Stale jobs are reaped first. Returns how many were removed."""
    reap_stale_jobs()
    root = settings.EXPORT_TMP_DIR
    # Folders are listed BEFORE the running jobs are read: a job is claimed (running) before its folder exists,
    # so a folder seen here whose job is not running in the later read is truly left over.
    folders = [(folder, folder_job(folder.name)) for folder in root.iterdir()] if root.is_dir() else []
    running = {
        (name, pk)
        for name, model in JOB_MODELS.items()
        for pk in model.objects.filter(status=JobStatus.RUNNING).values_list("pk", flat=True)
    }
    removed = 0
    for folder, job in folders:
        if job is not None and job not in running:
            shutil.rmtree(folder, ignore_errors=True)
            log.info("removed the work folder %s of %s %s (not running)", folder.name, *job)
            removed += 1
    return removed


def finish_clean(job, workdir: Path, status: str, **fields) -> bool:
    """``finish_job`` with the work folder removed first: whoever sees the job ended finds nothing left of it."""
    shutil.rmtree(workdir, ignore_errors=True)
    return finish_job(job, status, **fields)


def run_job(model, job_id: int, work) -> None:
    """Claim the job, run ``work(job, workdir)``, record failure; the work folder is always removed (before the
    job is marked done or failed, ``finish_clean``)."""
    job = claim_job(model, job_id)
    if job is None:
        log.info("%s %s is not queued (cancelled, already run or reaped); skipping", model.__name__, job_id)
        return
    workdir = workdir_for(job)
    # What was alive before the job (Django, the imports, the worker's caches) is left out of the job's collections:
    # an export of WebLINX's size collects the oldest generation ~15 times, and half of that time went to them
    gc.freeze()
    try:
        work(job, workdir)
    except JobStopped:
        log.info("%s stopped: %s", job, job.status)
    except Exception as error:
        log.exception("%s failed", job)
        finish_clean(job, workdir, JobStatus.FAILED, error=f"{type(error).__name__}: {error}")
    finally:
        # and collected once the job has ended: the cycles it left, and any frozen with the rest, would otherwise be
        # frozen again by the next job, and the next, never seen by a full collection
        gc.unfreeze()
        gc.collect()
        shutil.rmtree(workdir, ignore_errors=True)


# --- Exports --------------------------------------------------------------------------------------------


# --- Evaluations ----------------------------------------------------------------------------------------
