"""The worker's and the batch manager's pages (session + CSRF, the app's origin). Thin: each calls
``annotation.actions.forms`` and renders. The task itself is never rendered here: these pages embed its sandboxed
frame (``frames``)."""

import functools

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import F
from django.http import JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ...actions import Forbidden, forms
from ...models import Assignment, AssignmentStatus, Batch, BatchKind, Project
from ..page_errors import action_errors, refusal_kept, refusals_as_messages, refusals_on_form
from . import upload

HISTORY_PAGE = 50


def app_csp(view):
    """The app pages that embed task frames get a strict CSP of their own: only our scripts run here."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        response.setdefault("Content-Security-Policy", forms.app_page_csp())
        return response

    return wrapped


def auto_accept(request) -> bool:
    return request.session.get("form_auto_accept", settings.FORM_AUTO_ACCEPT_DEFAULT)


@login_required
@require_GET
@action_errors
def work_index(request):
    """Your assignments in progress, the batches with work for you (and how much), your submitted work, the
    batches you manage, and those whose progress and agreement you read (reviewers)."""
    return render(request, "forms/index.html", index_context(request.user, request.GET.get("page")))


def index_context(user, page=None) -> dict:
    now = timezone.now()
    workable = forms.open_for_work(forms.workable_batches(user, Batch.objects.forms())).select_related("project")
    counts = forms.available_counts(user, workable)
    mine = Assignment.objects.filter(worker=user, task__batch__kind=BatchKind.FORM).select_related(
        "task__batch__project"
    )
    submitted = mine.filter(status=AssignmentStatus.SUBMITTED).order_by("-submitted_at", "-pk")
    return {
        "active": list(mine.filter(status=AssignmentStatus.ACTIVE, expires_at__gt=now).order_by("expires_at")),
        "batches": [(batch, counts[batch.pk]) for batch in workable.order_by("-created_at") if counts.get(batch.pk)],
        "history": Paginator(submitted, HISTORY_PAGE).get_page(page),
        "blocked": forms.blocks_of(user),
        "unblocked": forms.unblocks_of(user),
        "managed": managed_batches(user),
        "can_upload": forms.managed_projects(user).exists(),
        "readable": read_batches(user),
    }


def batch_rows(projects) -> list:
    return list(
        Batch.objects.forms()
        .filter(project__in=projects)
        .select_related("project")
        .annotate(task_count=F("tasks_total"), done=F("tasks_done"))
        .order_by("-created_at")[:100]
    )


def managed_batches(user) -> list:
    return batch_rows(forms.managed_projects(user))


def read_batches(user) -> list:
    """Batches of the projects where ``user`` reads batches' progress and agreement without managing them."""
    return batch_rows(Project.objects.for_user(user, forms.STATS_ROLES).exclude(pk__in=forms.managed_projects(user)))


@login_required
@require_POST
@action_errors
def batch_accept(request, batch_id: int):
    """Accept the batch's next task (or resume yours); back to the work page when none is left. Another project's
    batch is the 404 page and one you may not work on the 403 page; a closed batch is a message on the work page.
    After a submission (Submit & next) that left you unable to take more (it blocked you), the submitted work's
    page confirms the submission and says why, instead of the 403 page."""
    submitted = own_submitted(request, request.POST.get("submitted"))
    with refusal_kept(Forbidden) as refusal:
        batch = forms.check_batch_for_work(request.user, batch_id)
    if refusal:
        if submitted is None:
            raise refusal.error
        return redirect(reverse("forms-assignment", args=[submitted.pk]) + "?submitted=1")
    confirm_submission(request, submitted)
    with refusals_as_messages(request) as refusal:
        forms.queue.check_open(batch)
        assignment = forms.do_accept_next(request.user, batch)
    if refusal:
        return redirect("forms-index")
    if assignment is None:
        messages.info(request, f"No more tasks for you in {batch.name!r}.")
        return redirect("forms-index")
    return redirect("forms-assignment", assignment_id=assignment.pk)


