"""The decision trail of form work and undoing a decision (docs/quality.md, "Undo and the trail").

Every change of an assignment's review is a ``Decision`` row written in the same transaction as the change
(``record``): approve and reject (one by one, in bulk, by the results CSV), the automatic approval, a reopen, and an
undo. A manager of the batch (researcher, admin) undoes a decision within ``FORM_DECISION_UNDO_MINUTES`` of it, as
long as no later decision on the assignment stands (undo the later one first):

- an approval or a rejection: the review goes back to pending (feedback, reviewer and time cleared: the worker sees
  "not reviewed yet" again; the trail keeps what it said). Pay follows the review state where it is read (the pay
  page counts approved work only), so an undone approval earns nothing until approved again; gold scores, blocks
  and qualifications never depended on the decision and are left as they are. Work whose decision was undone is
  never approved automatically again: it waits for a person.
- a reopen: the assignment holds its task's slot again, if the slot is still free (409 once another worker took it).

An undo cannot itself be undone (decide again instead). Refusals: past the window, already undone, superseded by a
later decision, or a slot taken since: 409 saying which.
"""

import datetime as dt

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from ...models import Assignment, Batch, Decision, Task
from ..errors import Conflict, Forbidden, NotFound, invalid
from ..forms.figures import figures_changed
from ..forms.queue import refresh_batch_completion

REASON_MAX = 2000


def record(assignment, kind: str, from_state: str, to_state: str, by, at, feedback: str = "", undoes=None):
    """A trail entry for a change just made to ``assignment`` (inside its transaction)."""
    return Decision.objects.create(
        assignment=assignment,
        kind=kind,
        from_state=from_state,
        to_state=to_state,
        by=by,
        at=at,
        feedback=feedback,
        undoes=undoes,
    )


def undo_window() -> dt.timedelta:
    return dt.timedelta(minutes=settings.FORM_DECISION_UNDO_MINUTES)


def trail_of(assignment_ids) -> dict[int, list[Decision]]:
    """``{assignment id: [its decisions, oldest first]}``, each with ``undoable`` (an undo would be accepted now,
    by the window and the later decisions) and ``undone`` (it was undone)."""
    found: dict[int, list[Decision]] = {pk: [] for pk in assignment_ids}
    rows = Decision.objects.filter(assignment__in=list(found)).select_related("by", "undone_by").order_by("at", "pk")
    for entry in rows:
        found[entry.assignment_id].append(entry)
    now = timezone.now()
    for entries in found.values():
        for entry in entries:
            entry.undone = hasattr(entry, "undone_by")
            entry.undoable = refusal(entries, entry, now) is None
    return found


def standing(entries: list[Decision]) -> list[Decision]:
    """The decisions that stand: not undos, not undone."""
    undone = {e.undoes_id for e in entries if e.undoes_id}
    return [e for e in entries if e.kind != Decision.Kind.UNDO and e.pk not in undone]


def refusal(entries: list[Decision], target: Decision, now) -> str | None:
    """Why ``target`` cannot be undone now (None: it can)."""
    if target.kind == Decision.Kind.UNDO:
        return f"decision {target.pk} is an undo; it cannot be undone (decide again instead)"
    if target.pk not in {e.pk for e in standing(entries)}:
        return f"decision {target.pk} was already undone"
    if standing(entries)[-1].pk != target.pk:
        return f"decision {target.pk} was superseded by a later decision on assignment {target.assignment_id}"
    if now - target.at > undo_window():
        minutes = settings.FORM_DECISION_UNDO_MINUTES
        return f"decision {target.pk} is older than {minutes} minutes (FORM_DECISION_UNDO_MINUTES): it stands"
    return None


