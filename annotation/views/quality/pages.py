"""Quality pages (``quality-…``): a batch's review page (its submitted work with filters, decisions one by one, for
the selected rows or for everything a filter selects, reopen, gold tasks, quality settings, the results CSV uploaded
back) and a project's qualifications (granted and revoked by admins). Thin: each calls ``annotation.actions``;
a refusal of a POST is the next page's message (nothing is stored), a refusal to open a page its error page."""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from ...actions import forms, quality
from ...actions.errors import NotFound, invalid
from ...lib.agreement import GOLD_NOTE, percent
from ...models import Qualification, ReviewState, Role
from ..page_errors import action_errors, refusals_as_messages

PAGE = 100
FILTERS = ("worker", "review", "flagged", "gold_below", "gold_at_least")


def chosen_filters(data) -> dict:
    return {key: data.get(key, "").strip() for key in FILTERS if data.get(key, "").strip()}


def back_to(batch_id, filters: dict):
    url = reverse("quality-decisions", args=[batch_id])
    query = urlencode(filters)
    return redirect(f"{url}?{query}" if query else url)


@login_required
@require_GET
@action_errors
def decisions_page(request, batch_id: int):
    """The batch's submitted work: filters, select all, approve or reject (with the reason the worker sees)."""
    batch = forms.check_batch_manageable(request.user, batch_id)
    filters = chosen_filters(request.GET)
    rows = quality.filtered(quality.review_queryset().filter(task__batch=batch), **filters)
    page = Paginator(rows, PAGE).get_page(request.GET.get("page"))
    page.object_list = quality.review_rows(batch, page.object_list)
    settings = quality.quality_settings(batch)
    context = {
        "batch": batch,
        "page": page,
        "filters": filters,
        "settings": settings,
        "blocked": [{**b, "shown": percent(b["accuracy"])} for b in settings["blocked"]],
        "gold_note": GOLD_NOTE,
        "states": ReviewState.choices,
        "qualifications": list(Qualification.objects.filter(project=batch.project).order_by("name")),
        "workers": sorted(set(rows.values_list("worker__username", flat=True))),
    }
    return render(request, "quality/decisions.html", context)


def decision_of(request) -> str:
    return request.POST.get("decision", "")


@login_required
@require_POST
@action_errors
def decisions_decide(request, batch_id: int):
    """Approve or reject the selected rows (``assignment``, repeated), or every pending row the filter selects
    (``scope=filter``): the latter first answers a confirmation counting the rows (and carrying their digest,
    ``selection``); confirmed, it acts on those rows only, or asks again when the selection changed meanwhile."""
    batch = forms.check_batch_manageable(request.user, batch_id)
    filters = chosen_filters(request.POST)
    with refusals_as_messages(request):
        decision, feedback = decision_of(request), request.POST.get("feedback", "")
        if request.POST.get("scope") == "filter":
            quality.check_decision(decision, feedback)
            rows = quality.filtered(quality.review_queryset().filter(task__batch=batch), **filters)
            selection = quality.check_selection(request.POST.get("selection"))
            ids, now_selected = quality.pending_selection(rows, request.user)
            if selection != now_selected:
                return confirm_filtered(request, batch, filters, ids, now_selected, changed=selection is not None)
            changed = quality.do_decide_filtered(request.user, rows, decision, feedback, selection=selection)
        else:
            ids = request.POST.getlist("assignment")
            if not ids or not all(i.isdecimal() for i in ids):
                raise invalid("assignment", "select at least one row")
            assignments = quality.check_reviewable(request.user, [int(i) for i in ids])
            if any(a.task.batch_id != batch.pk for a in assignments):
                raise invalid("assignment", f"not all of batch {batch.name!r}")
            changed = quality.do_decide(request.user, assignments, decision, feedback)
        done = "Approved" if decision == "approve" else "Rejected"
        messages.success(request, f"{done} {changed} assignment{'s' if changed != 1 else ''}.")
    return back_to(batch.pk, filters)


CONFIRM_SHOWN = 50


def confirm_filtered(request, batch, filters: dict, ids: list[int], selection: str, changed: bool):
    """The confirmation of a decision by filter: how many pending rows of which batch it changes (the first
    ``CONFIRM_SHOWN`` listed) and the digest of exactly those rows; 409 when asked again because they changed."""
    shown = quality.review_queryset().filter(pk__in=ids[:CONFIRM_SHOWN]).order_by("task__index", "pk")
    context = {
        "batch": batch,
        "filters": filters,
        "decision": decision_of(request),
        "feedback": request.POST.get("feedback", "").strip(),
        "count": len(ids),
        "selection": selection,
        "rows": shown,
        "more": max(0, len(ids) - CONFIRM_SHOWN),
        "changed": changed,
    }
    return render(request, "quality/confirm_decide.html", context, status=409 if changed else 200)


