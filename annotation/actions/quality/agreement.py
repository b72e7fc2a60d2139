"""Agreement and aggregation of a form batch (docs/quality.md, "Agreement and aggregation"): the submitted answers
and the gold scores read in two queries, computed by the pure ``annotation.lib.agreement``, cached per batch.

Who: the batch's statistics readers (reviewers, researchers, admins of its project); annotators 403, anyone outside
the project 404 (``forms.check_batch_stats``).

The cache key is the batch's figures version (``forms.figures.figures_token``: a new token written in the
transaction of every action that changes an input: a submission, a review decision, a gold mark, a batch's
settings or template), read before the inputs; so the next read after any change computes afresh, in every process.
"""

import datetime as dt
import hashlib
import io

from django.core.cache import cache

from ...lib import agreement as lib
from ...lib import spreadsheet
from ...models import Assignment, AssignmentStatus, Batch, Project, ReviewState
from ..forms.access import STATS_ROLES, check_batch_stats
from ..forms.figures import figures_token, gold_rows

CACHE_SECONDS = 24 * 3600
CACHE_FORMAT = 2  # the result's shape: a new one never reads entries of the old
TABLES = ("fields", "workers", "tasks")
FIELD_COLUMNS = [
    "name",
    "type",
    "level",
    "answers",
    "tasks",
    "tasks_compared",
    "majority_share",
    "alpha",
    "dawid_skene_differs",
]
WORKER_COLUMNS = ["worker", "assignments", "answers_compared", "majority_agreement", "gold_answers", "gold_accuracy"]


def check_batch_agreement(user, batch_id) -> Batch:
    """The form batch whose agreement ``user`` may read: 404 outside their projects, 403 for annotators."""
    return check_batch_stats(user, batch_id)


def readable_batches(user):
    """The form batches whose agreement ``user`` may read (``GET /api/agreement/`` lists them)."""
    projects = Project.objects.for_user(user, STATS_ROLES)
    return Batch.objects.forms().filter(project__in=projects).select_related("project").order_by("-created_at", "-pk")


def submitted_of(batch_ids):
    """Submitted work that counts: rejected answers are left out of agreement and aggregation (and of exports)."""
    return (
        Assignment.objects.filter(task__batch_id__in=batch_ids, status=AssignmentStatus.SUBMITTED)
        .exclude(review=ReviewState.REJECTED)
        .order_by()
    )


def batch_inputs(batch: Batch) -> tuple[dict, list, list]:
    """``(template controls, [(task index, worker, answers)], [(task index, worker, gold score)])``: two queries.
    The gold scores are every answer to a gold task, rejected ones included (``forms.figures.gold_rows``: the
    figure measures the worker)."""
    controls = lib.template_controls(batch.html_template)
    assignments = list(
        submitted_of([batch.pk])
        .order_by("task__index", "submitted_at", "pk")
        .values_list("task__index", "worker__username", "answers")
    )
    gold = list(gold_rows([batch.pk]).values_list("task__index", "worker__username", "gold_score"))
    return controls, assignments, gold


def cache_key(batch: Batch) -> str:
    template = hashlib.sha256(batch.html_template.encode()).hexdigest()[:16]
    return f"quality-agreement:{CACHE_FORMAT}:{batch.pk}:{figures_token(batch.pk)}:{template}"


def compute(batch: Batch) -> dict:
    controls, assignments, gold = batch_inputs(batch)
    result = lib.batch_agreement(controls, assignments, gold)
    result["batch"] = {"id": batch.pk, "name": batch.name, "project": batch.project.name}
    result["totals"] = {
        "assignments": len(assignments),
        "tasks": len(result["tasks"]),
        "workers": len(result["workers"]),
        "answers": sum(field["answers"] for field in result["fields"]),
    }
    result["computed_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return result


def batch_agreement(batch: Batch, cached: bool = True, tasks: bool = True) -> dict:
    """The batch's agreement and aggregation (``annotation.lib.agreement.batch_agreement`` plus ``batch``,
    ``totals`` and ``computed_at``), from the cache when none of its inputs changed since. ``tasks=False``: without
    the per-task answers (the page: a small entry of the cache instead of one with every task)."""
    if not cached:
        return compute(batch)
    key = cache_key(batch)
    summary = cache.get(key) if not tasks else None
    if summary is not None:
        return summary
    result = cache.get(f"{key}:tasks") if tasks else None
    if result is None:
        result = compute(batch)
        cache.set_many({key: {**result, "tasks": None}, f"{key}:tasks": result}, CACHE_SECONDS)
    return result if tasks else {**result, "tasks": None}


# --- Downloads ------------------------------------------------------------------------------------------------


def cell(value) -> str:
    """A CSV cell: undefined figures stay empty (never 0)."""
    return "" if value is None else str(value)


def table_rows(result: dict, table: str) -> tuple[list, list]:
    """``(columns, rows)`` of one table: ``fields``, ``workers`` or ``tasks`` (one row per task: its workers, then
    per field the majority answer, the Dawid–Skene answer and the task's agreement)."""
    if table == "fields":
        return FIELD_COLUMNS, [[field[c] for c in FIELD_COLUMNS] for field in result["fields"]]
    if table == "workers":
        return WORKER_COLUMNS, [[worker[c] for c in WORKER_COLUMNS] for worker in result["workers"]]
    names = [field["name"] for field in result["fields"]]
    columns = ["task", "workers"]
    for name in names:
        columns += [f"{name}.majority", f"{name}.dawid_skene", f"{name}.agreement"]
    rows = []
    for task in result["tasks"]:
        row = [task["task"], " ".join(task["workers"])]
        for name in names:
            figures = task["fields"].get(name, {})
            row += [figures.get("aggregated_majority"), figures.get("aggregated_dawid_skene"), figures.get("agreement")]
        rows.append(row)
    return columns, rows


def table_csv(result: dict, table: str) -> str:
    columns, rows = table_rows(result, table)
    buffer = io.StringIO()
    writer = spreadsheet.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([cell(value) for value in row] for row in rows)
    return buffer.getvalue()


def download_name(batch: Batch, table: str, extension: str) -> str:
    return f"{batch.project.name}-{batch.name}-agreement-{table}.{extension}"
