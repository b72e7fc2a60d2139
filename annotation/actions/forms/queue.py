"""The work queue (Turkle's rules), independent of what a task is: what a worker may get next, and accepting,
submitting, skipping, returning and expiring assignments.

- A worker never holds the same task twice (an active or submitted assignment; a database constraint too).
- A task has ``assignments_per_task`` slots; an active or submitted assignment holds one (``Task.taken``).
  A task is complete when its submitted assignments reach that number; a batch when all its tasks are.
- Accepting locks the chosen task row (``SELECT ... FOR UPDATE SKIP LOCKED`` on PostgreSQL), so workers accepting
  at once never fill a slot twice and never wait on each other; on SQLite (``make run``) the transaction's
  write lock serialises them. Other changes lock the assignment, then its task: the same order everywhere.
- Tasks a worker skipped, returned or let expire come after the others in their queue (Turkle's skip order).
- Tasks come in index order, except in a batch that serves gold (``gold``): there the gold schedule says which kind
  comes next (the other kind when none of that kind is left), each kind in a keyed order per worker, and accepting a
  previewed task takes the queue's next one instead (workers cannot pick).
- Access ends when the grant ends: every accept, submission and skip asks ``access.check_grant`` again, whatever the
  path (page, API, task frame). A submission or skip refused there stores nothing and ends the assignment
  (returned, the reason kept in ``Assignment.ended_reason``, its slot back to the queue).
"""

import contextlib
import datetime as dt

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Exists, F, IntegerField, OuterRef, Subquery
from django.utils import timezone

from ...models import HOLDING_STATUSES, Assignment, AssignmentStatus, Batch, BatchKind, Task
from ..errors import Conflict, Forbidden, NotFound
from .access import check_batch_for_work, check_grant, open_for_work, workable_batches
from .figures import figures_changed, rescore_batch
from .gold import after_submission, gold_due, keyed_order, may_take, serves_gold


class AssignmentExpired(Conflict):
    """The assignment ran out of time; it was marked expired and nothing was stored."""

    status, code = 410, "expired"


class AccessEnded(Forbidden):
    """The worker may no longer work on the batch (``access.check_grant``); the assignment was returned and nothing
    was stored. ``reason`` is why, as the worker reads it."""

    code = "access_ended"

    def __init__(self, reason: str):
        super().__init__(f"Not accepted: {reason}. Nothing was stored, and the task went back to the queue.")
        self.reason = reason


def held_by(user):
    """A subquery: ``user`` holds (active or submitted) an assignment on the outer task."""
    return Exists(Assignment.objects.filter(task=OuterRef("pk"), worker=user, status__in=HOLDING_STATUSES))


def tried_by(user):
    """A subquery: ``user`` had any assignment on the outer task (skipped, returned, expired, ...)."""
    return Exists(Assignment.objects.filter(task=OuterRef("pk"), worker=user))


def open_tasks(batch: Batch, user):
    """The batch's tasks with a free slot that ``user`` does not already hold; none when ``user`` is blocked from
    the batch or lacks a qualification it requires (the pages and the API say why: ``access.check_batch_for_work``)."""
    tasks = batch.tasks.filter(completed=False, taken__lt=batch.assignments_per_task).exclude(held_by(user))
    return tasks.filter(may_take(user))


AVAILABLE_CAP = 1000  # tasks counted per batch for the work lists; more shows as "1000+"


class AtLeast(int):
    """A count that stopped at its cap: compares as the number, shows as ``1000+``."""

    def __str__(self):
        return f"{int(self)}+"


class CappedCount(Subquery):
    """How many rows the subquery (sliced to ``cap + 1``) gives: a count that stops early however big the table."""

    template = "(SELECT COUNT(*) FROM (%(subquery)s) capped)"
    output_field = IntegerField()