def reviewed_in(request, batch_id: int, assignment_id: int):
    """``(batch, assignment)``: a submitted assignment of a batch ``request.user`` manages, else 404 / 403."""
    batch = forms.check_batch_manageable(request.user, batch_id)
    (assignment,) = quality.check_reviewable(request.user, [assignment_id])
    if assignment.task.batch_id != batch.pk:
        raise NotFound(f"no assignment {assignment_id} in batch {batch.name!r}")
    return batch, assignment


@login_required
@require_POST
@action_errors
def decisions_reopen(request, batch_id: int, assignment_id: int):
    """Reopen a rejected assignment: its slot goes back to the queue for another worker. Without ``confirm`` it
    answers the confirmation (which assignment, of which batch, what changes)."""
    batch, assignment = reviewed_in(request, batch_id, assignment_id)
    filters = chosen_filters(request.POST)
    if request.POST.get("confirm") != "1":
        context = {"batch": batch, "a": assignment, "filters": filters, "back": request.POST.get("back", "")}
        return render(request, "quality/confirm_reopen.html", context)
    with refusals_as_messages(request):
        quality.do_reopen(request.user, assignment)
        messages.success(request, f"Reopened assignment {assignment.pk}: another worker can take its slot.")
    if request.POST.get("back") == "assignment":
        return redirect("quality-decision", batch_id=batch.pk, assignment_id=assignment.pk)
    return back_to(batch.pk, filters)