def check_undo_target(assignment: Assignment, decision=None) -> Decision:
    """The decision to undo: ``decision`` (an id of this assignment's trail), or its latest standing one; 400 for a
    malformed id, 404 for one not in its trail, 409 when it has no decision to undo."""
    entries = list(assignment.decisions.order_by("at", "pk"))
    if decision in (None, ""):
        stands = standing(entries)
        if not stands:
            raise Conflict(f"assignment {assignment.pk} has no decision to undo")
        return stands[-1]
    if isinstance(decision, bool) or not str(decision).isdecimal():
        raise invalid("decision", "expected the id of a decision in the assignment's trail")
    found = [e for e in entries if e.pk == int(decision)]
    if not found:
        raise NotFound(f"no decision {decision} in the trail of assignment {assignment.pk}")
    return found[0]


def check_reason(reason) -> str:
    if reason is not None and not isinstance(reason, str):
        raise invalid("reason", "expected text")
    reason = (reason or "").strip()
    if len(reason) > REASON_MAX or "\x00" in reason:
        raise invalid("reason", f"must be at most {REASON_MAX} characters of text")
    return reason


def check_not_own(user, assignments) -> None:
    """403 for a decision on one's own work: a researcher or admin who also works on a batch is reviewed by another
    (a site superuser excepted); bulk decisions by filter leave one's own rows out (``decidable``)."""
    own = [a.pk for a in assignments if a.worker_id == user.pk]
    if own and not user.is_superuser:
        raise Forbidden(
            f"assignment {', '.join(map(str, own))} is your own work: another researcher or admin of the project "
            "decides on it"
        )


def do_undo(user, assignment: Assignment, target: Decision, reason: str = "", now=None) -> Decision:
    """Undo ``target`` (``check_undo_target``) on ``assignment`` (``check_reviewable``); returns the undo's entry.
    Not on one's own work (``check_not_own``)."""
    check_not_own(user, [assignment])
    now = now or timezone.now()
    with transaction.atomic():
        assignment = Assignment.objects.select_for_update().get(pk=assignment.pk)
        entries = list(assignment.decisions.select_for_update().order_by("at", "pk"))
        target = next(e for e in entries if e.pk == target.pk)
        why = refusal(entries, target, now)
        if why:
            raise Conflict(f"cannot undo: {why}")
        if target.kind == Decision.Kind.REOPEN:
            take_slot_back(assignment)
        else:
            assignment.review, assignment.feedback = target.from_state, ""
            assignment.reviewed_at, assignment.reviewed_by = None, None
            assignment.save(update_fields=["review", "feedback", "reviewed_at", "reviewed_by"])
        undo = record(assignment, Decision.Kind.UNDO, target.to_state, target.from_state, user, now, reason, target)
        figures_changed(assignment.task.batch_id)
    return undo


def take_slot_back(assignment: Assignment) -> None:
    """Undo a reopen: the assignment holds its task's slot again (409 when another worker took it meanwhile)."""
    task = Task.objects.select_for_update().select_related("batch").get(pk=assignment.task_id)
    if task.taken >= task.batch.assignments_per_task:
        raise Conflict(
            f"cannot undo: the slot assignment {assignment.pk} gave back was taken by another worker; the reopen stands"
        )
    task.taken, task.submitted = task.taken + 1, task.submitted + 1
    was_completed, task.completed = task.completed, task.submitted >= task.batch.assignments_per_task
    task.save(update_fields=["taken", "submitted", "completed"])
    if task.completed and not was_completed:
        Batch.objects.filter(pk=task.batch_id).update(tasks_done=F("tasks_done") + 1)
        task.batch.refresh_from_db(fields=["tasks_done"])
    refresh_batch_completion(task.batch)
    assignment.reopened_at = None
    assignment.save(update_fields=["reopened_at"])


def trail_rows(assignment_id: int) -> list[dict]:
    """The trail as the API and the page show it, oldest first."""
    return [shown(e) for e in trail_of([assignment_id])[assignment_id]]


def shown(entry: Decision) -> dict:
    return {
        "id": entry.pk,
        "kind": entry.kind,
        "kind_label": entry.get_kind_display(),
        "from_state": entry.from_state,
        "to_state": entry.to_state,
        "by": entry.by.username if entry.by_id else None,
        "at": entry.at,
        "feedback": entry.feedback,
        "undoes": entry.undoes_id,
        "undone": entry.undone,
        "undoable": entry.undoable,
    }
