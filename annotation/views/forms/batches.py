"""The batch manager's pages (researchers and admins of the batch's project): the batch page's task table, one
assignment's page, and the batch's controls (publish after its checklist, unpublish, pause, resume, extend, add
assignments, instructions). Thin: each checks with ``annotation.actions.forms`` and calls one action.

A refusal for the role or the batch's state is the styled 403/404/409 page (``action_errors``); a bad value shows
the batch page again with the field's error next to its form (status 400), what was typed kept.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from ...actions import NotFound, ValidationFailed, forms
from ...actions.errors import invalid
from ...actions.forms import batches
from ...models import Assignment, BatchKind
from ..page_errors import action_errors, refusal_kept
from .pages import app_csp

MAX_MINUTES = 525_600  # a year


def batch_context(user, batch, page=None) -> dict:
    """What the batch page shows: progress, workers, the first task's preview to those who may preview it, and for
    its managers the controls and the task table."""
    first = batch.tasks.order_by("index").first() if forms.can_preview(user, batch) else None
    can_manage = forms.can_manage(user, batch)
    context = {
        "batch": batch,
        "state": batches.state_of(batch),
        "allotted_minutes": round(batch.allotted_seconds / 60, 1),
        "stats": forms.batch_stats(batch),
        "can_manage": can_manage,
        "preview_url": reverse("forms-task-preview", args=[first.pk]) if first else "",
        "errors": {},
        "typed": {},
    }
    if can_manage and not batch.published:
        context["checklist"] = [
            {**item, "href": checklist_link(batch, item["item"])} for item in batches.publish_checklist(batch)
        ]
    if can_manage:
        # the batch's task count is already in its statistics: counting 100,000 tasks once is enough
        paginator = Paginator(batches.batch_tasks(batch), batches.TASKS_PAGE)
        paginator.count = context["stats"]["tasks_total"]
        tasks = paginator.get_page(page)
        context["tasks"] = tasks
        rows = batches.task_rows(batch, batches.tasks_page(batch, tasks.start_index(), tasks.end_index()))
        context["table"] = task_table(batch, rows)
    return context


# Where each item of the publish checklist is set: the batch's review page (quality settings, gold) or this page.
CHECKLIST_LINKS = {
    "gold": ("quality-decisions", "gold-form"),
    "threshold": ("quality-decisions", "settings-form"),
    "requirements": ("quality-decisions", "settings-form"),
    "assignments": ("forms-batch", "add-form"),
    "time": ("forms-batch", "extend-form"),
    "auto_approval": ("quality-decisions", "settings-form"),
}


def checklist_link(batch, item: str) -> str:
    name, anchor = CHECKLIST_LINKS[item]
    return f"{reverse(name, args=[batch.pk])}#{anchor}"


def when(value) -> str:
    return timezone.localtime(value).strftime("%Y-%m-%d %H:%M") if value else "–"


def task_table(batch, rows) -> str:
    """The task table's rows (a task's first row carries its number and progress for all of its assignments),
    written here rather than by the template language: a page is 50 tasks × their workers, and this is the part
    of the page whose cost grows with them."""
    link = reverse("forms-batch-assignment", args=[0]).removesuffix("0/")
    per_task = batch.assignments_per_task
    lines = []
    for row in rows:
        task, assignments = row["task"], row["assignments"]
        number = task.index  # from 0, as the CSVs, the JSON and the API number tasks
        head = format_html(
            '<td rowspan="{}">{}</td><td rowspan="{}">{} / {}</td>',
            max(1, len(assignments)),
            number,
            max(1, len(assignments)),
            task.submitted,
            per_task,
        )
        if not assignments:
            lines.append(
                format_html(
                    '<tr data-task="{}" data-assignment="">{}<td colspan="6" class="muted">no assignment yet</td></tr>',
                    number,
                    head,
                )
            )
        for position, a in enumerate(assignments):
            answers = f"{len(a.answers)} field{'s' * (len(a.answers) != 1)}" if a.answers else "open"
            seconds = "–" if a.work_seconds is None else f"{a.work_seconds:.0f} s"
            lines.append(
                format_html(
                    '<tr data-task="{}" data-assignment="{}" data-worker="{}" data-status="{}">{}<td>{}</td>'
                    '<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><a href="{}{}/">{}</a></td></tr>',
                    number,
                    a.pk,
                    a.worker.username,
                    a.status,
                    head if position == 0 else "",
                    a.worker.username,
                    a.status,
                    when(a.accepted_at),
                    when(a.submitted_at),
                    seconds,
                    link,
                    a.pk,
                    answers,
                )
            )
    return mark_safe("\n".join(lines))  # noqa: S308 (every line is format_html's, its values escaped)


def render_batch(request, batch, status=200, errors=None):
    context = batch_context(request.user, batch, request.GET.get("page"))
    context["errors"] = errors or {}
    context["typed"] = request.POST.dict() if request.method == "POST" else {}
    return render(request, "forms/batch.html", context, status=status)


def minutes(request, field: str, required=False):
    """A whole number of minutes from the form, or None when left blank; 400 naming ``field`` otherwise."""
    text = (request.POST.get(field) or "").strip()
    if not text:
        if required:
            raise invalid(field, "is required")
        return None
    try:
        value = int(text)
    except ValueError:
        raise invalid(field, "must be a whole number of minutes") from None
    if not 1 <= value <= MAX_MINUTES:
        raise invalid(field, f"must be from 1 to {MAX_MINUTES} minutes")
    return value


def managed(view):
    """A manager's POST: the batch checked first; a bad value shows the batch page with the error (400)."""

    @login_required
    @require_POST
    @action_errors
    def wrapped(request, batch_id: int):
        batch = forms.check_batch_manageable(request.user, batch_id)
        with refusal_kept(ValidationFailed) as refusal:
            view(request, batch)
        if refusal:
            fields = {entry.get("field"): entry.get("message") for entry in refusal.error.errors}
            fields = fields or {"": refusal.detail}
            return render_batch(request, batch, status=400, errors={view.__name__: refusal.detail, **fields})
        return redirect(reverse("forms-batch", args=[batch.pk]) + "#manage")

    wrapped = app_csp(wrapped)

    wrapped.__name__ = wrapped.__qualname__ = view.__name__
    wrapped.__doc__ = view.__doc__
    return wrapped


