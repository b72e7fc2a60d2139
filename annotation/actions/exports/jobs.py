"""Background jobs (exports, evaluations, agent runs): creating them, their life on the worker, cancelling (their
owner or a project admin), reaping.

A job is a row; the Celery task gets only its id, enqueued after the row is committed. The worker claims a job
with a conditional update (queued → running), beats a heartbeat with its progress, and finishes with another
conditional update (running → done | failed), so a cancelled or reaped job can never be marked done.
"""

from django.db import transaction
from django.utils import timezone

from ...lib.formats import ARCHIVE_FORMATS
from ...lib.splits import SPLITS
from ...models import EXPORTABLE_STATUSES, Demonstration, ExportFormat, Project, Role, SplitConfig
from ...models.agents import AgentRun, PredictionRun
from ...models.exports import ACTIVE_STATUSES, Evaluation, ExportJob, ImportJob, JobStatus
from .. import queue
from ..errors import Conflict, Forbidden, ValidationFailed, invalid
from ..forms.splits import check_turkingbench_predictions, split_names
from ..manage.access import check_not_other_role, check_project_role
from ..review.claims import check_selected_demos
from .splits import split_of
from .turkingbench import FormFilters, check_form_filters, check_no_form_filters

EXPORT_ROLES = (Role.RESEARCHER, Role.ADMIN)
EXPORT_CANNOT = "export or evaluate (needs researcher or admin)"  # what other roles of a project are told
STATUS_CHOICES = tuple(status.value for status in EXPORTABLE_STATUSES)


def check_project_for_export(user, project_name) -> Project:
    """The project ``user`` may export from or evaluate on: 404 for non-members, 403 for other roles."""
    return check_project_role(user, project_name, EXPORT_ROLES, EXPORT_CANNOT)


def check_job_not_other_role(user, jobs, pk) -> None:
    """403 when job ``pk`` is in a project where ``user`` has a role that may not export; the caller answers 404
    otherwise."""
    check_not_other_role(user, jobs, pk, EXPORT_CANNOT)


def check_choice(field: str, value, allowed) -> None:
    if value not in allowed:
        raise ValidationFailed(
            f"{field} {value!r} is not allowed", [{"field": field, "message": f"expected one of: {', '.join(allowed)}"}]
        )


def split_choices(project, export_format) -> tuple:
    """The splits an export may select: the scheme's, or for TurkingBench the project's stored split lists."""
    if export_format == ExportFormat.TURKINGBENCH:
        return tuple(SplitConfig.for_project(project).form_task_splits)
    return SPLITS[export_format]


def check_export_request(project, export_format, splits, statuses, archive_format) -> None:
    check_choice("format", export_format, ExportFormat.values)
    check_choice("archive_format", archive_format, ARCHIVE_FORMATS)
    allowed = split_choices(project, export_format)
    for index, split in enumerate(splits):
        check_choice(f"splits[{index}]", split, allowed)
    if not statuses and export_format != ExportFormat.TURKINGBENCH:
        raise ValidationFailed(
            "statuses must not be empty", [{"field": "statuses", "message": "expected at least one"}]
        )
    for index, status in enumerate(statuses):
        check_choice(f"statuses[{index}]", status, STATUS_CHOICES)


MAX_SELECTED = 5000  # demos named in one export; more is a filter's job (splits, statuses)


def check_selection(project, export_format, names, splits, statuses) -> None:
    """A selection of demos to export: names of the project's demos, each matching the export's statuses and
    splits (a demo the export would leave out is named rather than dropped without a word)."""
    if not names:
        return
    field = [{"field": "demos", "message": "expected names of the project's demonstrations"}]
    if export_format == ExportFormat.TURKINGBENCH:
        raise ValidationFailed("a TurkingBench export takes form batches, not a selection of demonstrations", field)
    if len(names) > MAX_SELECTED or not all(isinstance(name, str) and name for name in names):
        raise ValidationFailed(f"demos must be at most {MAX_SELECTED} demonstration names", field)
    found = {demo.name: demo for demo in Demonstration.objects.filter(project=project, name__in=names)}
    problems = [f"{name} (not in {project.name})" for name in names if name not in found]
    wrong_status = [demo for demo in found.values() if demo.status not in statuses]
    problems += [f"{demo.name} ({demo.get_status_display().lower()})" for demo in wrong_status]
    if splits:
        split = split_of(project, export_format)
        problems += [f"{demo.name} (split {split(demo)})" for demo in found.values() if split(demo) not in splits]
    if problems:
        shown = ", ".join(sorted(problems)[:20]) + (f" and {len(problems) - 20} more" if len(problems) > 20 else "")
        raise ValidationFailed(f"these selected demonstrations would not be exported: {shown}", field)


