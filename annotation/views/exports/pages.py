"""The exports pages of a project: the splits report (and its configuration, for admins), exports (start, follow,
cancel, download) and evaluations (upload predictions, read scores). Thin: they call ``annotation.actions``; the
progress is polled from the API's job JSON (``static/js/app.js``) and archives download through the API."""

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ...actions import check_choice, parse_json
from ...actions.exports import jobs, recuration, splits
from ...actions.exports.turkingbench import DEFAULT_INCLUDE_GOLD, DEFAULT_REVIEW_STATES, form_batches
from ...actions.manage.access import check_project_role
from ...lib import readable
from ...lib.readable import lines
from ...lib.splits import SPLITS
from ...models import EXPORTABLE_STATUSES, READ_ROLES, Evaluation, ExportFormat, ExportJob, SplitConfig
from ..page_errors import action_errors, refusal_kept, refusals_as_messages, refusals_on_form

PAGE_JOBS = 50
PER_TURN_ROWS = 500  # the evaluation page's per-turn table; every row is in the evaluation's JSON


# --- The pages' forms: types and shapes; the rules live in ``annotation.actions.exports`` (and the API's
# serializers), which the views call ------------------------------------------------------------------------------


class SplitConfigForm(forms.Form):
    """The split configuration as a person types it; lists one per line. Checked by the action
    (``split_config_errors``)."""

    seed = forms.IntegerField()
    valid_fraction = forms.FloatField(help_text="WebLINX valid, 0 to 1.")
    test_iid_fraction = forms.FloatField(help_text="WebLINX test_iid, 0 to 1.")
    test_task_fraction = forms.FloatField(help_text="Mind2Web test_task, 0 to 1.")
    held_out_websites = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    held_out_subcategories = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    held_out_regions = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    held_out_domains = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), required=False, help_text="Mind2Web: held-out categories."
    )

    LISTS = ("held_out_websites", "held_out_subcategories", "held_out_regions", "held_out_domains")

    @classmethod
    def for_config(cls, config):
        initial = {name: getattr(config, name) for name in ("seed", "valid_fraction", "test_iid_fraction")}
        initial["test_task_fraction"] = config.test_task_fraction
        initial.update({name: "\n".join(getattr(config, name)) for name in cls.LISTS})
        return cls(initial=initial)

    def as_data(self) -> dict:
        data = dict(self.cleaned_data)
        data.update({name: lines(data[name]) for name in self.LISTS})
        return data


STATUS_CHOICES = [(status.value, status.label) for status in EXPORTABLE_STATUSES]


REVIEW_STATE_CHOICES = [
    ("approved", "Approved"),
    ("pending", "Pending (submitted, not yet reviewed)"),
    ("rejected", "Rejected"),
]


class ExportForm(forms.Form):
    """An export: the format, then the filters of that format (demo statuses for WebLINX and Mind2Web; batches,
    review states, gold rows and exact cells for TurkingBench). The page shows only the chosen format's filters."""

    format = forms.ChoiceField(choices=ExportFormat.choices)
    splits = forms.CharField(
        required=False,
        help_text="Splits to include, comma-separated (empty = all). WebLINX: "
        + ", ".join(SPLITS["weblinx"])
        + "; Mind2Web: "
        + ", ".join(SPLITS["mind2web"])
        + "; TurkingBench: the names of the project's split lists (e.g. evaluation_tasks_easy).",
    )
    statuses = forms.MultipleChoiceField(
        choices=STATUS_CHOICES, initial=["validated"], widget=forms.CheckboxSelectMultiple, required=False
    )
    batches = forms.TypedMultipleChoiceField(
        coerce=int,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="The form batches whose batch.csv the export writes (all of them to start with).",
    )
    review_states = forms.MultipleChoiceField(
        choices=REVIEW_STATE_CHOICES,
        initial=list(DEFAULT_REVIEW_STATES),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Which workers' submitted answers become rows of batch.csv, by the requester's review: approved "
        "and pending (not yet reviewed) by default; rejected work only when you tick it.",
    )
    include_gold = forms.BooleanField(
        required=False,
        initial=DEFAULT_INCLUDE_GOLD,
        label="Include gold rows",
        help_text="Also write each batch's gold rows (the known answers imported with the batch, one row per "
        "annotator of the file) before the workers' rows; on by default, so an imported TurkingBench task exports "
        "back with its answers. Workers' answers to gold tasks are rows like any other (the review states choose "
        "them).",
    )
    exact_cells = forms.BooleanField(
        required=False,
        initial=False,
        label="Exact cells (for TurkingBench's own tools)",
        help_text="Off (the default): a cell beginning with = + - or @ is written with a leading ' so that a "
        "spreadsheet shows it as text instead of running it; the platform's own readers take the ' off, but "
        "TurkingBench's scripts and pandas see it (e.g. -3_Very_Informal becomes '-3_Very_Informal). On: every cell "
        "exactly as stored, as TurkingBench's tools expect; do not open that batch.csv in a spreadsheet, a worker's "
        "answer could run there as a formula.",
    )
    archive_format = forms.ChoiceField(choices=[("tar.gz", "tar.gz"), ("zip", "zip")])

    def __init__(self, *args, batches=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["batches"].choices = [(batch.pk, batch.name) for batch in batches]
        self.fields["batches"].initial = [batch.pk for batch in batches]

    def split_list(self) -> list[str]:
        return [split.strip() for split in self.cleaned_data["splits"].split(",") if split.strip()]

    def clean(self):
        data = super().clean()
        chosen_tb = data.get("format") == ExportFormat.TURKINGBENCH
        if chosen_tb and self.fields["batches"].choices and not data.get("batches"):
            self.add_error("batches", "Choose at least one batch.")
        return data

    def export_options(self) -> dict:
        """The chosen format's filters, as ``do_create_export`` takes them (the other format's are not sent)."""
        data = self.cleaned_data
        if data["format"] == ExportFormat.TURKINGBENCH:
            names = ("batches", "review_states", "include_gold", "exact_cells")
            return {name: data[name] for name in names}
        return {"statuses": data["statuses"]}


class EvaluationForm(forms.Form):
    format = forms.ChoiceField(choices=[(name, label) for name, label in ExportFormat.choices if name in SPLITS])
    split = forms.ChoiceField(choices=[(s, s) for s in dict.fromkeys(SPLITS["weblinx"] + SPLITS["mind2web"])])
    predictions = forms.FileField(help_text="A JSON list: WebLINX results.json rows, or Mind2Web step predictions.")


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
    form = SplitConfigForm.for_config(config)
    if request.method == "POST":
        project, role = project_page(request, name, ("admin",), "change the split configuration (needs admin)")
        form = SplitConfigForm(request.POST)
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
        "status_choices": STATUS_CHOICES,
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
    form = ExportForm(request.POST or None, batches=form_batches(project))
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
    context["imported"] = recuration.imported_demos(project).count()  # a release's demos: the re-curation page
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
    form = EvaluationForm(request.POST or None, request.FILES or None)
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
