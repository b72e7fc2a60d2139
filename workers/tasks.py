"""Celery tasks: thin wrappers that take a job id and call what runs it (``workers/runners.py`` runs a job's life;
``workers.exports.jobs``, ``workers.agents.runs`` what each kind does). The task names are the wire contract with the
queued messages (``annotation/actions/queue.py`` names them): they never change."""

from celery import shared_task

from .exports import jobs as export_jobs


@shared_task(name="workers.run_export_job", acks_late=True)
def run_export_job(job_id: int) -> None:
    """Run export job ``job_id`` (see ``exports.jobs.run_export``)."""
    export_jobs.run_export(job_id)


@shared_task(name="workers.run_evaluation", acks_late=True)
def run_evaluation(evaluation_id: int) -> None:
    """Score evaluation ``evaluation_id`` (see ``exports.jobs.run_evaluation``)."""
    export_jobs.run_evaluation(evaluation_id)


@shared_task(name="workers.run_import_job", acks_late=True)
def run_import_job(job_id: int) -> None:
    """Import the release archive of import job ``job_id`` (see ``exports.imports.run_import``)."""
    from .exports.imports import run_import

    run_import(job_id)


@shared_task(name="workers.run_agent", acks_late=True)
def run_agent(run_id: int) -> None:
    """Run agent run ``run_id`` in this worker's own headless Chromium (see ``agent_runs.execute``)."""
    from .agents.runs import run_agent as run

    run(run_id)


@shared_task(name="workers.run_prediction", acks_late=True)
def run_prediction(run_id: int) -> None:
    """Make (and evaluate) prediction run ``run_id`` (see ``agents.predict_runs.execute``)."""
    from .agents.predict_runs import run_prediction as run

    run(run_id)


@shared_task(name="workers.sweep_export_folders")
def sweep_export_folders() -> None:
    """Periodic (beat): reap stale jobs and remove the work folders of jobs no longer running."""
    export_jobs.sweep_export_folders()


@shared_task(name="workers.sweep_staged_blobs")
def sweep_staged_blobs() -> None:
    """Periodic (beat): remove blob files a killed server process staged for a batch it never stored."""
    from annotation.actions.recordings.staging import sweep_staged

    sweep_staged()


@shared_task(name="workers.make_thumbnails", acks_late=True)
def make_thumbnails(shas: list) -> None:
    """Thumbnails of these screenshot blobs for the review page (see ``thumbnails.make_thumbnails``)."""
    from .exports.dataset import storage_blobs
    from .review.thumbnails import make_thumbnails as make

    make([sha for sha in shas if isinstance(sha, str)], storage_blobs().read)


@shared_task(name="workers.realign_demo", acks_late=True)
def realign_demo(demo_id: int) -> None:
    """Suggested screenshots and quality checks of a demo (see ``realign.prepare_review``)."""
    from annotation.models import Demonstration

    from .review.realign import prepare_review

    demo = Demonstration.objects.filter(pk=demo_id).first()
    if demo is not None:
        prepare_review(demo)


@shared_task(name="workers.pack_demo_blobs", acks_late=True)
def pack_demo_blobs(demo_id: int) -> None:
    """On S3: copy a finished demo's blobs into its pack, which exports read with one GET (``exports.packs``)."""
    from annotation.models import Demonstration

    from .exports.packs import pack_demo

    demo = Demonstration.objects.filter(pk=demo_id).first()
    if demo is not None:
        pack_demo(demo)


@shared_task(name="workers.expire_assignments", ignore_result=True)
def expire_assignments() -> int:
    """Celery beat, every ``FORM_EXPIRY_SWEEP_SECONDS``: mark assignments past their allotted time as expired."""
    from annotation.actions.forms import do_expire_due

    return do_expire_due()


@shared_task(name="workers.auto_approve_assignments", ignore_result=True)
def auto_approve_assignments() -> int:
    """Celery beat, every ``FORM_AUTO_APPROVE_SWEEP_SECONDS``: approve submitted form work its batch's delay left
    unreviewed (``Batch.auto_approve_seconds``)."""
    from annotation.actions.quality import do_auto_approve_due

    return do_auto_approve_due()


@shared_task(name="workers.process_mind2web_steps", acks_late=True)
def process_mind2web_steps(demo_id: int) -> None:
    """Parse a validated demo's step pages once for the Mind2Web export (see ``mind2web_steps.process_demo``)."""
    from annotation.models import Demonstration

    from .exports.mind2web_steps import process_demo

    demo = Demonstration.objects.filter(pk=demo_id).first()
    if demo is not None:
        process_demo(demo)


@shared_task(name="workers.replay_task", acks_late=True)
def replay_task(demo_id: int, run: str | None = None) -> None:
    """Replay a recorded task offline from its HAR (docs/mind2web.md#replay); the result is stored on the demo while
    ``run`` (queued with it) is still the demo's replay: a lost run's late worker stores nothing."""
    from annotation.actions.exports.replays import do_fail_replay, do_start_replay
    from annotation.models import Demonstration

    from .exports.replay.run import replay_demo

    demo = Demonstration.objects.filter(pk=demo_id).first()
    if demo is None:
        return
    if not do_start_replay(demo, run):
        return
    try:
        replay_demo(demo, run)
    except Exception as error:
        do_fail_replay(demo, f"{type(error).__name__}: {error}", run)
        raise
