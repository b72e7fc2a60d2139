"""The inputs of a form batch's quality figures, kept in one place (docs/quality.md, "One definition per figure").

- ``figures_changed(*batch_ids)``: every action that changes an input of a batch's figures (answers, review
  decisions, gold marks and known answers, batch settings, the template) calls it inside its transaction; it writes
  a new random token in ``FiguresVersion``, so the figures cached under the old one are never read again.
  ``figures_token`` reads it (the cache key of ``annotation.actions.quality.agreement``).
- ``gold_rows`` and ``worker_gold``: the one reader of a worker's gold accuracy in a batch (the mean of the stored
  gold scores of every answer they submitted to a gold task of the batch, pending, approved and rejected alike,
  with how many; ``annotation.lib.agreement.gold_accuracy``). The review page, the agreement page and its
  downloads, the API, ``quality.json`` and the blocking rule all read it.
- ``rescore_tasks`` / ``rescore_batch``: the stored gold scores (``Assignment.gold_score``) computed again with
  ``annotation.lib.agreement.gold_score`` when a task's known answers or the batch's template change.

Lives with the queue (which scores and blocks on submission) so that both it and ``annotation.actions.quality``
can import it.
"""

import uuid
from collections import defaultdict

from django.db.models import Q

from ...lib import agreement as lib
from ...models import Assignment, AssignmentStatus, Batch, FiguresVersion, Task

RESCORE_CHUNK = 2000


# --- The version of a batch's figures --------------------------------------------------------------------------


def new_token() -> str:
    return uuid.uuid4().hex


def figures_changed(*batch_ids) -> None:
    """A new version of these batches' figures (call it inside the transaction of the change: it commits with it).
    Rows are written in batch order, so two transactions changing the same batches never wait on each other in a
    circle; call it last in the transaction, so the row is held only until the commit."""
    ids = sorted({int(pk) for pk in batch_ids if pk is not None})
    if ids:
        FiguresVersion.objects.bulk_create(
            [FiguresVersion(batch_id=pk, token=new_token()) for pk in ids],
            update_conflicts=True,
            unique_fields=["batch"],
            update_fields=["token"],
        )


def figures_token(batch_id) -> str:
    """The current version of a batch's figures (a batch never changed since it was made gets its first one now).
    Read it before the inputs: figures computed from inputs read afterwards are at least that new."""
    current = FiguresVersion.objects.filter(batch_id=batch_id).values_list("token", flat=True)
    token = current.first()
    if token is None:
        first = FiguresVersion(batch_id=batch_id, token=new_token())
        FiguresVersion.objects.bulk_create([first], ignore_conflicts=True)
        token = current.first()
    return token


# --- Gold accuracy: the one reader -----------------------------------------------------------------------------


def gold_rows(batch_ids, workers=None):
    """Every answer submitted to a gold task of these batches (a list or a subquery of ids) that has a gold score,
    whatever its review (pending, approved, rejected); ``workers`` (ids) narrows it."""
    rows = Assignment.objects.filter(
        task__batch_id__in=batch_ids, task__is_gold=True, status=AssignmentStatus.SUBMITTED, gold_score__isnull=False
    )
    return (rows if workers is None else rows.filter(worker_id__in=workers)).order_by()


def worker_gold(batch_ids, workers=None) -> dict:
    """``{(batch id, worker id): (gold accuracy, gold answers)}`` for the workers with a gold answer (one query)."""
    rows = gold_rows(batch_ids, workers).values_list("task__batch_id", "worker_id", "gold_score")
    return lib.gold_by_worker(((batch, worker), score) for batch, worker, score in rows)


def gold_accuracy(batch: Batch, worker) -> tuple[float | None, int]:
    """``(gold accuracy, gold answers)`` of ``worker`` in ``batch``; ``(None, 0)`` before their first gold answer."""
    return worker_gold([batch.pk], [worker.pk]).get((batch.pk, worker.pk), (None, 0))


def pairs_filter(pairs) -> Q | None:
    """A filter on assignments: of one of these ``(batch id, worker id)``; None when there are none."""
    by_batch = defaultdict(list)
    for batch, worker in pairs:
        by_batch[batch].append(worker)
    found = None
    for batch, workers in sorted(by_batch.items()):
        one = Q(task__batch_id=batch, worker_id__in=sorted(workers))
        found = one if found is None else found | one
    return found


# --- Gold scores stored on the answers --------------------------------------------------------------------------


def rescore_tasks(task_ids) -> int:
    """Score again every submitted answer of these tasks (ids: a list or a subquery) against their known answers as
    they are now (no score for a task that is no longer gold); returns how many scores changed. The caller holds
    the transaction and calls ``figures_changed``."""
    chosen = Task.objects.filter(pk__in=task_ids)
    tasks = {task.pk: task for task in chosen.only("pk", "batch_id", "is_gold", "gold_answers")}
    templates = dict(Batch.objects.filter(tasks__in=chosen).distinct().values_list("pk", "html_template"))
    controls = {pk: lib.template_controls(template) for pk, template in templates.items()}
    answers = (
        Assignment.objects.filter(task__in=chosen, status=AssignmentStatus.SUBMITTED)
        .only("pk", "task_id", "answers", "gold_score")
        .order_by("pk")
    )
    changed, count = [], 0
    for assignment in answers.iterator(chunk_size=RESCORE_CHUNK):
        task = tasks[assignment.task_id]
        known = task.gold_answers if task.is_gold else {}
        score = lib.gold_score(controls[task.batch_id], known, assignment.answers) if known else None
        if score != assignment.gold_score:
            assignment.gold_score = score
            changed.append(assignment)
        if len(changed) >= RESCORE_CHUNK:
            count += Assignment.objects.bulk_update(changed, ["gold_score"])
            changed = []
    return count + (Assignment.objects.bulk_update(changed, ["gold_score"]) if changed else 0)


def rescore_batch(batch: Batch) -> int:
    """Score again every answer to a gold task of the batch (its template changed: field types decide how a field
    is scored) and make a new version of its figures. Call it in the transaction that changes the template."""
    scored = Q(is_gold=True) | Q(assignments__gold_score__isnull=False)
    changed = rescore_tasks(batch.tasks.filter(scored).values("pk"))
    figures_changed(batch.pk)
    return changed
