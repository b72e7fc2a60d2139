"""From the database to TurkingBench export values: a project's form batches as ``ExportBatch`` (rows read lazily).

Rows: the imported gold rows first when ``include_gold`` (in the order of the uploaded file), then one row per
submitted assignment in the export's review states (by task, then submission). Inputs are the task's values under
their bare CSV names.
"""

from collections.abc import Iterator
from pathlib import Path

from agents.turkle import Dataset
from annotation.actions.exports.turkingbench import DEFAULT_REVIEW_STATES
from annotation.models import Assignment, AssignmentStatus, Batch, BatchKind, SplitConfig

from .exporters.turkingbench import ExportBatch, write_batch


def cell(value) -> str:
    if isinstance(value, list):
        return "|".join(cell(v) for v in value)
    return "" if value is None else str(value)


def answer_cells(answers: dict) -> dict:
    return {f"Answer.{name}": cell(value) for name, value in answers.items()}


def gold_rows(batch: Batch) -> Iterator[dict]:
    entries = []
    for task in batch.tasks.only("inputs", "gold").iterator(chunk_size=500):
        entries.extend((entry["row"], task.inputs, entry["answers"]) for entry in task.gold)
    for _, inputs, answers in sorted(entries, key=lambda entry: entry[0]):
        yield {**inputs, **answer_cells(answers)}


def submitted(batch: Batch, review_states=DEFAULT_REVIEW_STATES):
    """The batch's submitted work in these review states (by default approved and not yet reviewed: rejected work
    is left out, docs/quality.md)."""
    return (
        Assignment.objects.filter(task__batch=batch, status=AssignmentStatus.SUBMITTED, review__in=review_states)
        .select_related("task")
        .order_by("task__index", "submitted_at", "pk")
    )


def submitted_rows(batch: Batch, review_states=DEFAULT_REVIEW_STATES) -> Iterator[dict]:
    for assignment in submitted(batch, review_states).iterator(chunk_size=500):
        yield {**assignment.task.inputs, **answer_cells(assignment.answers)}


def columns_of(batch: Batch, review_states=DEFAULT_REVIEW_STATES) -> list:
    """The uploaded header, then answer fields only the exported submissions have (sorted)."""
    known = set(batch.csv_columns)
    names = set()
    for answers in submitted(batch, review_states).values_list("answers", flat=True).iterator(chunk_size=500):
        names.update(f"Answer.{name}" for name in answers)
    return [*batch.csv_columns, *sorted(names - known)]


def rows_of(batch: Batch, include_gold: bool, review_states=DEFAULT_REVIEW_STATES) -> Iterator[dict]:
    if include_gold:
        yield from gold_rows(batch)
    yield from submitted_rows(batch, review_states)


def selected_batches(project, split_lists=None, splits=None, batch_ids=None):
    """The project's form batches, by name; with ``batch_ids``, only those; with ``splits``, only the tasks those
    split lists name."""
    batches = Batch.objects.filter(project=project, kind=BatchKind.FORM).order_by("name")
    if batch_ids:
        batches = batches.filter(pk__in=batch_ids)
    if splits:
        names = {name for split in splits for name in (split_lists or {}).get(split, [])}
        batches = batches.filter(name__in=names)
    return batches


def export_batches(
    project, include_gold=False, splits=None, batch_ids=None, review_states=DEFAULT_REVIEW_STATES
) -> Iterator[ExportBatch]:
    """The selected batches as the exporter takes them: gold rows when ``include_gold``, then the submitted work in
    ``review_states``."""
    lists = split_lists(project)
    for batch in selected_batches(project, lists, splits, batch_ids):
        rows = rows_of(batch, include_gold, review_states)
        yield ExportBatch(batch.name, batch.html_template, columns_of(batch, review_states), rows)


def split_lists(project) -> dict:
    return SplitConfig.for_project(project).form_task_splits or {}


def gold_directory(batches: list[Batch], out: Path) -> Dataset:
    """These batches' imported gold rows written as a TurkingBench directory (the exporter's own ``write_batch``) and
    read back with ``agents.turkle``: what an agent run and a TurkingBench evaluation score against."""
    for batch in batches:
        write_batch(out, ExportBatch(batch.name, batch.html_template, batch.csv_columns, gold_rows(batch)))
    (out / "tasks").mkdir(parents=True, exist_ok=True)
    return Dataset(out)
