"""Gold tasks, qualifications and blocking: what the queue asks before it hands out work, and what it does after a
submission (docs/quality.md, "Gold and qualifications").

- A gold task (``Task.is_gold``) has known answers (``Task.gold_answers``, ``{field: [non-blank accepted values]}``).
  It is served like any other task; ``gold_first`` decides, per worker, whether their next task should be a gold one
  so that about ``Batch.gold_rate`` of what they get is gold.
- A submitted gold task is scored with ``annotation.lib.agreement.gold_score`` (the TurkingBench scorer's official
  per-field metric, field types read from the batch's template, over the known fields with a non-blank value):
  ``Assignment.gold_score``.
- A worker's gold accuracy on a batch is the one figure of ``figures.gold_accuracy`` (the mean of their gold scores
  there, pending, approved and rejected alike). Below ``Batch.gold_threshold`` after at least
  ``Batch.gold_min_answers`` gold answers, they are blocked from the batch (``BatchBlock``, the reason naming the
  figure), their submitted work not yet reviewed there is flagged (``Assignment.flagged``) and any task they hold in
  it goes back to the queue. In an onboarding batch (``Batch.grants_qualification``) reaching
  ``Batch.grant_threshold`` earns the qualification, with the accuracy as its score.
- A batch's requirements (``BatchRequirement``): a worker without each qualification at its minimum score does not
  see the batch (``unmet_requirements``) and gets no task of it (``may_take``); the doors say why
  (``check_may_take``).
"""

from django.db.models import Count, Exists, F, OuterRef, Q
from django.utils import timezone

from ...lib import agreement as lib
from ...models import (
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
    figure, threshold = lib.gold_text(accuracy, count), lib.percent(batch.gold_threshold)
    reason = f"your {figure} is below the batch's threshold of {threshold}"
    BatchBlock.objects.get_or_create(batch=batch, worker=worker, defaults={"reason": reason, "accuracy": accuracy})
    Assignment.objects.filter(
        task__batch=batch, worker=worker, status=AssignmentStatus.SUBMITTED, review=ReviewState.PENDING
    ).update(flagged=f"worker blocked: {figure} < {threshold}"[:200])
    # Work in progress goes back to the queue (the worker gets nothing more of this batch).
    for held in Assignment.objects.filter(task__batch=batch, worker=worker, status=AssignmentStatus.ACTIVE):
        Assignment.objects.filter(pk=held.pk).update(status=AssignmentStatus.RETURNED, ended_at=timezone.now())
        Task.objects.filter(pk=held.task_id).update(taken=F("taken") - 1)


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


def blocked(user):
    """A filter on batches: ``user`` is blocked from the batch."""
    return Exists(BatchBlock.objects.filter(batch=OuterRef("pk"), worker=user))


def may_take(user):
    """A filter on tasks: ``user`` is neither blocked from the task's batch nor short of a qualification it needs."""
    if user.is_superuser:
        return Q()
    held = QualificationScore.objects.filter(
        qualification=OuterRef("qualification"), worker=user, score__gte=OuterRef("min_score")
    )
    unmet = Exists(BatchRequirement.objects.filter(batch=OuterRef(OuterRef("batch"))).exclude(Exists(held)))
    return ~Exists(BatchBlock.objects.filter(batch=OuterRef("batch"), worker=user)) & ~unmet


def missing_qualifications(user, batch: Batch) -> list[str]:
    held = dict(QualificationScore.objects.filter(worker=user).values_list("qualification", "score"))
    return [
        f"{r.qualification.name} ≥ {r.min_score:g}"
        for r in batch.requirements.select_related("qualification")
        if held.get(r.qualification_id) is None or held[r.qualification_id] < r.min_score
    ]


def check_may_take(user, batch: Batch) -> None:
    """403 naming why: ``user`` is blocked from ``batch`` or lacks a qualification it requires."""
    if user.is_superuser:
        return
    block_row = BatchBlock.objects.filter(batch=batch, worker=user).first()
    if block_row is not None:
        raise Forbidden(f"you are blocked from batch {batch.name!r}: {block_row.reason}")
    missing = missing_qualifications(user, batch)
    if missing:
        raise Forbidden(f"batch {batch.name!r} requires qualifications you do not hold: {', '.join(missing)}")


def blocks_of(user) -> list[BatchBlock]:
    """The form batches ``user`` is blocked from, with the reason (their work page says why)."""
    return list(BatchBlock.objects.filter(worker=user).select_related("batch__project").order_by("-created_at"))


def gold_first(batch: Batch, user) -> bool | None:
    """Whether ``user``'s next task should be a gold one (True), a regular one (False), or either (None)."""
    if batch.gold_rate <= 0 or not batch.tasks.filter(is_gold=True).exists():
        return None
    counts = Assignment.objects.filter(task__batch=batch, worker=user).aggregate(
        all=Count("pk"), gold=Count("pk", filter=Q(task__is_gold=True))
    )
    return counts["gold"] < batch.gold_rate * (counts["all"] + 1)
