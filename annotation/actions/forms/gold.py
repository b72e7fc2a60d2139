"""Gold tasks, qualifications and blocking: what the queue asks before it hands out work, and what it does after a
submission (docs/quality.md, "Gold and qualifications").

- A gold task (``Task.is_gold``) has known answers (``Task.gold_answers``, ``{field: [non-blank accepted values]}``).
  A batch *serves gold* when its ``Batch.gold_rate`` is above 0 and it has a gold task (``serves_gold``). There,
  which of a worker's tasks are gold follows a keyed schedule (``gold_due``, ``annotation.lib.goldschedule``): their
  position counts the assignments they submitted or hold, so skipping, returning or letting a gold task expire does
  not move them past it; each kind of task comes in a keyed order per worker (``keyed_order``), never in index
  order, and workers cannot choose their tasks (the queue's ``do_accept_task`` takes its next one).
- A submitted gold task is scored with ``annotation.lib.agreement.gold_score`` (the TurkingBench scorer's official
  per-field metric, field types read from the batch's template, over the known fields with a non-blank value):
  ``Assignment.gold_score``.
- A worker's gold accuracy on a batch is the one figure of ``figures.gold_accuracy`` (the mean of their gold scores
  there, pending, approved and rejected alike). Below ``Batch.gold_threshold`` after at least
  ``Batch.gold_min_answers`` gold answers, they are blocked from the batch (``BatchBlock``, the reason naming the
  figure), their submitted work not yet reviewed there is flagged (``Assignment.flagged``) and any task they hold in
  it goes back to the queue. A manager may lift a block (``annotation.actions.quality.blocks``); the rule then
  applies again once the worker has given ``gold_min_answers`` more gold answers. In an onboarding batch
  (``Batch.grants_qualification``) reaching ``Batch.grant_threshold`` earns the qualification, with the accuracy as
  its score.
- A batch's requirements (``BatchRequirement``): a worker without each qualification at its minimum score does not
  see the batch (``unmet_requirements``) and gets no task of it (``may_take``); the doors say why
  (``check_may_take``).
"""

from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone
from django.utils.crypto import salted_hmac

from ...lib import agreement as lib
from ...lib import goldschedule
from ...models import (
    HOLDING_STATUSES,
    Assignment,
    AssignmentStatus,
    Batch,
    BatchBlock,
    BatchRequirement,
    QualificationScore,
    ReviewState,
    Task,
)
from ..errors import Forbidden
from .figures import gold_accuracy


def after_submission(assignment: Assignment, task) -> None:
    """Score the answers of a gold task (``task``, locked, with its batch), then block or qualify the worker (inside
    the submission's transaction). Other tasks cost no query here."""
    batch = task.batch
    if not task.is_gold:
        return
    score = lib.gold_score(lib.template_controls(batch.html_template), task.gold_answers, assignment.answers)
    if score is None:
        return
    Assignment.objects.filter(pk=assignment.pk).update(gold_score=score)
    accuracy, count = gold_accuracy(batch, assignment.worker)
    if batch.gold_threshold is not None and count >= batch.gold_min_answers and accuracy < batch.gold_threshold:
        block(batch, assignment.worker, accuracy, count)
    if batch.grants_qualification_id is not None and count >= max(1, batch.gold_min_answers):
        qualify(batch, assignment.worker, accuracy)


def block(batch: Batch, worker, accuracy: float, count: int) -> None:
    if not judged_since_unblock(batch, worker):
        return
    figure, threshold = lib.gold_text(accuracy, count), lib.percent(batch.gold_threshold)
    reason = f"your {figure} is below the batch's threshold of {threshold}"
    BatchBlock.objects.get_or_create(
        batch=batch, worker=worker, lifted_at=None, defaults={"reason": reason, "accuracy": accuracy}
    )
    Assignment.objects.filter(
        task__batch=batch, worker=worker, status=AssignmentStatus.SUBMITTED, review=ReviewState.PENDING
    ).update(flagged=f"worker blocked: {figure} < {threshold}"[:200])
    # Work in progress goes back to the queue (the worker gets nothing more of this batch).
    for held in Assignment.objects.filter(task__batch=batch, worker=worker, status=AssignmentStatus.ACTIVE):
        Assignment.objects.filter(pk=held.pk).update(
            status=AssignmentStatus.RETURNED, ended_at=timezone.now(), ended_reason=f"you were blocked: {reason}"
        )
        Task.objects.filter(pk=held.task_id).update(taken=F("taken") - 1)


def judged_since_unblock(batch: Batch, worker) -> bool:
    """After a manager lifted a block, the rule applies again once the worker has given ``gold_min_answers`` more
    gold answers (their accuracy still counts every gold answer). True when they were never unblocked."""
    lifted = (
        BatchBlock.objects.filter(batch=batch, worker=worker, lifted_at__isnull=False)
        .order_by("-lifted_at")
        .values_list("lifted_at", flat=True)
        .first()
    )
    if lifted is None:
        return True
    since = Assignment.objects.filter(
        task__batch=batch, worker=worker, status=AssignmentStatus.SUBMITTED, gold_score__isnull=False
    ).filter(submitted_at__gt=lifted)
    return since.count() >= batch.gold_min_answers