def available_counts(user, batches) -> dict:
    """``{batch id: tasks user could accept}`` for the open ``batches`` user may work on, each counted up to
    ``AVAILABLE_CAP`` (``AtLeast(AVAILABLE_CAP)`` beyond): one query, as quick for a batch of a million tasks as
    for one of ten."""
    batches = open_for_work(workable_batches(user, batches))
    open_for_user = (
        Task.objects.filter(batch=OuterRef("pk"), completed=False, taken__lt=OuterRef("assignments_per_task"))
        .exclude(held_by(user))
        .order_by()  # no sort (the model's default ordering) before the limit: it would read every task
        .values("pk")[: AVAILABLE_CAP + 1]
    )
    rows = batches.annotate(n=CappedCount(open_for_user)).values_list("pk", "n").order_by()
    return {pk: (AtLeast(AVAILABLE_CAP) if n > AVAILABLE_CAP else n) for pk, n in rows if n}


PROBE = 256  # places of a keyed order read per query
PROBE_ROUNDS = 4  # chunks read before the whole (by then small) pool is read and sorted


def next_task(batch: Batch, user, among=None, lock=True):
    """The next task for ``user`` (of the tasks ``among`` selects, a ``Q``, when given), locked unless ``lock`` is
    false (a preview of what they would get); tasks they tried before come last. None when there is none."""
    candidates = open_tasks(batch, user)
    if among is not None:
        candidates = candidates.filter(among)
    due = gold_due(batch, user)
    if due is None:
        return first_in_index_order(candidates, user, lock)
    order = keyed_order(batch, user)
    for kind in (due, not due):  # the kind the schedule says, else the other one
        task = first_in_keyed_order(candidates.filter(is_gold=kind), user, order, probe=not kind, lock=lock)
        if task is not None:
            return task
    return None


def first_in_index_order(candidates, user, lock: bool):
    if lock:
        candidates = candidates.select_for_update(skip_locked=True, of=("self",))
    return candidates.exclude(tried_by(user)).order_by("index").first() or candidates.order_by("index").first()


def first_in_keyed_order(candidates, user, order, probe: bool, lock: bool):
    """The first of ``candidates`` in ``order`` (tried ones last), locked; a row another accept holds is skipped."""
    for pool, big in ((candidates.exclude(tried_by(user)), probe), (candidates.filter(tried_by(user)), False)):
        for pk in in_keyed_order(pool, order, big):
            chosen = pool.filter(pk=pk)
            task = (chosen.select_for_update(skip_locked=True, of=("self",)) if lock else chosen).first()
            if task is not None:
                return task
    return None


def in_keyed_order(pool, order, big: bool):
    """The pks of ``pool`` in ``order``. A ``big`` pool (the regular tasks) is read from the order's first places a
    chunk at a time, so a fresh batch of a million tasks costs one query; when those places hold none of the pool,
    the pool is read whole (it is small by then) and sorted."""
    pool = pool.order_by()
    if big:
        for start in range(0, min(order.n, PROBE * PROBE_ROUNDS), PROBE):
            places = {order.at(place): place for place in range(start, min(start + PROBE, order.n))}
            found = pool.filter(index__in=list(places)).values_list("pk", "index")
            yield from (pk for pk, _ in sorted(found, key=lambda row: places[row[1]]))
        if order.n <= PROBE * PROBE_ROUNDS:
            return
    yield from (pk for pk, _ in sorted(pool.values_list("pk", "index"), key=lambda row: order.place(row[1])))


def active_assignment_in(batch: Batch, user, now):
    """The worker's oldest active, unexpired assignment in the batch (accepting again resumes it)."""
    return (
        Assignment.objects.filter(task__batch=batch, worker=user, status=AssignmentStatus.ACTIVE, expires_at__gt=now)
        .order_by("accepted_at", "pk")
        .first()
    )


def create_assignment(task: Task, user, now) -> Assignment:
    """Give ``task`` (locked by the caller) to ``user``; it holds one of the task's slots until it ends."""
    batch = task.batch
    assignment = Assignment.objects.create(
        task=task, worker=user, accepted_at=now, expires_at=now + dt.timedelta(seconds=batch.allotted_seconds)
    )
    Task.objects.filter(pk=task.pk).update(taken=F("taken") + 1)
    return assignment


