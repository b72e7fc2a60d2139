"""Managing a batch (MTurk's and Turkle's requester pages): publish it after a checklist of its settings, unpublish,
pause and resume, extend its time, add assignments per task, edit its instructions; and reading it task by task
(each task with its assignments).

Who may: the researchers and admins of the batch's project (``access.check_batch_manageable``, called by the pages
and the API first). Pausing uses the batch's ``active`` flag: a paused batch hands out no new assignment (accept,
preview's Accept, Skip's next task), while the assignments already handed out may still be submitted, returned or
skipped until they expire.

Publishing (``published``) is what makes the batch exist for workers: an unpublished batch is on no worker's list
and hands out nothing; unpublishing it later stops handing out work like a pause, and the assignments already out
may still be submitted. A batch uploaded from the web starts unpublished, so its gold, blocking threshold and
qualifications are set before any work goes out (``publish_checklist`` lists what to check).

Every change locks the batch row; the assignments and tasks it changes are updated in the same transaction.
"""

import datetime as dt

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from ...models import Assignment, AssignmentStatus, Batch, Task
from ..errors import Conflict, invalid
from .queue import refresh_batch_completion

MAX_SECONDS = 2**31 - 1
MAX_EXTRA_ASSIGNMENTS = 1000
MAX_DESCRIPTION = 100_000
TASKS_PAGE = 50


def locked(batch: Batch) -> Batch:
    return Batch.objects.select_for_update().select_related("project").get(pk=batch.pk)


def do_pause(batch: Batch) -> Batch:
    """Stop handing out work; 409 when the batch is already paused."""
    with transaction.atomic():
        batch = locked(batch)
        if not batch.active:
            raise Conflict(f"batch {batch.name!r} is already paused")
        batch.active = False
        batch.save(update_fields=["active"])
    return batch


def do_resume(batch: Batch) -> Batch:
    """Hand out work again; 409 when the batch is not paused."""
    with transaction.atomic():
        batch = locked(batch)
        if batch.active:
            raise Conflict(f"batch {batch.name!r} is not paused")
        batch.active = True
        batch.save(update_fields=["active"])
    return batch


def do_publish(batch: Batch) -> Batch:
    """Workers see the batch and get its tasks; 409 when it is already published."""
    with transaction.atomic():
        batch = locked(batch)
        if batch.published:
            raise Conflict(f"batch {batch.name!r} is already published")
        batch.published = True
        batch.save(update_fields=["published"])
    return batch


def do_unpublish(batch: Batch) -> Batch:
    """Stop handing out work and take the batch off the workers' lists; the assignments already out may still be
    submitted. 409 when it is not published."""
    with transaction.atomic():
        batch = locked(batch)
        if not batch.published:
            raise Conflict(f"batch {batch.name!r} is not published")
        batch.published = False
        batch.save(update_fields=["published"])
    return batch


def minutes_text(seconds: int) -> str:
    minutes = seconds / 60
    text = f"{minutes:g} min" if minutes < 120 else f"{minutes / 60:g} h"
    return text if minutes < 2880 else f"{text} ({minutes / 1440:g} days)"


def publish_checklist(batch: Batch) -> list[dict]:
    """What to check before publishing, each ``{"item", "label", "value", "warning"}``: gold tasks and rate, the
    blocking threshold, required qualifications, assignments per task, time per assignment, auto-approval. A
    warning says when a setting has no effect as it stands (a rate with no gold task, a threshold with no gold
    served)."""
    gold_tasks = batch.tasks.filter(is_gold=True).count()
    requirements = [
        f"{r.qualification.name} ≥ {r.min_score:g}" for r in batch.requirements.select_related("qualification")
    ]
    auto = batch.auto_approve_seconds
    return [
        {"item": "gold", "label": "Gold tasks and gold rate", **gold_item(batch, gold_tasks)},
        {"item": "threshold", "label": "Blocking threshold", **threshold_item(batch, gold_tasks)},
        {
            "item": "requirements",
            "label": "Required qualifications",
            "value": ", ".join(requirements) or "none: every worker of the project may take its tasks",
            "warning": "",
        },
        {"item": "assignments", "label": "Assignments per task", "value": str(batch.assignments_per_task)},
        {"item": "time", "label": "Time per assignment", "value": minutes_text(batch.allotted_seconds)},
        {
            "item": "auto_approval",
            "label": "Auto-approval",
            "value": "never" if auto is None else f"work not reviewed within {minutes_text(auto)} is approved",
        },
    ]


def gold_item(batch: Batch, gold_tasks: int) -> dict:
    value = f"{gold_tasks} gold task{'s' * (gold_tasks != 1)}, rate {batch.gold_rate:.0%}"
    warning = ""
    if batch.gold_rate > 0 and not gold_tasks:
        warning = "the rate is set but no task is marked gold: no gold is served"
    elif gold_tasks and not batch.gold_rate:
        warning = "gold tasks are marked but the rate is 0: none is served"
    return {"value": value, "warning": warning}