@login_required
@require_GET
@action_errors
def decisions_assignment(request, batch_id: int, assignment_id: int):
    """One submitted assignment as its reviewer reads it: its answers, its review and its decision trail (with
    Undo while a decision can be undone)."""
    batch, assignment = reviewed_in(request, batch_id, assignment_id)
    (row,) = quality.review_rows(batch, [quality.review_queryset().get(pk=assignment.pk)])
    context = {
        "batch": batch,
        "a": row,
        "trail": quality.trail_rows(assignment.pk),
        "undo_minutes": int(quality.undo_window().total_seconds() // 60),
        "gold_note": GOLD_NOTE,
    }
    return render(request, "quality/assignment.html", context)


@login_required
@require_POST
@action_errors
def decisions_undo(request, batch_id: int, assignment_id: int):
    """Undo a decision of the assignment's trail (``decision``, default its latest standing one), with a reason."""
    batch, assignment = reviewed_in(request, batch_id, assignment_id)
    with refusals_as_messages(request):
        target = quality.check_undo_target(assignment, request.POST.get("decision"))
        reason = quality.check_reason(request.POST.get("reason"))
        undo = quality.do_undo(request.user, assignment, target, reason)
        state = undo.get_to_state_display().lower()
        messages.success(request, f"Undone: assignment {assignment.pk} is {state} again.")
    return redirect("quality-decision", batch_id=batch.pk, assignment_id=assignment.pk)


@login_required
@require_POST
@action_errors
def decisions_gold(request, batch_id: int):
    """Mark gold tasks: task indices (from 0, as every page shows them) with their CSV answers, or one assignment's
    answers."""
    batch = forms.check_batch_manageable(request.user, batch_id)
    with refusals_as_messages(request):
        if request.POST.get("assignment"):
            raw = request.POST["assignment"]
            body = {"assignment": int(raw) if raw.isdecimal() else raw}
        else:
            numbers = [part.strip() for part in request.POST.get("tasks", "").split(",") if part.strip()]
            if not numbers or not all(n.isdecimal() for n in numbers):
                raise invalid("tasks", "expected task indices (from 0), separated by commas")
            body = {"tasks": [int(n) for n in numbers], "gold": request.POST.get("gold", "1") == "1"}
        changed = quality.do_mark_gold(batch, quality.check_gold_request(batch, body))
        messages.success(request, f"Changed {changed} gold task{'s' if changed != 1 else ''}.")
    return back_to(batch.pk, {})


def requirements_of(text: str) -> list[dict]:
    """``name ≥ score`` lines (``name: 0.8`` or ``name 0.8``) as the action's requirements."""
    found = []
    for i, line in enumerate(line for line in text.splitlines() if line.strip()):
        name, _, score = line.replace(":", " ").strip().rpartition(" ")
        if not name.strip():
            raise invalid(f"requirements[{i}]", "expected a qualification name and a minimum score")
        found.append({"qualification": name.strip(), "min_score": score})
    return found


@login_required
@require_POST
@action_errors
def decisions_settings(request, batch_id: int):
    """Change the batch's quality settings; a value out of range is a message naming its field, nothing stored."""
    batch = forms.check_batch_manageable(request.user, batch_id)
    with refusals_as_messages(request):
        post = request.POST
        data = {
            key: post.get(key, "").strip() or None
            for key in ("gold_rate", "gold_threshold", "gold_min_answers", "auto_approve_minutes")
            if key in post
        }
        if "grant_threshold" in post:
            data["grant_threshold"] = post["grant_threshold"].strip()
        if "grants_qualification" in post:
            data["grants_qualification"] = post["grants_qualification"] or None
        if "requirements" in post:
            data["requirements"] = requirements_of(post["requirements"])
        quality.do_update_quality_settings(batch, quality.check_quality_settings(batch, data))
        messages.success(request, "Quality settings saved.")
    return back_to(batch.pk, {})


@login_required
@require_POST
@action_errors
def decisions_unblock(request, batch_id: int):
    """Unblock a worker the batch's gold blocked, with the reason they read on their work page."""
    batch = forms.check_batch_manageable(request.user, batch_id)
    with refusals_as_messages(request):
        worker, reason = quality.check_unblock(batch, request.POST.get("worker"), request.POST.get("reason"))
        quality.do_unblock(request.user, batch, worker, reason)
        messages.success(request, f"Unblocked {worker.username}: they get tasks of {batch.name!r} again.")
    return redirect(reverse("quality-decisions", args=[batch.pk]) + "#blocked-workers")


@login_required
@require_POST
@action_errors
def decisions_upload(request, batch_id: int):
    """Apply the Approve / Reject columns of the results CSV uploaded back: all the decisions, or none."""
    batch = forms.check_batch_manageable(request.user, batch_id)
    with refusals_as_messages(request):
        upload = request.FILES.get("csv")
        if upload is None:
            raise invalid("csv", "choose the results CSV with Approve or Reject filled in")
        counts = quality.do_apply_decisions_csv(request.user, batch, upload.read(upload.size + 1))
        messages.success(
            request,
            f"Applied: {counts['approved']} approved, {counts['rejected']} rejected, {counts['unchanged']} unchanged.",
        )
    return back_to(batch.pk, {})


@login_required
@require_GET
@action_errors
def qualifications_page(request, name: str):
    """A project's qualifications and who holds them; admins create, grant and revoke."""
    project = quality.check_project_qualifications(request.user, name)
    context = {
        "project": project,
        "qualifications": Qualification.objects.filter(project=project)
        .prefetch_related("scores__worker", "required_by__batch", "onboarding_batches")
        .order_by("name"),
        "can_change": project.has_role(request.user, (Role.ADMIN,)),
        "members": sorted(project.memberships.values_list("user__username", flat=True)),
    }
    return render(request, "quality/qualifications.html", context)


@login_required
@require_POST
@action_errors
def qualification_create(request, name: str):
    project = quality.check_project_qualifications(request.user, name, write=True)
    with refusals_as_messages(request):
        name = quality.check_new_name(project, request.POST.get("name", ""))
        quality.do_create_qualification(project, name, request.POST.get("description", ""))
        messages.success(request, f"Created qualification {name!r}.")
    return redirect("quality-qualifications", name=project.name)


@login_required
@require_POST
@action_errors
def qualification_change(request, name: str, qualification_id: int, change: str):
    """``grant`` (worker, score) or ``revoke`` (worker)."""
    qualification = quality.check_qualification(request.user, qualification_id, write=True)
    if qualification.project.name != name:
        raise NotFound(f"no qualification {qualification_id} in project {name!r}")
    with refusals_as_messages(request):
        worker = quality.check_worker(qualification, request.POST.get("worker", ""))
        if change == "grant":
            quality.do_grant(qualification, worker, request.POST.get("score", "1"), request.user)
            messages.success(request, f"Granted {qualification.name!r} to {worker.username}.")
        else:
            quality.do_revoke(qualification, worker)
            messages.success(request, f"Revoked {qualification.name!r} from {worker.username}.")
    return redirect("quality-qualifications", name=qualification.project.name)
