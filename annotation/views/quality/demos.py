"""Quality pages for demonstrations (docs/quality.md): reviewers' agreement and the second-review share of a project,
annotators' records, and the second reviews waiting for a reviewer. Thin: ``annotation.actions.quality.demos`` and
``annotation.actions.review`` (second reviews) do the work."""

import io

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods

from ...actions import Forbidden, NotFound
from ...actions import review as review_actions
from ...actions.exports.recuration import has_imports
from ...actions.quality import demos as quality
from ...actions.quality.problems import CSV_COLUMNS, problem_counts, problem_rows
from ...lib import spreadsheet
from ...models import SecondDecision, Turn, TurnType
from ..page_errors import Refusal, action_errors, refusal_kept


def tabs_context(user, project, tab: str) -> dict:
    """The project's tabs, and whether it imported a release (the re-curation page's link)."""
    return {"project": project, "project_role": project.role_of(user), "tab": tab, "has_imports": has_imports(project)}


def as_int(value: str):
    """A form's number as an int (the action names the field when it is not one)."""
    try:
        return int(value.strip())
    except (AttributeError, ValueError):
        return value


@require_http_methods(["GET", "POST"])
@login_required
@action_errors
def reviewers_page(request, name: str):
    """Reviewers' agreement on second reviews (κ per reviewer pair), the problems reviewers marked, and the project's
    second-review share (admins change it here)."""
    project = quality.check_project_for_reviewers(request.user, name)
    refusal = Refusal()
    if request.method == "POST":
        quality.check_project_admin_for_settings(request.user, name)
        with refusal_kept() as refusal:
            review_actions.do_set_second_review_percent(project, as_int(request.POST.get("second_review_percent")))
            messages.success(request, f"{project.second_review_percent} % of reviewed demos now go to a second review.")
            return redirect("quality-reviewers", project.name)
    context = tabs_context(request.user, project, "quality")
    context.update(figures=quality.reviewers_kappa(project), error=refusal.detail)
    context.update(problems=problem_counts(project))
    return render(request, "quality/reviewers.html", context, status=refusal.status)


@require_GET
@login_required
@action_errors
def problems_csv(request, name: str):
    """Every problem mark of the project, one a row (formula-like notes escaped for spreadsheets)."""
    project = quality.check_project_for_reviewers(request.user, name)
    buffer = io.StringIO()
    writer = spreadsheet.writer(buffer)
    writer.writerows([CSV_COLUMNS, *problem_rows(project)])
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(True, f"{project.name}-problems.csv")
    return response


@require_GET
@login_required
@action_errors
def records_page(request, name: str):
    """Annotators' records: every member's for reviewers, researchers and admins; one's own for an annotator."""
    project = quality.check_project_for_records(request.user, name)
    context = tabs_context(request.user, project, "quality")
    sees_all = quality.sees_every_record(request.user, project)
    context.update(records=quality.records(request.user, project), sees_all=sees_all)
    return render(request, "quality/records.html", context)


@require_GET
@login_required
@action_errors
def record_page(request, name: str, id: int):
    """One member's record, with their demos."""
    project = quality.check_project_for_records(request.user, name)
    member, role = quality.check_member_record(request.user, project, id)
    context = tabs_context(request.user, project, "quality")
    context.update(
        record=quality.record_of(project, member, role),
        demos=quality.record_demos(project, member),
        sees_all=quality.sees_every_record(request.user, project),
    )
    return render(request, "quality/record.html", context)


@require_GET
@login_required
def second_reviews_page(request):
    """The second reviews waiting for the signed-in reviewer."""
    pending = list(review_actions.pending_second_reviews(request.user))
    return render(request, "quality/second_reviews.html", {"pending": pending})


def turn_rows(demo) -> list[dict]:
    rows = []
    for turn in Turn.objects.filter(demonstration=demo).order_by("timestamp", "seq"):
        what = turn.utterance if turn.type == TurnType.CHAT else f"{turn.intent} {turn.url or ''}".strip()
        rows.append({"id": turn.pk, "seq": turn.seq, "type": turn.type, "speaker": turn.speaker, "what": what})
    return rows


@require_http_methods(["GET", "POST"])
@login_required
@action_errors
def second_review_page(request, name: str):
    """A demo's second review: its second reviewer decides here (accept, return or reject, and the turns they find
    invalid); the project's other reviewers and admins see where it stands. The demo itself is not changed."""
    demo, second = review_actions.check_second_review(request.user, name)
    refusal = Refusal()
    if request.method == "POST":
        with refusal_kept(let_out=(Forbidden, NotFound)) as refusal:  # those two: the 403 and 404 pages
            review_actions.do_second_decision(
                request.user,
                name,
                request.POST.get("decision"),
                [as_int(value) for value in request.POST.getlist("invalid_turns")],
                request.POST.get("comment", ""),
            )
            messages.success(request, f"Your second review of {demo.name} is recorded.")
            following = review_actions.next_second_review(request.user)
            if following is not None:
                return redirect("quality-second-review", following.demonstration.name)
            return redirect("quality-second-reviews")
        second = review_actions.check_second_review(request.user, name)[1]
    context = {
        "demo": demo,
        "second": second,
        "mine": second is not None and second.reviewer_id == request.user.pk and not second.decision,
        "turns": turn_rows(demo),
        "error": refusal.detail,
        "decisions": SecondDecision.choices,
    }
    return render(request, "quality/second_review.html", context, status=refusal.status)