def enqueue(task: str, job) -> None:
    """Send the job's id to the queue once the row is committed; a broker that cannot be reached fails the job
    visibly instead of leaving it queued forever (or running it inline behind the user's back)."""

    def failed(error):
        finish_job(job, JobStatus.FAILED, error=f"could not reach the task queue: {error}")

    queue.enqueue(task, job.pk, on_failure=failed)


def do_create_export(
    user,
    project,
    export_format,
    splits=(),
    statuses=None,
    archive_format="tar.gz",
    include_gold=None,
    demos=(),
    batches=None,
    review_states=None,
    exact_cells=None,
):
    """Create an export job and enqueue it. WebLINX and Mind2Web: ``statuses`` (default validated) and ``demos``
    (only these demonstrations, by name; each must match ``statuses`` and ``splits``). TurkingBench: ``batches``
    (ids; default every form batch of the project), ``review_states`` of the submitted work (default approved and
    pending), ``include_gold`` (the gold rows; default yes) and ``exact_cells`` (verbatim cells; default no), see
    ``turkingbench.check_form_filters``. ``None``: not given."""
    check_choice("format", export_format, ExportFormat.values)
    if export_format == ExportFormat.TURKINGBENCH:
        form = check_form_filters(project, batches, review_states, include_gold, exact_cells, statuses)
        statuses = []
    else:
        check_no_form_filters(export_format, batches, review_states, include_gold, exact_cells)
        form = FormFilters(review_states=[], include_gold=False)
        statuses = ["validated"] if statuses is None else statuses
    check_export_request(project, export_format, list(splits), list(statuses), archive_format)
    demos = list(dict.fromkeys(demos))
    check_selection(project, export_format, demos, list(splits), list(statuses))
    with transaction.atomic():
        job = ExportJob.objects.create(
            project=project,
            owner=user,
            format=export_format,
            splits=list(splits),
            statuses=list(statuses),
            archive_format=archive_format,
            include_gold=form.include_gold,
            review_states=form.review_states,
            exact_cells=form.exact_cells,
            demos=demos,
        )
        job.batches.set(form.batches)
        enqueue(queue.EXPORT, job)
    return job


def do_create_evaluation(user, project, eval_format, split, predictions) -> Evaluation:
    """Create an evaluation of ``predictions`` on ``split`` and enqueue it. TurkingBench: ``split`` is optional
    (empty: every form batch) and the predictions are checked against the project's form tasks first."""
    check_choice("format", eval_format, (*SPLITS, ExportFormat.TURKINGBENCH))
    if eval_format == ExportFormat.TURKINGBENCH:
        check_turkingbench_predictions(project, predictions, split)
    else:
        check_choice("split", split, SPLITS[eval_format])
    if not isinstance(predictions, list) or not predictions:
        raise ValidationFailed(
            "predictions must be a non-empty list",
            [{"field": "predictions", "message": "expected a non-empty list of predictions"}],
        )
    with transaction.atomic():
        evaluation = Evaluation.objects.create(
            project=project, owner=user, format=eval_format, split=split, predictions=predictions
        )
        enqueue(queue.EVALUATION, evaluation)
    return evaluation


def check_evaluation_split_filter(user, split: str | None) -> None:
    """``?split=`` of the evaluation list must be a split an evaluation of yours may have: a WebLINX or Mind2Web
    split, a form-task split of your projects, or one an evaluation you can read has (a 400 naming it otherwise,
    docs/api.md: a filter that can match nothing)."""
    if not split:
        return
    projects = Project.objects.for_user(user, EXPORT_ROLES)
    known = {name for names in SPLITS.values() for name in names}
    known |= {name for project in projects for name in split_names(project)}
    known |= set(Evaluation.objects.filter(project__in=projects).values_list("split", flat=True).distinct())
    known.discard("")
    if split not in known:
        raise invalid(
            "split", f"no evaluation of yours can have split {split!r}; expected one of: {', '.join(sorted(known))}"
        )


