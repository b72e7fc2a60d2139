"""The exports pages of a project: the splits report (and its configuration, for admins), exports (start, follow,
cancel, download) and evaluations (upload predictions, read scores). Thin: they call ``annotation.actions``; the
progress is polled from the API's job JSON (``static/js/app.js``) and archives download through the API."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ...actions import check_choice, parse_json
from ...actions.exports import jobs, splits
from ...actions.exports.turkingbench import form_batches
from ...actions.manage.access import check_project_role
from ...lib import readable
from ...models import READ_ROLES, Evaluation, ExportJob, SplitConfig
from ..page_errors import action_errors, refusal_kept, refusals_as_messages, refusals_on_form
from . import forms

PAGE_JOBS = 50
PER_TURN_ROWS = 500  # the evaluation page's per-turn table; every row is in the evaluation's JSON


def project_page(request, name: str, roles=READ_ROLES, cannot="read this project"):
    """``(project, your role)`` or the 404 / 403 page."""
    project = check_project_role(request.user, name, roles, cannot)
    return project, project.role_of(request.user)


def report_statuses(request) -> list[str]:
    chosen = request.GET.getlist("statuses") or ["validated"]
    for index, status in enumerate(chosen):
        check_choice(f"statuses[{index}]", status, jobs.STATUS_CHOICES)
    return chosen


@login_required
@require_http_methods(["GET", "POST"])
@action_errors
def splits_page(request, name: str):
    """Per-split counts and the leakage report for both schemes; project admins also change the configuration."""
    project, role = project_page(request, name)
    config = SplitConfig.for_project(project)
    form = forms.SplitConfigForm.for_config(config)
    if request.method == "POST":
        project, role = project_page(request, name, ("admin",), "change the split configuration (needs admin)")
        form = forms.SplitConfigForm(request.POST)
        if form.is_valid():
            with refusals_on_form(form):
                splits.do_update_split_config(project, form.as_data())
                messages.success(request, "Split configuration saved.")
                return redirect("exports-splits", name=project.name)
    statuses = report_statuses(request)
    context = {
        "project": project,
        "project_role": role,
        "tab": "splits",
        "form": form,
        "statuses": statuses,
        "status_choices": forms.STATUS_CHOICES,
        "reports": splits.split_reports(project, statuses),
    }
    return render(request, "exports/splits.html", context, status=400 if form.errors else 200)


def export_page(request, name: str):
    return project_page(request, name, jobs.EXPORT_ROLES, "export (needs researcher or admin)")


@login_required
@require_http_methods(["GET", "POST"])
@action_errors
def exports(request, name: str):
    """Start an export (format, splits, statuses, archive) and list the project's exports."""
    project, role = export_page(request, name)
    form = forms.ExportForm(request.POST or None, batches=form_batches(project))
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        with refusals_on_form(form):
            job = jobs.do_create_export(
                request.user,
                project,
                data["format"],
                form.split_list(),
                archive_format=data["archive_format"],
                **form.export_options(),
            )
            return redirect("exports-export", name=project.name, job_id=job.pk)
    jobs.reap_stale_jobs(ExportJob)
    listed = ExportJob.objects.filter(project=project).select_related("owner").prefetch_related("batches")[:PAGE_JOBS]
    context = {"project": project, "project_role": role, "tab": "exports", "form": form, "jobs": listed}
    return render(request, "exports/exports.html", context, status=400 if form.errors else 200)


@login_required
@require_GET
@action_errors
def export_detail(request, name: str, job_id: int):
    project, role = export_page(request, name)
    jobs.reap_stale_jobs(ExportJob)
    job = get_object_or_404(ExportJob.objects.select_related("owner"), project=project, pk=job_id)
    context = {"project": project, "project_role": role, "tab": "exports", "job": job}
    context["batches"] = job.batches.order_by("name")
    # the quality summary (counts["quality"]) has its own block on the page
    context["count_tables"] = readable.count_tables({k: v for k, v in (job.counts or {}).items() if k != "quality"})
    return render(request, "exports/export.html", {**context, "may_cancel": jobs.may_cancel(request.user, job)})


@login_required
@require_POST
@action_errors
def job_cancel(request, name: str, kind: str, job_id):
    """Cancel a queued or running export or evaluation, then back to its page."""
    project, _ = export_page(request, name)
    model, page = (ExportJob, "exports-export") if kind == "exports" else (Evaluation, "exports-evaluation")
    job = get_object_or_404(model.objects.select_related("project"), project=project, pk=int(job_id))
    cancel_from_page(request, job, "Cancelled: nothing is published.")
    return redirect(page, name=project.name, job_id=job.pk)


def cancel_from_page(request, job, cancelled: str) -> None:
    """Cancel ``job`` (an export, evaluation or agent run) for the signed-in person: ``Forbidden`` (the 403 page,
    for views under ``action_errors``) unless they started it or are an admin of its project; the outcome
    (``cancelled``, or why not) as the next page's message."""
    jobs.check_job_cancellable(request.user, job)
    with refusals_as_messages(request):
        jobs.do_cancel_job(job)
        messages.success(request, cancelled)


def read_predictions(form) -> list | None:
    """The uploaded predictions file as JSON, or None with the error put on the form."""
    upload = form.cleaned_data["predictions"]
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE  # as for the API's JSON body (and the body guard before it)
    if upload.size > limit:
        form.add_error("predictions", f"over the limit of {limit} bytes (INGEST_MAX_BATCH_BYTES)")
        return None
    with refusal_kept() as refusal:
        return parse_json(upload.read(), "predictions")
    form.add_error("predictions", f"not a JSON file: {refusal.detail.removeprefix('predictions: ')}")
    return None


@login_required
@require_http_methods(["GET", "POST"])
@action_errors
def evaluations(request, name: str):
    """Upload predictions for a split and list the project's evaluations with their main scores."""
    project, role = export_page(request, name)
    form = forms.EvaluationForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        predictions = read_predictions(form)
        if predictions is not None:
            data = form.cleaned_data
            with refusals_on_form(form):
                evaluation = jobs.do_create_evaluation(
                    request.user, project, data["format"], data["split"], predictions
                )
                return redirect("exports-evaluation", name=project.name, job_id=evaluation.pk)
    jobs.reap_stale_jobs(Evaluation)
    listed = Evaluation.objects.filter(project=project).select_related("owner").defer("predictions", "results")
    context = {"project": project, "project_role": role, "tab": "evaluations", "form": form, "jobs": listed[:PAGE_JOBS]}
    return render(request, "exports/evaluations.html", context, status=400 if form.errors else 200)


@login_required
@require_GET
@action_errors
def evaluation_detail(request, name: str, job_id: int):
    """An evaluation's progress, then its aggregate scores, the share of the split's turns that had predictions,
    and the data version it scored."""
    project, role = export_page(request, name)
    jobs.reap_stale_jobs(Evaluation)
    evaluation = get_object_or_404(Evaluation.objects.defer("predictions"), project=project, pk=job_id)
    results = evaluation.results or {}
    aggregate = results.get("aggregate") or {}
    context = {
        "project": project,
        "project_role": role,
        "tab": "evaluations",
        "job": evaluation,
        "may_cancel": jobs.may_cancel(request.user, evaluation),
        "aggregate": [(metric, readable.number(value)) for metric, value in sorted(aggregate.items())],
        "coverage": results.get("coverage"),
        # per turn (WebLINX) or per step (Mind2Web), as the evaluation's JSON has them
        "per_turn": readable.score_table(results.get("per_turn") or results.get("per_step") or [], PER_TURN_ROWS),
    }
    return render(request, "exports/evaluation.html", context)
