"""The results of agent runs in the web app (session): the runs you may read, one run's score table (task × field
type, ``all``, overall), one instance's fields with the page screenshot and the gold answers, and two runs side by
side. Researchers and admins of the run's project only; anyone else gets a 404. A queued or running run is
cancelled from its page by the one who started it or a project admin (403 for other researchers), and a failed,
cancelled or budget-stopped run resumed by them the same way. Thin:
``actions.agents``, ``actions.exports.jobs``."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from ..actions import ValidationFailed
from ..actions import agents as actions
from ..actions.errors import Conflict
from ..actions.exports import jobs
from .exports.pages import cancel_from_page
from .page_errors import action_errors

RUNS_SHOWN = 100


@login_required
@require_GET
def run_list(request):
    runs = actions.runs_readable_by(request.user).order_by("-created_at")[:RUNS_SHOWN]
    return render(request, "agents/runs.html", {"runs": runs})


@login_required
@require_GET
@action_errors
def run_detail(request, run_id: int):
    run = actions.check_run_readable(request.user, run_id)
    others = actions.runs_readable_by(request.user).filter(project=run.project).exclude(pk=run.pk)[:RUNS_SHOWN]
    context = {
        "run": run,
        "table": actions.score_table(run),
        "instances": actions.run_instances(run),
        "others": others,
        "may_cancel": jobs.may_cancel(request.user, run),
        "may_resume": jobs.may_cancel(request.user, run) and actions.may_resume(run),
    }
    return render(request, "agents/run.html", context)


@login_required
@require_POST
@action_errors
def run_cancel(request, run_id: int):
    """Cancel a queued or running run (its owner or a project admin), then back to its page."""
    run = actions.check_run_readable(request.user, run_id)
    cancel_from_page(request, run, "Cancelled: the instances it finished are kept; it stores no more.")
    return redirect("agents-run", run_id=run.pk)


@login_required
@require_POST
@action_errors
def run_resume(request, run_id: int):
    """Queue a failed, cancelled or budget-stopped run again (its owner or a project admin), then back to its page."""
    run = actions.check_run_readable(request.user, run_id)
    try:
        actions.do_resume_agent_run(request.user, run)
    except Conflict as error:
        messages.error(request, error.detail)
    else:
        messages.success(request, "Resumed: the run goes on where it stopped; the model is not asked again.")
    return redirect("agents-run", run_id=run.pk)


@login_required
@require_GET
@action_errors
def instance_detail(request, run_id: int, row_id: int):
    row = actions.check_instance_readable(request.user, run_id, row_id)
    return render(request, "agents/instance.html", {"run": row.run, "row": row, "fields": row.fields.order_by("pk")})


@login_required
@require_GET
@action_errors
def instance_screenshot(request, run_id: int, row_id: int):
    row = actions.check_instance_readable(request.user, run_id, row_id)
    if not row.screenshot:
        raise Http404("this instance has no screenshot")
    response = FileResponse(row.screenshot.open("rb"), content_type="image/png")
    response["Cache-Control"] = "private, max-age=3600"
    return response


@login_required
@require_GET
@action_errors
def compare(request):
    ids = [request.GET.get("a", ""), request.GET.get("b", "")]
    missing = [name for name, value in zip("ab", ids, strict=True) if not value.isdigit()]
    if missing:
        detail = f"Compare takes two run ids, ?a=<run>&b=<run>: choose run {' and '.join(missing)}."
        raise ValidationFailed(detail, [{"field": name, "message": "required"} for name in missing])
    first, second = (actions.check_run_readable(request.user, int(value)) for value in ids)
    table = actions.compare_tables(actions.score_table(first), actions.score_table(second))
    return render(request, "agents/compare.html", {"a": first, "b": second, "table": table})
