"""Existing tasks brought to the rule of gold (docs/quality.md): a gold task has at least one non-blank known answer.

- Known answers lose their blank values (a blank CSV cell was stored as a known answer, and scored against).
- A task not marked gold whose CSV rows hold a non-blank ``Answer.*`` value becomes gold with those values (as an
  import does now); a gold task left with no known value is no longer gold.
- Every submitted answer of a gold task is scored again with ``annotation.lib.agreement.gold_score`` (the one scoring
  function: blank known values never scored, hidden inputs and types the official scorer has no rule for left out),
  and an answer of a task that is not gold keeps no score.
- Every batch gets a fresh figures version, so no figure cached before this migration is read again.

The pure helpers of ``annotation.lib.agreement`` are imported as they are (no models, no Django): the rule is theirs.
Reverse: nothing to undo (the old known answers held blanks by mistake), so it is a no-op.
"""

import uuid

from django.db import migrations
from django.db.models import Q

CHUNK = 2000


def known_of(lib, task) -> dict:
    if task.is_gold:
        return lib.clean_known(task.gold_answers or {})
    return lib.known_answers(task.gold or [])


def bring_tasks_to_the_rule(Task) -> None:
    from annotation.lib import agreement as lib

    changed = []
    candidates = Task.objects.filter(Q(is_gold=True) | ~Q(gold=[])).only("pk", "is_gold", "gold", "gold_answers")
    for task in candidates.order_by("pk").iterator(chunk_size=CHUNK):
        known = known_of(lib, task)
        if bool(known) != task.is_gold or known != task.gold_answers:
            task.is_gold, task.gold_answers = bool(known), known
            changed.append(task)
        if len(changed) >= CHUNK:
            Task.objects.bulk_update(changed, ["is_gold", "gold_answers"])
            changed = []
    if changed:
        Task.objects.bulk_update(changed, ["is_gold", "gold_answers"])


def score_again(Assignment, Batch) -> None:
    from annotation.lib import agreement as lib

    controls = {pk: lib.template_controls(html) for pk, html in Batch.objects.values_list("pk", "html_template")}
    Assignment.objects.filter(status="submitted", gold_score__isnull=False, task__is_gold=False).update(gold_score=None)
    answers = (
        Assignment.objects.filter(status="submitted", task__is_gold=True)
        .select_related("task")
        .only("pk", "answers", "gold_score", "task__batch_id", "task__gold_answers")
        .order_by("pk")
    )
    changed = []
    for assignment in answers.iterator(chunk_size=CHUNK):
        task = assignment.task
        score = lib.gold_score(controls[task.batch_id], task.gold_answers, assignment.answers)
        if score != assignment.gold_score:
            assignment.gold_score = score
            changed.append(assignment)
        if len(changed) >= CHUNK:
            Assignment.objects.bulk_update(changed, ["gold_score"])
            changed = []
    if changed:
        Assignment.objects.bulk_update(changed, ["gold_score"])


def forward(apps, schema_editor):
    Task, Assignment = apps.get_model("annotation", "Task"), apps.get_model("annotation", "Assignment")
    Batch, FiguresVersion = apps.get_model("annotation", "Batch"), apps.get_model("annotation", "FiguresVersion")
    bring_tasks_to_the_rule(Task)
    score_again(Assignment, Batch)
    FiguresVersion.objects.all().delete()
    FiguresVersion.objects.bulk_create(
        (FiguresVersion(batch_id=pk, token=uuid.uuid4().hex) for pk in Batch.objects.values_list("pk", flat=True)),
        batch_size=CHUNK,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0023_figures"),
    ]

    operations = [
        migrations.RunPython(forward, migrations.RunPython.noop),
    ]