def do_accept_next(user, batch: Batch, now=None, among=None) -> Assignment | None:
    """Accept the batch's next task for ``user`` (or resume their active one); None when none is left. ``among`` (a
    ``Q`` on tasks) narrows which tasks may be handed out. 403 saying why when ``user`` may not work on it."""
    now = now or timezone.now()
    check_open(batch)
    check_grant(user, batch)
    with transaction.atomic():
        # One accept at a time per worker (two tabs at once): the second one then resumes the first's assignment.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        current = active_assignment_in(batch, user, now)
        if current is not None:
            return current
        task = next_task(batch, user, among)
        return None if task is None else create_assignment(task, user, now)


def do_accept_task(user, task: Task, now=None) -> Assignment:
    """Accept this task (from its preview); 409 when it has no free slot for ``user`` any more. In a batch that
    serves gold, workers do not pick: this accepts the queue's next task, whichever one was previewed."""
    now = now or timezone.now()
    check_open(task.batch)
    if serves_gold(task.batch):
        assignment = do_accept_next(user, task.batch, now)
        if assignment is None:
            raise Conflict(f"no task of {task.batch.name!r} is left for you")
        return assignment
    check_grant(user, task.batch)
    try:
        with transaction.atomic():
            locked = open_tasks(task.batch, user).select_for_update(of=("self",)).filter(pk=task.pk).first()
            if locked is None:
                raise Conflict(f"task {task.index} of {task.batch.name!r} is no longer available to you")
            return create_assignment(locked, user, now)
    except IntegrityError:
        raise Conflict("you already hold this task") from None


def check_open(batch: Batch) -> None:
    if not batch.is_open:
        state = "completed" if batch.completed else "not published" if not batch.published else "paused"
        raise Conflict(f"batch {batch.name!r} is {state}; it hands out no work")


def locked_assignment(assignment_id) -> Assignment:
    """The assignment, locked (its row only), with its worker, task, batch and project."""
    found = Assignment.objects.select_related("worker", "task__batch__project").select_for_update(of=("self",))
    assignment = found.filter(pk=assignment_id).first()
    if assignment is None:
        raise NotFound(f"no assignment {assignment_id}")
    return assignment


def check_active(assignment: Assignment, now) -> None:
    """Refuse changes to an assignment that has ended; an overdue one is expired first (committed), then refused."""
    if assignment.status != AssignmentStatus.ACTIVE:
        if assignment.ended_reason:
            raise Conflict(f"assignment {assignment.pk} was taken back ({assignment.ended_reason}); nothing was stored")
        raise Conflict(f"assignment {assignment.pk} is already {assignment.status}; nothing was stored")
    if now >= assignment.expires_at:
        raise AssignmentExpired(f"assignment {assignment.pk} expired at {assignment.expires_at:%Y-%m-%d %H:%M:%S} UTC")


def check_still_granted(assignment: Assignment) -> None:
    """``AccessEnded`` when the assignment's worker may no longer work on its batch (``access.check_grant``)."""
    try:
        check_grant(assignment.worker, assignment.task.batch)
    except Forbidden as refusal:
        raise AccessEnded(refusal.detail) from None


def do_submit(assignment_id, answers: dict, now=None) -> Assignment:
    """Store the answers of an active assignment, once; completes its task (and batch) when it is the last one.

    A second submission (a replayed form) is a 409 and changes nothing; an overdue one is marked expired and
    refused (410); one whose worker may no longer work on the batch is returned and refused (403, ``AccessEnded``).
    """
    now = now or timezone.now()
    try:
        with transaction.atomic():
            assignment = locked_assignment(assignment_id)
            check_active(assignment, now)
            check_still_granted(assignment)
            assignment.status, assignment.answers = AssignmentStatus.SUBMITTED, answers
            assignment.submitted_at = assignment.ended_at = now
            assignment.work_seconds = max(0.0, (now - assignment.accepted_at).total_seconds())
            assignment.save(update_fields=["status", "answers", "submitted_at", "ended_at", "work_seconds"])
            task = count_submission(assignment.task_id)
            after_submission(assignment, task)
            figures_changed(task.batch_id)
            return assignment
    except AssignmentExpired:
        do_expire(assignment_id, now)
        raise
    except AccessEnded as refusal:
        release(assignment_id, AssignmentStatus.RETURNED, now, check=False, reason=refusal.reason)
        raise


