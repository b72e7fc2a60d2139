"""Requester review of form work (MTurk's semantics): each submitted assignment is approved or rejected, with
feedback the worker sees in their history; one by one, in bulk, by filter, by uploading the results CSV back, or
automatically after the batch's delay (Celery beat). A rejected assignment can be reopened: its slot goes back to
the queue for another worker.

The review is a state beside the assignment's status (``Assignment.review``: pending → approved | rejected), so the
queue's status machine is untouched. A reopened assignment keeps its status ``submitted`` (and its answers) but no
longer holds its task's slot: ``Task.taken`` and ``Task.submitted`` go down by one and the task is open again.
Every change is recorded in the assignment's trail (``trail.record``) and can be undone for a while (``trail``).
A decision by filter can be pinned to the rows a confirmation counted (``pending_selection``: their digest).

Refusals: another project's work is 404, a worker's role 403, work that is not submitted 409, a decision against one
already taken (approve what was rejected) 409; the uploaded CSV is all-or-nothing, its problems a 400 naming rows.
"""

import csv
import datetime as dt
import hashlib
import io

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, Q
from django.utils import timezone

from ...lib import agreement as lib
from ...lib import spreadsheet
from ...models import Assignment, AssignmentStatus, Batch, BatchKind, Decision, Project, ReviewState, Task
from ..errors import Conflict, Forbidden, NotFound, TooLarge, ValidationFailed, invalid
from ..forms.access import MANAGE_ROLES
from ..forms.figures import figures_changed, pairs_filter, worker_gold
from ..forms.queue import refresh_batch_completion
from .trail import check_not_own, record

DECISIONS = {"approve": ReviewState.APPROVED, "reject": ReviewState.REJECTED}
FEEDBACK_MAX = 2000


def review_queryset():
    submitted = Assignment.objects.filter(task__batch__kind=BatchKind.FORM, status=AssignmentStatus.SUBMITTED)
    return submitted.select_related("task__batch__project", "worker", "reviewed_by")


def with_worker_gold(assignments: list[Assignment]) -> list[Assignment]:
    """The assignments, each with its worker's gold accuracy in its batch (``worker_gold``, None before their first
    gold answer) and how many gold answers it is over (``worker_gold_answers``): the one figure
    (``forms.figures.worker_gold``), one query for them all."""
    assignments = list(assignments)
    batches = {a.task.batch_id for a in assignments}
    figures = worker_gold(sorted(batches), sorted({a.worker_id for a in assignments})) if assignments else {}
    for a in assignments:
        a.worker_gold, a.worker_gold_answers = figures.get((a.task.batch_id, a.worker_id), (None, 0))
    return assignments


def review_rows(batch: Batch, assignments) -> list[Assignment]:
    """The review page's rows of ``batch``: each with its worker's gold accuracy (``with_worker_gold``, and
    ``worker_gold_shown``, as every page writes it), its own gold score so written (``gold_score_shown``) and the
    answers worth showing (``shown_answers``: answer fields only, hidden inputs, MTurk's parameters and blanks left
    out; the results CSV keeps every column)."""
    controls = lib.template_controls(batch.html_template)
    rows = with_worker_gold(assignments)
    for a in rows:
        a.shown_answers = lib.shown_answers(controls, a.answers)
        a.worker_gold_shown = None if a.worker_gold is None else lib.percent(a.worker_gold)
        a.gold_score_shown = None if a.gold_score is None else lib.percent(a.gold_score)
    return rows


def changed_batches(assignment_ids) -> list[int]:
    """The batches of these assignments (their figures change with a decision)."""
    return list(Assignment.objects.filter(pk__in=assignment_ids).values_list("task__batch_id", flat=True).distinct())