def own_submitted(request, assignment_id) -> Assignment | None:
    """The person's own submitted assignment of that id, or None."""
    if not (assignment_id or "").isdecimal():
        return None
    return (
        Assignment.objects.filter(pk=int(assignment_id), worker=request.user, status=AssignmentStatus.SUBMITTED)
        .select_related("task__batch")
        .first()
    )


def confirm_submission(request, assignment: Assignment | None) -> None:
    """The confirmation of a submission, shown on the page that follows it (Submit & next's next task, or the
    submitted work): only for the person's own submitted assignment."""
    if assignment is not None:
        task = assignment.task
        messages.success(request, f"Submitted task {task.index} of {task.batch.name!r}. Thank you!")


@login_required
@require_GET
@action_errors
def batch_preview(request, batch_id: int):
    """Preview the next task you would get (Turkle's preview of the next task)."""
    batch = forms.check_batch_for_work(request.user, batch_id)
    task = forms.next_task(batch, request.user, lock=False)
    if task is None:
        messages.info(request, f"No more tasks for you in {batch.name!r}.")
        return redirect("forms-index")
    return redirect("forms-task-preview", task_id=task.pk)


@app_csp
@login_required
@require_GET
@action_errors
def task_preview(request, task_id: int):
    """A task's preview in its sandboxed frame, with Accept when you may take it."""
    task = forms.check_task_previewable(request.user, task_id)
    batch = task.batch
    context = {
        "batch": batch,
        "task": task,
        "frame_url": forms.preview_url(task),
        "can_accept": batch.is_open and forms.can_work_on(request.user, batch),
        "queue_picks": forms.serves_gold(batch),
    }
    return render(request, "forms/preview.html", context)


@login_required
@require_POST
@action_errors
def task_accept(request, task_id: int):
    """Accept the previewed task (in a batch that serves gold, the queue's next task: workers do not pick)."""
    task = forms.check_task_previewable(request.user, task_id)
    with refusals_as_messages(request) as refusal:
        forms.check_batch_accept(request.user, task.batch_id)
        assignment = forms.do_accept_task(request.user, task)
    if refusal:
        return redirect("forms-index")
    if assignment.task_id != task.pk:
        messages.info(
            request,
            f"In {task.batch.name!r} the queue chooses each task: you got task {assignment.task.index + 1}, "
            "not the one you previewed.",
        )
    return redirect("forms-assignment", assignment_id=assignment.pk)


@app_csp
@login_required
@require_GET
@action_errors
def assignment_page(request, assignment_id: int):
    """The worker's page of one assignment: instructions, countdown, the task frame, Skip and Return; once
    submitted, the work read-only."""
    assignment = forms.check_assignment_of(request.user, assignment_id)
    if assignment.is_active and timezone.now() >= assignment.expires_at:
        forms.do_expire(assignment.pk)
        assignment.refresh_from_db()
    if forms.do_end_without_access(assignment) is not None:
        assignment.refresh_from_db()
    batch = assignment.task.batch
    if request.GET.get("submitted"):
        confirm_submission(request, own_submitted(request, str(assignment.pk)))
    stop = None if assignment.is_active else forms.why_no_more(request.user, batch)
    frame_url = ""
    if assignment.is_active:
        frame_url = forms.work_frame_url(assignment)
    elif assignment.status == AssignmentStatus.SUBMITTED:
        frame_url = forms.view_url(assignment)
    context = {
        "assignment": assignment,
        "batch": batch,
        "task": assignment.task,
        "frame_url": frame_url,
        "auto_accept": auto_accept(request),
        "answers": sorted(assignment.answers.items()),
        "can_accept": batch.is_open and not stop,
        "stop_reason": stop,
    }
    return render(request, "forms/assignment.html", context)