def why_no_more(user, batch: Batch) -> str | None:
    """Why ``user`` can take no more tasks of ``batch`` (blocked, or their access ended), or None: what the pages
    say after a submission instead of handing out the next task."""
    try:
        check_grant(user, batch)
    except Forbidden as refusal:
        return refusal.detail
    return None


def do_end_without_access(assignment: Assignment, now=None) -> str | None:
    """End an active assignment whose worker may no longer work on its batch (returned, the reason kept): why, or
    None when they still may (or it had already ended). The task frame and the assignment page ask this on
    opening, so nobody fills in a task they can no longer submit."""
    if assignment.status != AssignmentStatus.ACTIVE:
        return None
    try:
        check_still_granted(assignment)
    except AccessEnded as refusal:
        now = now or timezone.now()
        ended = release(assignment.pk, AssignmentStatus.RETURNED, now, check=False, reason=refusal.reason)
        return None if ended is None else refusal.reason  # None: it ended meanwhile (submitted from another tab)
    return None


def do_submit_recording(assignment: Assignment | None, recording: str) -> None:
    """A finished recording submits the demonstration task it was made for (its ``recording`` is the answer), so the
    recordings actions need not know Mind2Web. An assignment that already ended, or of another kind of batch, is left
    as it is; too late (expired), or by someone who may no longer work on the batch, the task goes back to the queue
    and the recording is kept."""
    if assignment is None or assignment.status != AssignmentStatus.ACTIVE:
        return
    if assignment.task.batch.kind != BatchKind.DEMONSTRATION:
        return
    with contextlib.suppress(AssignmentExpired, AccessEnded):
        do_submit(assignment.pk, {"recording": recording})


def count_submission(task_id) -> Task:
    task = Task.objects.select_for_update().select_related("batch").get(pk=task_id)
    task.submitted += 1
    task.completed = task.submitted >= task.batch.assignments_per_task
    task.save(update_fields=["submitted", "completed"])
    if task.completed:
        Batch.objects.filter(pk=task.batch_id).update(tasks_done=F("tasks_done") + 1)
        refresh_batch_completion(task.batch)
    return task


def refresh_batch_completion(batch: Batch) -> None:
    completed = not batch.tasks.filter(completed=False).exists()
    if completed != batch.completed:
        Batch.objects.filter(pk=batch.pk).update(completed=completed)
        batch.completed = completed


def release(assignment_id, status: str, now, check=True, granted=False, reason="") -> Assignment | None:
    """End an active assignment without answers (returned, skipped or expired); frees its task's slot. ``check``:
    refuse one that has ended (else leave it); ``granted``: refuse (``AccessEnded``) when its worker may no longer
    work on the batch; ``reason``: why the platform ended it, kept for the worker."""
    with transaction.atomic():
        assignment = locked_assignment(assignment_id)
        if check:
            check_active(assignment, now)
        elif assignment.status != AssignmentStatus.ACTIVE:
            return None
        if granted:
            check_still_granted(assignment)
        assignment.status, assignment.ended_at, assignment.ended_reason = status, now, reason[:400]
        assignment.save(update_fields=["status", "ended_at", "ended_reason"])
        Task.objects.filter(pk=assignment.task_id).update(taken=F("taken") - 1)
        return assignment