def check_reviewable(user, assignment_ids) -> list[Assignment]:
    """The submitted form assignments ``assignment_ids`` that ``user`` may decide on: 404 for any outside their
    projects, 403 when their role cannot manage batches, 409 for work not submitted."""
    ids = list(dict.fromkeys(assignment_ids))
    rows = Assignment.objects.filter(
        pk__in=ids, task__batch__kind=BatchKind.FORM, task__batch__project__in=Project.objects.for_user(user)
    )
    found = {a.pk: a for a in rows.select_related("task__batch__project")}
    missing = [pk for pk in ids if pk not in found]
    if missing:
        raise NotFound(
            f"no assignment {', '.join(map(str, missing))} among your projects",
            [{"field": "assignments", "message": f"{pk}: not found"} for pk in missing],
        )
    for assignment in found.values():
        if not assignment.task.batch.project.has_role(user, MANAGE_ROLES):
            raise Forbidden(
                f"your role in {assignment.task.batch.project.name!r} cannot review work (needs researcher or admin)"
            )
    for assignment in found.values():
        if assignment.status != AssignmentStatus.SUBMITTED:
            raise Conflict(f"assignment {assignment.pk} is {assignment.status}, not submitted: nothing to review")
    return [found[pk] for pk in ids]


def decidable(rows, user):
    """``rows`` without ``user``'s own work (``check_not_own``)."""
    return rows if user.is_superuser else rows.exclude(worker_id=user.pk)


def check_decision(decision, feedback) -> tuple[str, str]:
    """``(review state, feedback)``; a rejection needs a reason (the worker sees it)."""
    if decision not in DECISIONS:
        raise invalid("decision", f"expected one of {', '.join(DECISIONS)}")
    feedback = (feedback or "").strip() if isinstance(feedback, str | type(None)) else None
    if feedback is None:
        raise invalid("feedback", "expected text")
    if len(feedback) > FEEDBACK_MAX:
        raise invalid("feedback", f"at most {FEEDBACK_MAX} characters")
    if decision == "reject" and not feedback:
        raise invalid("feedback", "a rejection needs a reason: the worker sees it")
    return DECISIONS[decision], feedback


def check_unit_ratio(field: str, value, allow_none=False) -> float | None:
    """A number in [0, 1] (a rate, threshold or score), or a 400 naming ``field``."""
    if value is None or value == "":
        if allow_none:
            return None
        raise invalid(field, "required")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise invalid(field, "expected a number between 0 and 1") from None
    if isinstance(value, bool) or not 0 <= number <= 1:
        raise invalid(field, "expected a number between 0 and 1")
    return number


def decide(assignment: Assignment, state: str, feedback: str, user, now, kind=Decision.Kind.MANUAL) -> bool:
    """Apply one decision to a locked assignment and record it in its trail; False when it was already so, 409 when
    decided otherwise."""
    if assignment.review == state:
        return False
    if assignment.review != ReviewState.PENDING:
        raise Conflict(f"assignment {assignment.pk} is already {assignment.review}; its decision stands")
    assignment.review, assignment.feedback = state, feedback
    assignment.reviewed_at, assignment.reviewed_by = now, user
    assignment.save(update_fields=["review", "feedback", "reviewed_at", "reviewed_by"])
    record(assignment, kind, ReviewState.PENDING, state, user, now, feedback)
    return True


def do_decide(user, assignments: list[Assignment], decision: str, feedback: str = "", now=None) -> int:
    """Approve or reject ``assignments`` (checked by ``check_reviewable``), all or none; returns how many changed.
    One assignment is a ``manual`` decision in the trail, several a ``bulk`` one."""
    state, feedback = check_decision(decision, feedback)
    check_not_own(user, assignments)
    now = now or timezone.now()
    kind = Decision.Kind.MANUAL if len(assignments) == 1 else Decision.Kind.BULK
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().filter(pk__in=[a.pk for a in assignments]).order_by("pk")
        changed = sum(decide(a, state, feedback, user, now, kind) for a in locked)
        figures_changed(*changed_batches([a.pk for a in assignments]))
    return changed


def reviewable_by(user):
    """Submitted form work of the projects where ``user`` reviews (researchers, admins)."""
    return review_queryset().filter(task__batch__project__in=Project.objects.for_user(user, MANAGE_ROLES))


