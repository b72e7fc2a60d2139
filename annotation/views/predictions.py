"""Prediction runs in the web app (session; the agents area): the runs you may read with a form to start one,
one run (its settings, usage, scores, the answers that could not be read, its predictions file), cancelling, and
two runs' scores side by side. Researchers and admins of the project only; its other roles
get a 403, anyone else a 404. Thin:
``actions.predictions``, ``actions.endpoints``, ``actions.exports.jobs``."""

import json

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ..actions import ValidationFailed
from ..actions import endpoints as endpoint_actions
from ..actions import predictions as actions
from ..actions.exports import jobs
from ..lib.splits import SPLITS
from .exports.pages import cancel_from_page
from .page_errors import action_errors, refusals_as_messages

RUNS_SHOWN = 100
NUMBERS = {"temperature": float, "max_tokens": int, "in_flight": int, "timeout": float, "candidates": int}


def numbers_from(post) -> dict:
    """The run's numeric settings from the form, None for an empty one (the run's default; a field that is not a
    number: 400 naming it)."""
    values = dict.fromkeys(NUMBERS)
    for name, kind in NUMBERS.items():
        raw = (post.get(name) or "").strip()
        if raw:
            try:
                values[name] = kind(raw)
            except ValueError:
                raise ValidationFailed(
                    f"{name}: not a number", [{"field": name, "message": "expected a number"}]
                ) from None
    return values


@login_required
@require_http_methods(["GET", "POST"])
def run_list(request):
    if request.method == "POST":
        with refusals_as_messages(request):
            project = endpoint_actions.check_project_for_models(request.user, request.POST.get("project", ""))
            run = actions.do_create_prediction_run(
                request.user,
                project,
                request.POST.get("format", ""),
                request.POST.get("split", ""),
                request.POST.get("endpoint", ""),
                {**numbers_from(request.POST), "turns": request.POST.get("turns") or None},
                evaluate=request.POST.get("evaluate") == "on",
            )
            return redirect("agents-prediction", prediction_id=run.pk)
        return redirect("agents-predictions")
    runs = actions.runs_readable_by(request.user).order_by("-created_at")[:RUNS_SHOWN]
    endpoints = endpoint_actions.endpoints_readable_by(request.user).order_by("project__name", "name")
    context = {
        "runs": runs,
        "endpoints": endpoints,
        "projects": sorted({endpoint.project.name for endpoint in endpoints}),
        "formats": actions.FORMATS,
        "turn_sets": actions.TURN_SETS,
        "splits": sorted({split for fmt in actions.FORMATS for split in SPLITS[fmt]}),
        "in_flight": settings.PREDICT_IN_FLIGHT,
    }
    return render(request, "agents/predictions.html", context)


@login_required
@require_GET
@action_errors
def run_detail(request, prediction_id: int):
    run = actions.check_run_readable(request.user, prediction_id)
    others = actions.runs_readable_by(request.user).filter(project=run.project).exclude(pk=run.pk)[:RUNS_SHOWN]
    context = {
        "run": run,
        "aggregate": (run.results or {}).get("aggregate") or {},
        "others": others,
        "may_cancel": jobs.may_cancel(request.user, run),
    }
    return render(request, "agents/prediction.html", context)


@login_required
@require_GET
@action_errors
def run_predictions(request, prediction_id: int):
    """The predictions file, as evaluations take it (a download)."""
    run = actions.check_run_readable(request.user, prediction_id)
    return answers_download(run.predictions, f"predictions-{run.pk}-{run.format}-{run.split}.json")


@login_required
@require_GET
@action_errors
def run_failures(request, prediction_id: int):
    """The answers that could not be read, whole as stored (the page shows 500 characters of each): a download."""
    run = actions.check_run_readable(request.user, prediction_id)
    return answers_download(run.failures, f"failures-{run.pk}-{run.format}-{run.split}.json")


def answers_download(data, filename: str) -> HttpResponse:
    """A run's JSON as a download: it holds whole model answers, so no cache keeps it."""
    response = HttpResponse(json.dumps(data, indent=1), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "private, no-store"
    return response


@login_required
@require_POST
@action_errors
def run_cancel(request, prediction_id: int):
    run = actions.check_run_readable(request.user, prediction_id)
    cancel_from_page(request, run, "Cancelled: it asks the model no more and stores nothing.")
    return redirect("agents-prediction", prediction_id=run.pk)


@login_required
@require_GET
@action_errors
def compare(request):
    ids = [request.GET.get("a", ""), request.GET.get("b", "")]
    missing = [name for name, value in zip("ab", ids, strict=True) if not value.isdecimal()]
    if missing:
        detail = f"Compare takes two prediction runs, ?a=<run>&b=<run>: choose run {' and '.join(missing)}."
        raise ValidationFailed(detail, [{"field": name, "message": "required"} for name in missing])
    first, second = (actions.check_run_readable(request.user, int(value)) for value in ids)
    table = actions.compare_runs(first, second)
    return render(request, "agents/predictions_compare.html", {"a": first, "b": second, "table": table})