def do_return(assignment: Assignment, now=None) -> Assignment:
    """The worker gives the task back unanswered; another worker (or they, later) may take it."""
    now = now or timezone.now()
    try:
        return release(assignment.pk, AssignmentStatus.RETURNED, now)
    except AssignmentExpired:
        do_expire(assignment.pk, now)
        raise


def do_skip(assignment: Assignment, now=None) -> Assignment | None:
    """Skip this task and accept the batch's next one (the skipped task comes last in this worker's queue).

    Returns the next assignment, or None when no other task is left. A worker who may no longer work on the batch
    gets ``AccessEnded`` (the assignment is returned, with the reason)."""
    now = now or timezone.now()
    try:
        release(assignment.pk, AssignmentStatus.SKIPPED, now, granted=True)
    except AssignmentExpired:
        do_expire(assignment.pk, now)
        raise
    except AccessEnded as refusal:
        release(assignment.pk, AssignmentStatus.RETURNED, now, check=False, reason=refusal.reason)
        raise
    batch = assignment.task.batch
    return do_accept_next(assignment.worker, batch, now) if batch.is_open else None


def do_expire(assignment_id, now=None) -> bool:
    """Mark an active assignment past its time as expired, freeing its slot; False when there was nothing to do."""
    now = now or timezone.now()
    with transaction.atomic():
        due = Assignment.objects.filter(pk=assignment_id, status=AssignmentStatus.ACTIVE, expires_at__lte=now)
        if not due.exists():
            return False
        return release(assignment_id, AssignmentStatus.EXPIRED, now, check=False) is not None


def do_expire_due(now=None, limit=10_000) -> int:
    """Expire every active assignment past its time (the periodic beat job); returns how many."""
    now = now or timezone.now()
    due = Assignment.objects.filter(status=AssignmentStatus.ACTIVE, expires_at__lte=now).order_by("expires_at")
    return sum(do_expire(pk, now) for pk in list(due.values_list("pk", flat=True)[:limit]))


PEOPLE = ("workers", "worker_groups")  # who may work on the batch (many-to-many: set, not assigned)


def do_update_batch_settings(batch: Batch, **fields) -> Batch:
    """Change a batch's settings (``workers`` and ``worker_groups``: the whole list); a new number of assignments
    per task re-decides which tasks are complete, a new template scores the gold answers again."""
    people = {key: fields.pop(key) for key in PEOPLE if key in fields}
    with transaction.atomic():
        batch = Batch.objects.select_for_update().get(pk=batch.pk)
        for name, value in fields.items():
            setattr(batch, name, value)
        batch.save()
        for key, values in people.items():
            getattr(batch, key).set(values)
        if "assignments_per_task" in fields:
            tasks = batch.tasks.all()
            done = tasks.filter(submitted__gte=batch.assignments_per_task).update(completed=True)
            tasks.filter(submitted__lt=batch.assignments_per_task).update(completed=False)
            Batch.objects.filter(pk=batch.pk).update(tasks_done=done)
            batch.tasks_done = done
            refresh_batch_completion(batch)
        if "html_template" in fields:  # field types decide how gold answers are scored
            rescore_batch(batch)
        figures_changed(batch.pk)
    return batch


def check_assignment_of(user, assignment_id) -> Assignment:
    """One of ``user``'s own assignments of a form batch (anyone else's is a 404, and so are Mind2Web's: a
    proposal round or a demonstration task ends through its own actions)."""
    if not str(assignment_id).isdecimal():
        raise NotFound(f"no assignment {assignment_id} of yours")
    assignment = (
        Assignment.objects.select_related("task__batch__project", "worker")
        .filter(pk=int(assignment_id), worker=user, task__batch__kind=BatchKind.FORM)
        .first()
    )
    if assignment is None:
        raise NotFound(f"no assignment {assignment_id} of yours")
    return assignment


def check_batch_accept(user, batch_id) -> Batch:
    """A batch ``user`` may accept work from now."""
    batch = check_batch_for_work(user, batch_id)
    check_open(batch)
    return batch