def filtered(rows, worker=None, review=None, flagged=None, gold_below=None, gold_at_least=None):
    """Submitted work (``rows``) narrowed by worker (username), review state, flagged or not, and the worker's gold
    accuracy in the batch (below / at least a value in [0, 1]); bad values are a 400 naming the filter."""
    if worker:
        if not isinstance(worker, str) or "\x00" in worker or len(worker) > 150:
            raise invalid("worker", "expected a username")
        rows = rows.filter(worker__username=worker)
    if review:
        if review not in ReviewState.values:
            raise invalid("review", f"expected one of {', '.join(ReviewState.values)}")
        rows = rows.filter(review=review)
    if flagged not in (None, ""):
        if str(flagged).lower() not in ("true", "false", "1", "0"):
            raise invalid("flagged", "expected true or false")
        on = str(flagged).lower() in ("true", "1")
        rows = rows.exclude(flagged="") if on else rows.filter(flagged="")
    below = check_unit_ratio("gold_below", gold_below, allow_none=True)
    at_least = check_unit_ratio("gold_at_least", gold_at_least, allow_none=True)
    if below is not None or at_least is not None:
        rows = by_gold_accuracy(rows, below, at_least)
    return rows.order_by("task__index", "pk")


def by_gold_accuracy(rows, below: float | None, at_least: float | None):
    """``rows`` of the workers whose gold accuracy in the row's batch (the one figure) is below / at least these
    values; a worker with no gold answer yet has no accuracy, so neither filter selects them."""
    figures = worker_gold(rows.values("task__batch_id"))
    chosen = [
        pair
        for pair, (accuracy, _) in figures.items()
        if accuracy is not None and (below is None or accuracy < below) and (at_least is None or accuracy >= at_least)
    ]
    found = pairs_filter(chosen)
    return rows.none() if found is None else rows.filter(found)


def digest(ids) -> str:
    """A short fingerprint of a set of assignment ids: what a confirmation counted."""
    text = ",".join(map(str, sorted(ids)))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def pending_selection(rows, user) -> tuple[list[int], str]:
    """``(ids, digest)`` of the pending work among ``rows`` (a ``filtered`` queryset) that ``user`` may decide on
    (not their own): what a bulk decision by filter would change, to count in its confirmation and to check when
    confirmed."""
    ids = sorted(decidable(rows, user).filter(review=ReviewState.PENDING).values_list("pk", flat=True))
    return ids, digest(ids)


def check_selection(selection) -> str | None:
    """A digest a confirmation carried (None: no confirmation asked), or a 400 naming ``selection``."""
    if selection in (None, ""):
        return None
    if not isinstance(selection, str) or len(selection) != 24 or not all(c in "0123456789abcdef" for c in selection):
        raise invalid("selection", "expected the selection digest the confirmation gave")
    return selection


def do_decide_filtered(user, rows, decision: str, feedback: str = "", now=None, selection=None) -> int:
    """Decide on the pending work among ``rows`` (a ``filtered`` queryset) but ``user``'s own; work already decided
    is left alone.
    ``selection``: the digest the confirmation counted (``pending_selection``); when the pending rows are no longer
    those, nothing changes and it is a 409 saying how many the filter selects now."""
    state, feedback = check_decision(decision, feedback)
    now = now or timezone.now()
    with transaction.atomic():
        candidates = decidable(rows, user).filter(review=ReviewState.PENDING).values_list("pk", flat=True)
        pending = list(Assignment.objects.select_for_update().filter(pk__in=list(candidates)).order_by("pk"))
        pending = [a for a in pending if a.review == ReviewState.PENDING]
        ids = [a.pk for a in pending]
        if selection is not None and digest(ids) != selection:
            raise Conflict(
                f"the selection changed since it was confirmed: the filter now selects {len(ids)} pending "
                f"row{'s' if len(ids) != 1 else ''}; nothing was decided, confirm again",
                [{"field": "selection", "message": f"now {len(ids)} rows ({digest(ids)})"}],
            )
        changed = sum(decide(a, state, feedback, user, now, Decision.Kind.BULK) for a in pending)
        figures_changed(*changed_batches(ids))
    return changed