def qualify(batch: Batch, worker, accuracy: float) -> None:
    """Onboarding: the qualification at the accuracy when it reaches the threshold; below, an earned one is lost."""
    scores = QualificationScore.objects.filter(qualification=batch.grants_qualification_id, worker=worker)
    if accuracy >= batch.grant_threshold:
        scores.update_or_create(
            qualification_id=batch.grants_qualification_id,
            worker=worker,
            defaults={"score": accuracy, "source": QualificationScore.Source.ONBOARDING, "granted_by": None},
        )
    else:
        scores.filter(source=QualificationScore.Source.ONBOARDING).delete()


def unmet_requirements(user):
    """A filter on batches: ``user`` lacks one of the batch's required qualifications (or its minimum score)."""
    held = QualificationScore.objects.filter(
        qualification=OuterRef("qualification"), worker=user, score__gte=OuterRef("min_score")
    )
    return Exists(BatchRequirement.objects.filter(batch=OuterRef("pk")).exclude(Exists(held)))


def blocks_in_force():
    return BatchBlock.objects.filter(lifted_at__isnull=True)


def blocked(user):
    """A filter on batches: ``user`` is blocked from the batch."""
    return Exists(blocks_in_force().filter(batch=OuterRef("pk"), worker=user))


def may_take(user):
    """A filter on tasks: ``user`` is neither blocked from the task's batch nor short of a qualification it needs."""
    if user.is_superuser:
        return Q()
    held = QualificationScore.objects.filter(
        qualification=OuterRef("qualification"), worker=user, score__gte=OuterRef("min_score")
    )
    unmet = Exists(BatchRequirement.objects.filter(batch=OuterRef(OuterRef("batch"))).exclude(Exists(held)))
    return ~Exists(blocks_in_force().filter(batch=OuterRef("batch"), worker=user)) & ~unmet


def missing_qualifications(user, batch: Batch) -> list[str]:
    held = dict(QualificationScore.objects.filter(worker=user).values_list("qualification", "score"))
    return [
        f"{r.qualification.name} ≥ {r.min_score:g}"
        for r in batch.requirements.select_related("qualification")
        if held.get(r.qualification_id) is None or held[r.qualification_id] < r.min_score
    ]


def block_reason(user, batch: Batch) -> str | None:
    """Why ``user`` is blocked from ``batch`` (a block in force), or None."""
    found = blocks_in_force().filter(batch=batch, worker=user).first()
    return None if found is None else f"you are blocked from batch {batch.name!r}: {found.reason}"


def check_may_take(user, batch: Batch) -> None:
    """403 naming why: ``user`` is blocked from ``batch`` or lacks a qualification it requires."""
    if user.is_superuser:
        return
    reason = block_reason(user, batch)
    if reason is not None:
        raise Forbidden(reason)
    missing = missing_qualifications(user, batch)
    if missing:
        raise Forbidden(f"batch {batch.name!r} requires qualifications you do not hold: {', '.join(missing)}")


def blocks_of(user) -> list[BatchBlock]:
    """The form batches ``user`` is blocked from, with the reason (their work page says why)."""
    return list(blocks_in_force().filter(worker=user).select_related("batch__project").order_by("-created_at"))


def unblocks_of(user) -> list[BatchBlock]:
    """The blocks a manager lifted for ``user``, newest first, with who and why (their work page says so)."""
    lifted = BatchBlock.objects.filter(worker=user, lifted_at__isnull=False)
    return list(lifted.select_related("batch__project", "lifted_by").order_by("-lifted_at")[:20])


def serves_gold(batch: Batch) -> bool:
    """The batch serves gold: a gold rate above 0 and at least one gold task. Then the queue picks every task."""
    return batch.gold_rate > 0 and batch.tasks.filter(is_gold=True).exists()


def schedule_key(batch: Batch, user) -> bytes:
    """The key of ``user``'s schedule and order in ``batch``: an HMAC of both under the site's secret."""
    return salted_hmac("form-gold-schedule", f"{batch.pk}:{user.pk}", algorithm="sha256").digest()


def position_of(batch: Batch, user) -> int:
    """The position of ``user``'s next task in ``batch``: how many assignments they submitted or hold there."""
    return Assignment.objects.filter(task__batch=batch, worker=user, status__in=HOLDING_STATUSES).count()


def gold_due(batch: Batch, user) -> bool | None:
    """Whether ``user``'s next task in ``batch`` should be a gold one (True) or a regular one (False), by the
    schedule; None when the batch serves no gold (any task, in index order)."""
    if not serves_gold(batch):
        return None
    return goldschedule.is_gold_position(schedule_key(batch, user), position_of(batch, user), batch.gold_rate)


def keyed_order(batch: Batch, user) -> goldschedule.KeyedOrder:
    """The order in which ``user`` gets the tasks of ``batch`` (by index), when the batch serves gold."""
    return goldschedule.KeyedOrder(schedule_key(batch, user), batch.tasks_total)