def state_of(assignment: Assignment) -> dict:
    """The assignment's state; once it ended, whether its worker may take the batch's next task (``batch_open``
    false, and ``stop_reason`` saying why, when this submission blocked them or their access ended)."""
    seconds_left = max(0, int((assignment.expires_at - timezone.now()).total_seconds()))
    batch = assignment.task.batch
    stop = None if assignment.is_active else forms.why_no_more(assignment.worker, batch)
    return {
        "id": assignment.pk,
        "status": assignment.status,
        "expires_at": assignment.expires_at.isoformat(),
        "seconds_left": seconds_left if assignment.is_active else 0,
        "batch_open": batch.is_open and stop is None,
        "stop_reason": stop,
        "ended_reason": assignment.ended_reason,
    }


@login_required
@require_GET
@action_errors
def assignment_state(request, assignment_id: int):
    """``GET``: the assignment's status; its page polls it (and asks when the frame says it submitted)."""
    assignment = forms.check_assignment_of(request.user, assignment_id)
    if assignment.is_active and timezone.now() >= assignment.expires_at:
        forms.do_expire(assignment.pk)
        assignment.refresh_from_db()
    response = JsonResponse(state_of(assignment))
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
@action_errors
def assignment_skip(request, assignment_id: int):
    """Skip: give this task back and take the batch's next one (the skipped one comes last for you)."""
    assignment = forms.check_assignment_of(request.user, assignment_id)
    with refusals_as_messages(request) as refusal:
        following = forms.do_skip(assignment)
    if refusal:
        return redirect("forms-assignment", assignment_id=assignment.pk)
    if following is None:
        messages.info(request, f"Skipped. No other task is left for you in {assignment.task.batch.name!r}.")
        return redirect("forms-index")
    return redirect("forms-assignment", assignment_id=following.pk)


@login_required
@require_POST
@action_errors
def assignment_return(request, assignment_id: int):
    """Return: give the task back unanswered and go back to the work page."""
    assignment = forms.check_assignment_of(request.user, assignment_id)
    with refusals_as_messages(request) as refusal:
        forms.do_return(assignment)
    if refusal:
        return redirect("forms-assignment", assignment_id=assignment.pk)
    messages.info(request, f"Returned task {assignment.task.index} of {assignment.task.batch.name!r}.")
    return redirect("forms-index")


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
    """Upload a batch Turkle/MTurk style: a project, a name, the HTML template and the CSV of inputs. Only for
    those who may create batches somewhere (a researcher or admin of a project): anyone else gets the 403 page."""
    if not forms.managed_projects(request.user).exists():
        raise Forbidden("you are not a researcher or admin of any project, so you cannot upload a batch")
    form = upload.BatchUploadForm(request.user, request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        with refusals_on_form(form):  # the upload form's own add_action_error (a 413 says so)
            batch, notes = upload.create_batch(request.user, form)
            # The import's notes are kept on the batch and its page lists them (#import-warnings): said here
            # too, they would show twice.
            noticed = f" The import noticed {len(notes)} thing(s), listed on the page." if notes else ""
            messages.success(
                request,
                f"Created batch {batch.name!r} with {batch.tasks_total} tasks. It is unpublished: check its settings "
                f"below, then publish it.{noticed}",
            )
            return redirect("forms-batch", batch_id=batch.pk)
    status = 413 if form.too_large else 400 if form.errors else 200
    context = {
        "form": form,
        "template_limit": settings.FORM_TEMPLATE_MAX_BYTES,
        "csv_limit": settings.FORM_CSV_MAX_BYTES,
    }
    return render(request, "forms/batch_new.html", context, status=status)


@login_required
@require_GET
@action_errors
def batch_results(request, batch_id: int):
    """The Turkle results CSV of the batch, as a download."""
    filename, lines = forms.results_download(forms.check_batch_manageable(request.user, batch_id))
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = content_disposition_header(True, filename)
    response["X-Content-Type-Options"] = "nosniff"
    return response