def do_reopen(user, assignment: Assignment, now=None) -> Assignment:
    """Give a rejected assignment's slot back to the queue: another worker takes it (the rejected worker cannot)."""
    check_not_own(user, [assignment])
    now = now or timezone.now()
    with transaction.atomic():
        assignment = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if assignment.review != ReviewState.REJECTED:
            raise Conflict(f"assignment {assignment.pk} is {assignment.review}: only rejected work can be reopened")
        if assignment.reopened_at is not None:
            raise Conflict(f"assignment {assignment.pk} was already reopened")
        assignment.reopened_at = now
        assignment.save(update_fields=["reopened_at"])
        record(assignment, Decision.Kind.REOPEN, assignment.review, assignment.review, user, now)
        task = Task.objects.select_for_update().select_related("batch").get(pk=assignment.task_id)
        task.taken, task.submitted = task.taken - 1, task.submitted - 1
        was_completed, task.completed = task.completed, task.submitted >= task.batch.assignments_per_task
        task.save(update_fields=["taken", "submitted", "completed"])
        if was_completed and not task.completed:  # the batch's counter of complete tasks (forms.stats)
            Batch.objects.filter(pk=task.batch_id).update(tasks_done=F("tasks_done") - 1)
            task.batch.refresh_from_db(fields=["tasks_done"])
        refresh_batch_completion(task.batch)
        figures_changed(task.batch_id)
    return assignment


def do_auto_approve_due(now=None) -> int:
    """Approve submitted work not reviewed within its batch's delay (Celery beat), each an ``auto`` entry in its
    trail; flagged work, and work whose decision a person undid, waits for a person."""
    now = now or timezone.now()
    approved = 0
    batches = Batch.objects.filter(kind=BatchKind.FORM, auto_approve_seconds__isnull=False)
    undone = Decision.objects.filter(assignment=OuterRef("pk"), kind=Decision.Kind.UNDO)
    for batch_id, delay in batches.values_list("pk", "auto_approve_seconds"):
        due = Assignment.objects.filter(
            task__batch=batch_id,
            status=AssignmentStatus.SUBMITTED,
            review=ReviewState.PENDING,
            flagged="",
            submitted_at__lte=now - dt.timedelta(seconds=delay),
        ).exclude(Exists(undone))
        with transaction.atomic():
            ids = list(due.select_for_update(skip_locked=True, of=("self",)).values_list("pk", flat=True))
            done = Assignment.objects.filter(pk__in=ids, review=ReviewState.PENDING).update(
                review=ReviewState.APPROVED, reviewed_at=now, reviewed_by=None
            )
            Decision.objects.bulk_create(
                Decision(
                    assignment_id=pk,
                    kind=Decision.Kind.AUTO,
                    from_state=ReviewState.PENDING,
                    to_state=ReviewState.APPROVED,
                    at=now,
                )
                for pk in ids
            )
            if done:
                figures_changed(batch_id)
        approved += done
    return approved


# --- Decisions uploaded as the results CSV ------------------------------------------------------------------


