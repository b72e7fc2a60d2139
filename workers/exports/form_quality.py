"""The TurkingBench export's ``quality.json`` (docs/quality.md): one item per exported task with its workers, the
answer of each field aggregated by majority vote and by Dawid–Skene, the task's agreement per field and the gold
accuracy of its workers (the one figure, ``forms.figures.worker_gold``, and how many gold answers it is over); the
totals add, per batch, each field's Krippendorff α and agreement.

The figures are ``annotation.actions.quality.agreement``'s (the agreement page's, one code path). They go into
``quality.json`` only: TurkingBench's ``batch.csv`` has no room for them (every non-``Answer.`` column is part of
an instance's identity, and an ``Answer.`` row is read as one more annotator's answer).
"""

from pathlib import Path

from annotation.actions.quality import agreement
from annotation.models import Batch

from .exporters.turkingbench import FORMAT
from .quality import write_quality_report

FIELD_TOTALS = ("type", "level", "answers", "tasks_compared", "majority_share", "alpha", "dawid_skene_differs")


def task_items(batch: Batch, result: dict, include_gold: bool) -> list[dict]:
    """One item per task the export holds rows of: its submitted answers, and its gold rows when they are exported."""
    figures = {task["task"]: task for task in result["tasks"]}
    accuracy = {worker["worker"]: worker["gold_accuracy"] for worker in result["workers"]}
    answers = {worker["worker"]: worker["gold_answers"] for worker in result["workers"]}
    items = []
    for index, completed, gold in batch.tasks.order_by("index").values_list("index", "completed", "gold"):
        gold_rows = len(gold) if include_gold else 0
        task = figures.get(index)
        if task is None and not gold_rows:
            continue
        workers = task["workers"] if task else []
        items.append(
            {
                "id": f"{batch.name}/{index}",
                "kind": "task",
                "status": "completed" if completed else "open",
                "batch": batch.name,
                "task": index,
                "gold_rows": gold_rows,
                "workers": workers,
                "fields": task["fields"] if task else {},
                "gold_accuracy_of_workers": {worker: accuracy.get(worker) for worker in workers},
                "gold_answers_of_workers": {worker: answers.get(worker, 0) for worker in workers},
            }
        )
    return items


def batch_totals(result: dict) -> dict:
    return {
        "assignments": result["totals"]["assignments"],
        "workers": result["totals"]["workers"],
        "fields": {field["name"]: {key: field[key] for key in FIELD_TOTALS} for field in result["fields"]},
    }


def write_form_quality(project, batches, out: Path, include_gold: bool) -> dict:
    """Write ``out/quality.json`` for these exported batches; returns its totals (the job's ``counts["quality"]``)."""
    items, per_batch = [], {}
    for batch in batches:
        result = agreement.batch_agreement(batch)
        items.extend(task_items(batch, result, include_gold))
        per_batch[batch.name] = batch_totals(result)
    return write_quality_report(out, FORMAT, project.name, items, {"agreement_by_batch": per_batch})