@managed
def batch_publish(request, batch):
    """Publish: workers see the batch and get its tasks."""
    batches.do_publish(batch)
    messages.success(request, f"Published {batch.name!r}: workers of the project get its tasks.")


@managed
def batch_unpublish(request, batch):
    """Unpublish: workers no longer see the batch; assignments already out may still be submitted."""
    batches.do_unpublish(batch)
    messages.success(
        request, f"Unpublished {batch.name!r}: no new assignments; those already out may still be submitted."
    )


@managed
def batch_pause(request, batch):
    """Pause: no new assignments are handed out; those already out may still be submitted."""
    batches.do_pause(batch)
    messages.success(request, f"Paused {batch.name!r}: no new assignments are handed out.")


@managed
def batch_resume(request, batch):
    """Resume: hand out work again."""
    batches.do_resume(batch)
    messages.success(request, f"Resumed {batch.name!r}: workers get its tasks again.")


@managed
def batch_extend(request, batch):
    """A new time per assignment, and/or more time for every active assignment (both in minutes)."""
    allotted = minutes(request, "allotted_minutes")
    extra = minutes(request, "active_extra_minutes")
    if allotted is None and extra is None:
        raise invalid("allotted_minutes", "give a new time per assignment or more time for the active assignments")
    done = batches.do_extend(
        batch,
        allotted_seconds=None if allotted is None else allotted * 60,
        active_extra_seconds=None if extra is None else extra * 60,
    )
    parts = []
    if allotted is not None:
        parts.append(f"{allotted} min per assignment from now on")
    if extra is not None:
        parts.append(f"{extra} more min for {done['extended']} active assignment{'s' * (done['extended'] != 1)}")
    messages.success(request, f"Extended {batch.name!r}: {'; '.join(parts)}.")


@managed
def batch_add_assignments(request, batch):
    """More workers per task: completed tasks open again for the new slots."""
    text = (request.POST.get("count") or "").strip()
    try:
        count = int(text)
    except ValueError:
        raise invalid("count", "must be a whole number") from None
    batch = batches.do_add_assignments(batch, count)
    messages.success(request, f"{batch.name!r} now has {batch.assignments_per_task} assignments per task.")


@managed
def batch_instructions(request, batch):
    """Edit the instructions shown above the task."""
    batches.do_edit_instructions(batch, request.POST.get("description", ""))
    messages.success(request, f"Saved the instructions of {batch.name!r}.")


@app_csp
@login_required
@require_GET
@action_errors
def batch_detail(request, batch_id: int):
    """A batch's progress and time (Turkle's statistics), its settings; for its managers the results download, the
    controls and every task with its assignments (a page of tasks at a time)."""
    batch = forms.check_batch_stats(request.user, batch_id)
    return render_batch(request, batch)


@app_csp
@login_required
@require_GET
@action_errors
def batch_assignment(request, assignment_id: int):
    """One assignment as its batch's manager sees it: the task's inputs, the answers, the times and the worker."""
    assignment = (
        Assignment.objects.select_related("task__batch__project", "worker")
        .filter(pk=assignment_id, task__batch__kind=BatchKind.FORM)
        .first()
    )
    if assignment is None:
        raise NotFound(f"no assignment {assignment_id}")
    forms.check_batch_manageable(request.user, assignment.task.batch_id)
    task = assignment.task
    context = {
        "assignment": assignment,
        "task": task,
        "batch": task.batch,
        "inputs": [(column, task.inputs.get(column, "")) for column in task.batch.input_columns],
        "answers": sorted(assignment.answers.items()),
        "frame_url": forms.view_url(assignment) if assignment.status == "submitted" else "",
    }
    return render(request, "forms/batch_assignment.html", context)