def read_decisions(data: bytes) -> list[tuple[int, dict]]:
    """``[(row number, row)]`` of an uploaded results CSV (row 1 is the first after the header), its cells as the
    results CSV had them before their formula escaping (``annotation.lib.spreadsheet``: ``'=x`` reads ``=x``)."""
    limit = settings.FORM_CSV_MAX_BYTES
    if len(data) > limit:
        raise TooLarge(
            f"csv: {len(data)} bytes is over the limit of {limit} bytes (FORM_CSV_MAX_BYTES)",
            [{"field": "csv", "message": "too large"}],
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise invalid("csv", "is not UTF-8 text") from None
    if "\x00" in text:
        raise invalid("csv", "contains a NUL character")
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = reader.fieldnames = spreadsheet.unescape_row(reader.fieldnames or [])
        missing = [c for c in ("AssignmentId", "Approve", "Reject") if c not in header]
        if missing:
            raise invalid("csv", f"the header has no {', '.join(missing)} column (upload the results CSV back)")
        return [(number, unescaped(row)) for number, row in enumerate(reader, start=1)]
    except csv.Error as error:
        raise invalid("csv", f"is not a readable CSV: {error}") from None


def unescaped(row: dict) -> dict:
    """A row of ``csv.DictReader`` with its cells unescaped (a short row's missing cells are None)."""
    return {key: spreadsheet.unescape_cell(value) if isinstance(value, str) else value for key, value in row.items()}


def planned_decisions(batch: Batch, rows: list[tuple[int, dict]], user) -> tuple[list, list]:
    """``(plan, errors)``: plan is ``[(assignment id, state, feedback)]`` for the rows with a decision; a decision
    on ``user``'s own work is an error (``check_not_own``)."""
    submitted = Assignment.objects.filter(task__batch=batch, status=AssignmentStatus.SUBMITTED)
    known = dict(submitted.values_list("pk", "review"))
    own = set() if user.is_superuser else set(submitted.filter(worker_id=user.pk).values_list("pk", flat=True))
    plan, errors, seen = [], [], {}

    def error(number, message):
        errors.append({"field": f"csv row {number}", "message": message})

    for number, row in rows:
        approve, reject = (row.get("Approve") or "").strip(), (row.get("Reject") or "").strip()
        if not approve and not reject:
            continue
        raw_id = (row.get("AssignmentId") or "").strip()
        if approve and reject:
            error(number, f"assignment {raw_id or '?'}: both Approve and Reject are set; choose one")
            continue
        if approve and approve.lower() != "x":
            error(number, f"assignment {raw_id or '?'}: Approve takes x, not {approve[:40]!r}")
            continue
        if len(reject) > FEEDBACK_MAX:
            error(number, f"assignment {raw_id}: the Reject reason is over {FEEDBACK_MAX} characters")
            continue
        pk = int(raw_id) if raw_id.isdecimal() else None
        if pk not in known:
            error(number, f"unknown assignment {raw_id[:40]!r}: not a submitted assignment of batch {batch.name!r}")
            continue
        if pk in own:
            error(number, f"assignment {pk} is your own work: another researcher or admin decides on it")
            continue
        state = ReviewState.APPROVED if approve else ReviewState.REJECTED
        if known[pk] not in (ReviewState.PENDING, state):
            error(number, f"assignment {pk} is already {known[pk]}; it cannot be {state} now")
            continue
        if pk in seen and seen[pk][1] != state:
            error(number, f"assignment {pk} is decided otherwise on row {seen[pk][0]}")
            continue
        seen[pk] = (number, state)
        plan.append((pk, state, reject))
    return plan, errors


def do_apply_decisions_csv(user, batch: Batch, data: bytes, now=None) -> dict:
    """Apply the ``Approve`` (``x``) and ``Reject`` (a reason) columns of an uploaded results CSV: all the decisions,
    or none with a 400 naming every bad row. Returns ``{"approved", "rejected", "unchanged"}``."""
    plan, errors = planned_decisions(batch, read_decisions(data), user)
    if errors:
        shown = "; ".join(f"{e['field']}: {e['message']}" for e in errors[:5])
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise ValidationFailed(f"csv: nothing was applied: {shown}{more}", errors)
    now = now or timezone.now()
    counts = {"approved": 0, "rejected": 0, "unchanged": 0}
    with transaction.atomic():
        locked = {a.pk: a for a in Assignment.objects.select_for_update().filter(pk__in=[p[0] for p in plan])}
        for pk, state, feedback in plan:
            changed = decide(locked[pk], state, feedback, user, now, Decision.Kind.CSV)
            counts[state if changed else "unchanged"] += 1
        figures_changed(batch.pk)
    return counts


def review_counts(batch: Batch) -> dict:
    """Submitted work of the batch by review state, and how much is flagged."""
    rows = Assignment.objects.filter(task__batch=batch, status=AssignmentStatus.SUBMITTED)
    counts = rows.aggregate(
        **{state: Count("pk", filter=Q(review=state)) for state in ReviewState.values},
        flagged=Count("pk", filter=~Q(flagged="")),
        reopened=Count("pk", filter=Q(reopened_at__isnull=False)),
    )
    return counts
