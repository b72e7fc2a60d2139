"""The worker's and the batch manager's pages (session + CSRF, the app's origin). Thin: each calls
``annotation.actions.work`` / ``annotation.actions.forms`` and renders. The task itself is never rendered here:
these pages embed its sandboxed frame (``frame_views``)."""

import functools

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from . import work_forms
from .actions import ActionError, work
from .actions import forms as actions
from .models import Assignment, AssignmentStatus, Batch, BatchKind
from .views.page_errors import action_errors

HISTORY_PAGE = 50


def app_csp(view):
    """The app pages that embed task frames get a strict CSP of their own: only our scripts run here."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        response.setdefault("Content-Security-Policy", actions.app_page_csp())
        return response

    return wrapped


def auto_accept(request) -> bool:
    return request.session.get("form_auto_accept", settings.FORM_AUTO_ACCEPT_DEFAULT)


@login_required
@require_GET
@action_errors
def work_index(request):
    """Your assignments in progress, the batches with work for you (and how much), your submitted work, and the
    batches you manage."""
    return render(request, "work/index.html", index_context(request.user, request.GET.get("page")))


def index_context(user, page=None) -> dict:
    now = timezone.now()
    workable = work.open_for_work(work.workable_batches(user, Batch.objects.forms())).select_related("project")
    counts = work.available_counts(user, workable)
    mine = Assignment.objects.filter(worker=user, task__batch__kind=BatchKind.FORM).select_related(
        "task__batch__project"
    )
    submitted = mine.filter(status=AssignmentStatus.SUBMITTED).order_by("-submitted_at", "-pk")
    return {
        "active": list(mine.filter(status=AssignmentStatus.ACTIVE, expires_at__gt=now).order_by("expires_at")),
        "batches": [(batch, counts[batch.pk]) for batch in workable.order_by("-created_at") if counts.get(batch.pk)],
        "history": Paginator(submitted, HISTORY_PAGE).get_page(page),
        "managed": managed_batches(user),
    }


def managed_batches(user) -> list:
    projects = work.managed_projects(user)
    return list(
        Batch.objects.forms()
        .filter(project__in=projects)
        .select_related("project")
        .annotate(task_count=Count("tasks"), done=Count("tasks", filter=Q(tasks__completed=True)))
        .order_by("-created_at")[:100]
    )


@login_required
@require_POST
@action_errors
def batch_accept(request, batch_id: int):
    """Accept the batch's next task (or resume yours); back to the work page when none is left. Another project's
    batch is the 404 page and one you may not work on the 403 page; a closed batch is a message on the work page."""
    batch = work.check_batch_for_work(request.user, batch_id)
    try:
        work.queue.check_open(batch)
        assignment = work.do_accept_next(request.user, batch)
    except ActionError as error:
        messages.error(request, error.detail)
        return redirect("work-index")
    if assignment is None:
        messages.info(request, f"No more tasks for you in {batch.name!r}.")
        return redirect("work-index")
    return redirect("work-assignment", assignment_id=assignment.pk)


@login_required
@require_GET
@action_errors
def batch_preview(request, batch_id: int):
    """Preview the next task you would get (Turkle's preview of the next task)."""
    batch = work.check_batch_for_work(request.user, batch_id)
    task = work.queue.open_tasks(batch, request.user).order_by("index").first()
    if task is None:
        messages.info(request, f"No more tasks for you in {batch.name!r}.")
        return redirect("work-index")
    return redirect("work-task-preview", task_id=task.pk)


@app_csp
@login_required
@require_GET
@action_errors
def task_preview(request, task_id: int):
    """A task's preview in its sandboxed frame, with Accept when you may take it."""
    task = work.check_task_previewable(request.user, task_id)
    batch = task.batch
    context = {
        "batch": batch,
        "task": task,
        "frame_url": actions.preview_url(task),
        "can_accept": batch.is_open and work.can_work_on(request.user, batch),
    }
    return render(request, "work/preview.html", context)


@login_required
@require_POST
@action_errors
def task_accept(request, task_id: int):
    """Accept the previewed task."""
    task = work.check_task_previewable(request.user, task_id)
    try:
        work.check_batch_accept(request.user, task.batch_id)
        assignment = work.do_accept_task(request.user, task)
    except ActionError as error:
        messages.error(request, error.detail)
        return redirect("work-index")
    return redirect("work-assignment", assignment_id=assignment.pk)


@app_csp
@login_required
@require_GET
@action_errors
def assignment_page(request, assignment_id: int):
    """The worker's page of one assignment: instructions, countdown, the task frame, Skip and Return; once
    submitted, the work read-only."""
    assignment = work.check_assignment_of(request.user, assignment_id)
    if assignment.is_active and timezone.now() >= assignment.expires_at:
        work.do_expire(assignment.pk)
        assignment.refresh_from_db()
    batch = assignment.task.batch
    frame_url = ""
    if assignment.is_active:
        frame_url = actions.work_frame_url(assignment)
    elif assignment.status == AssignmentStatus.SUBMITTED:
        frame_url = actions.view_url(assignment)
    context = {
        "assignment": assignment,
        "batch": batch,
        "task": assignment.task,
        "frame_url": frame_url,
        "auto_accept": auto_accept(request),
        "answers": sorted(assignment.answers.items()),
        "can_accept": batch.is_open and work.can_work_on(request.user, batch),
    }
    return render(request, "work/assignment.html", context)


def state_of(assignment: Assignment) -> dict:
    seconds_left = max(0, int((assignment.expires_at - timezone.now()).total_seconds()))
    return {
        "id": assignment.pk,
        "status": assignment.status,
        "expires_at": assignment.expires_at.isoformat(),
        "seconds_left": seconds_left if assignment.is_active else 0,
        "batch_open": assignment.task.batch.is_open,
    }


@login_required
@require_GET
@action_errors
def assignment_state(request, assignment_id: int):
    """``GET``: the assignment's status; its page polls it (and asks when the frame says it submitted)."""
    assignment = work.check_assignment_of(request.user, assignment_id)
    if assignment.is_active and timezone.now() >= assignment.expires_at:
        work.do_expire(assignment.pk)
        assignment.refresh_from_db()
    response = JsonResponse(state_of(assignment))
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
@action_errors
def assignment_skip(request, assignment_id: int):
    """Skip: give this task back and take the batch's next one (the skipped one comes last for you)."""
    assignment = work.check_assignment_of(request.user, assignment_id)
    try:
        following = work.do_skip(assignment)
    except ActionError as error:
        messages.error(request, error.detail)
        return redirect("work-assignment", assignment_id=assignment.pk)
    if following is None:
        messages.info(request, f"Skipped. No other task is left for you in {assignment.task.batch.name!r}.")
        return redirect("work-index")
    return redirect("work-assignment", assignment_id=following.pk)


@login_required
@require_POST
@action_errors
def assignment_return(request, assignment_id: int):
    """Return: give the task back unanswered and go back to the work page."""
    assignment = work.check_assignment_of(request.user, assignment_id)
    try:
        work.do_return(assignment)
    except ActionError as error:
        messages.error(request, error.detail)
        return redirect("work-assignment", assignment_id=assignment.pk)
    messages.info(request, f"Returned task {assignment.task.index + 1} of {assignment.task.batch.name!r}.")
    return redirect("work-index")


@login_required
@require_POST
def set_auto_accept(request):
    """Switch Submit & next on or off for this session (``on=1`` / ``on=0``)."""
    request.session["form_auto_accept"] = request.POST.get("on") == "1"
    return JsonResponse({"auto_accept": request.session["form_auto_accept"]})


@app_csp
@login_required
@require_http_methods(["GET", "POST"])
@action_errors
def batch_new(request):
    """Upload a batch Turkle/MTurk style: a project, a name, the HTML template and the CSV of inputs."""
    form = work_forms.BatchUploadForm(request.user, request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            batch, notes = work_forms.create_batch(request.user, form)
        except ActionError as error:
            form.add_action_error(error)
        else:
            messages.success(request, f"Created batch {batch.name!r} with {batch.tasks.count()} tasks.")
            for note in notes:
                messages.warning(request, note)
            return redirect("work-batch", batch_id=batch.pk)
    status = 413 if form.too_large else 400 if form.errors else 200
    context = {
        "form": form,
        "template_limit": settings.FORM_TEMPLATE_MAX_BYTES,
        "csv_limit": settings.FORM_CSV_MAX_BYTES,
    }
    return render(request, "work/batch_new.html", context, status=status)


@app_csp
@login_required
@require_GET
@action_errors
def batch_detail(request, batch_id: int):
    """A batch's progress and time (Turkle's statistics), its settings, and the results download."""
    batch = work.check_batch_stats(request.user, batch_id)
    first = batch.tasks.order_by("index").first()
    context = {
        "batch": batch,
        "stats": work.batch_stats(batch),
        "can_manage": work.can_manage(request.user, batch),
        "preview_url": reverse("work-task-preview", args=[first.pk]) if first else "",
    }
    return render(request, "work/batch.html", context)


@login_required
@require_GET
@action_errors
def batch_results(request, batch_id: int):
    """The Turkle results CSV of the batch, as a download."""
    return results_response(work.check_batch_manageable(request.user, batch_id))


def results_response(batch) -> StreamingHttpResponse:
    response = StreamingHttpResponse(actions.results_csv_lines(batch), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(True, actions.results_filename(batch))
    response["X-Content-Type-Options"] = "nosniff"
    return response