def threshold_item(batch: Batch, gold_tasks: int) -> dict:
    if batch.gold_threshold is None:
        return {"value": "never block", "warning": ""}
    value = f"block below {batch.gold_threshold:.0%} gold accuracy after {batch.gold_min_answers} gold answers"
    serves = batch.gold_rate > 0 and gold_tasks > 0
    return {"value": value, "warning": "" if serves else "no gold is served, so nobody is blocked"}


def check_seconds(field: str, value, allow_zero=False):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(field, "must be a whole number of seconds")
    low = 0 if allow_zero else 1
    if not low <= value <= MAX_SECONDS:
        raise invalid(field, f"must be between {low} and {MAX_SECONDS} seconds")
    return value


def do_extend(batch: Batch, allotted_seconds=None, active_extra_seconds=None, now=None) -> dict:
    """Give more time: a new time per assignment for the assignments handed out from now on
    (``allotted_seconds``), and/or ``active_extra_seconds`` more for every active, unexpired assignment. Returns
    ``{"allotted_seconds", "extended"}`` (how many active assignments got more time). 400 naming the field for
    a bad value or when neither is given."""
    now = now or timezone.now()
    check_seconds("allotted_seconds", allotted_seconds)
    check_seconds("active_extra_seconds", active_extra_seconds)
    if allotted_seconds is None and not active_extra_seconds:
        raise invalid("allotted_seconds", "give a new time per assignment or more time for the active assignments")
    with transaction.atomic():
        batch = locked(batch)
        if allotted_seconds is not None:
            batch.allotted_seconds = allotted_seconds
            batch.save(update_fields=["allotted_seconds"])
        extended = 0
        if active_extra_seconds:
            active = Assignment.objects.filter(
                task__batch=batch, status=AssignmentStatus.ACTIVE, expires_at__gt=now
            ).select_for_update()
            extended = active.update(expires_at=F("expires_at") + dt.timedelta(seconds=active_extra_seconds))
    return {"allotted_seconds": batch.allotted_seconds, "extended": extended}


def do_add_assignments(batch: Batch, count) -> Batch:
    """``count`` more workers per task: raises ``assignments_per_task`` and re-decides which tasks (and so whether
    the batch) are complete, so completed tasks hand out their new slots."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_EXTRA_ASSIGNMENTS:
        raise invalid("count", f"must be a whole number from 1 to {MAX_EXTRA_ASSIGNMENTS}")
    with transaction.atomic():
        batch = locked(batch)
        batch.assignments_per_task += count
        batch.save(update_fields=["assignments_per_task"])
        opened = batch.tasks.filter(completed=True, submitted__lt=batch.assignments_per_task).update(completed=False)
        Batch.objects.filter(pk=batch.pk).update(tasks_done=F("tasks_done") - opened)  # the batch's counter
        batch.refresh_from_db(fields=["tasks_done"])
        refresh_batch_completion(batch)
    return batch


def do_edit_instructions(batch: Batch, description) -> Batch:
    """The instructions shown above the task (plain text; blank removes them)."""
    if not isinstance(description, str):
        raise invalid("description", "must be text")
    if len(description) > MAX_DESCRIPTION:
        raise invalid("description", f"must be at most {MAX_DESCRIPTION} characters")
    if "\x00" in description:
        raise invalid("description", "contains a NUL character")
    with transaction.atomic():
        batch = locked(batch)
        batch.description = description.strip()
        batch.save(update_fields=["description"])
    return batch


def task_rows(batch: Batch, tasks) -> list[dict]:
    """``[{"task", "assignments": [...]}]`` for a page of ``tasks`` (a list): two queries however many tasks and
    assignments (the page's tasks, then all their assignments with their workers)."""
    tasks = list(tasks)
    by_task = {task.pk: [] for task in tasks}
    assignments = (
        Assignment.objects.filter(task_id__in=list(by_task))
        .select_related("worker")
        .order_by("task_id", "accepted_at", "pk")
    )
    for assignment in assignments:
        by_task[assignment.task_id].append(assignment)
    return [{"task": task, "assignments": by_task[task.pk]} for task in tasks]


def batch_tasks(batch: Batch):
    """The batch's tasks in instance order (a queryset to paginate)."""
    return Task.objects.filter(batch=batch).order_by("index")


def tasks_page(batch: Batch, first: int, last: int):
    """Tasks ``first`` to ``last`` (1-based, as a page numbers them) of the batch, found by their ``index`` (0 to
    n − 1 in upload order) on the (batch, index) index: as fast on the last page of 100,000 tasks as on the first,
    where an OFFSET would step over every task before."""
    if last < first:
        return Task.objects.none()
    return batch_tasks(batch).filter(index__gte=first - 1, index__lt=last)


def state_of(batch: Batch) -> str:
    """One word for the batch's state, as the pages show it."""
    if batch.completed:
        return "completed"
    if not batch.published:
        return "unpublished"
    return "open" if batch.active else "paused"