def may_cancel(user, job) -> bool:
    """Whether ``user`` may cancel ``job``: the person who started it, or an admin of its project (superusers are
    admins everywhere). Other researchers see a colleague's job but cannot stop it."""
    return job.owner_id == user.pk or job.project.role_of(user) == Role.ADMIN


def check_job_cancellable(user, job) -> None:
    """403 unless ``user`` may cancel ``job`` (``may_cancel``); who may see the job at all is checked before."""
    if not may_cancel(user, job):
        raise Forbidden(f"only the one who started job {job.pk} or an admin of its project may cancel it")


def do_cancel_job(job, reason: str = ""):
    """Cancel a queued or running job (``reason``: its ``error``, e.g. an interrupted command's). The worker notices
    at its next heartbeat and publishes nothing; a job already ended is a ``Conflict``."""
    updated = (
        type(job)
        .objects.filter(pk=job.pk, status__in=ACTIVE_STATUSES)
        .update(status=JobStatus.CANCELLED, finished_at=timezone.now(), error=reason)
    )
    job.refresh_from_db()
    if not updated:
        raise Conflict(f"job {job.pk} is already {job.status}; only queued or running jobs can be cancelled")
    return job


# --- On the worker --------------------------------------------------------------------------------------


def claim_job(model, pk):
    """queued → running, or None when the job was cancelled, already run or reaped (e.g. a redelivered task)."""
    now = timezone.now()
    claimed = model.objects.filter(pk=pk, status=JobStatus.QUEUED).update(
        status=JobStatus.RUNNING, started_at=now, heartbeat_at=now, progress=0.0
    )
    return model.objects.select_related("project", "owner").get(pk=pk) if claimed else None


def beat(job, progress: float, **fields) -> bool:
    """Record progress and a heartbeat (and ``fields``, e.g. an agent run's ``activity``); False when the job is no
    longer running (cancelled or reaped)."""
    job.progress = max(0.0, min(1.0, progress))
    return bool(
        type(job)
        .objects.filter(pk=job.pk, status=JobStatus.RUNNING)
        .update(progress=job.progress, heartbeat_at=timezone.now(), **fields)
    )


def finish_job(job, status, **fields) -> bool:
    """running/queued → ``status`` with ``fields``; False when the job had already ended (e.g. cancelled)."""
    fields.setdefault("finished_at", timezone.now())
    if status == JobStatus.DONE:
        fields.setdefault("progress", 1.0)
    updated = type(job).objects.filter(pk=job.pk, status__in=ACTIVE_STATUSES).update(status=status, **fields)
    return bool(updated)


def reap_stale_jobs(model=None) -> int:
    """Mark running jobs whose worker stopped beating (killed, crashed, machine lost) as failed."""
    models = [model] if model else [ExportJob, Evaluation, AgentRun, PredictionRun, ImportJob]
    reaped = 0
    for job_model in models:
        for job in job_model.objects.filter(status=JobStatus.RUNNING):
            if job.is_stale():
                error = (
                    f"the worker stopped responding (last heartbeat {job.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC); "
                    f"it was probably killed. Nothing was published; start a new job."
                )
                reaped += finish_job(job, JobStatus.FAILED, error=error)
    return reaped


def do_bulk_export(user, names, export_format, archive_format="tar.gz") -> list:
    """Export the selected demos: one export job per project (each needs ``user`` to be a researcher or admin
    there), whatever their review status; all jobs or none."""
    demos = check_selected_demos(user, names)
    by_project = {}
    for demo in demos:
        by_project.setdefault(demo.project.name, []).append(demo.name)
    projects = [check_project_for_export(user, name) for name in sorted(by_project)]
    with transaction.atomic():
        return [
            do_create_export(
                user,
                project,
                export_format,
                statuses=STATUS_CHOICES,
                archive_format=archive_format,
                demos=sorted(by_project[project.name]),
            )
            for project in projects
        ]
