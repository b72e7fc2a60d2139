"""The Turkle results CSV of a batch (``Batch.to_csv`` in Turkle): one row per submitted assignment.

Columns, in this order: ``HITId, HITTypeId, Title, CreationTime, MaxAssignments, AssignmentDurationInSeconds,
AssignmentId, WorkerId, AcceptTime, SubmitTime, WorkTimeInSeconds``, then ``Input.<k>`` and ``Answer.<k>`` for
the sorted union of keys, then ``Turkle.Username``. Every value quoted, CRLF line ends, UTF-8 without BOM.
Values as Turkle writes them: HITId = task id, HITTypeId = project id, Title = project name, times as
``%a %b %d %H:%M:%S %Z %Y`` (UTC), WorkerId = user id. One deliberate difference: a name submitted several times
(a checkbox group) is written ``a|b`` (the MTurk and TurkingBench convention) where Turkle 3.1 writes the Python
list ``['a', 'b']``. A cell a spreadsheet would run as a formula (``=…``, ``+…``, ``-…``, ``@…``) is written
with a leading ``'`` (``annotation.lib.spreadsheet``; the decisions uploaded back are read without it).

Review columns, as MTurk's batch results carry them: ``AssignmentStatus`` (``Submitted``, ``Approved``,
``Rejected``), ``ApprovalTime``, ``RejectionTime`` and ``RequesterFeedback`` after ``WorkTimeInSeconds``, and the
empty ``Approve`` and ``Reject`` columns last, for decisions uploaded back (``annotation.actions.quality.decisions``).
"""

import csv
import io
from collections.abc import Iterator

from ...lib import spreadsheet
from ...models import Assignment, AssignmentStatus, Batch, ReviewState

FIXED = [
    "HITId",
    "HITTypeId",
    "Title",
    "CreationTime",
    "MaxAssignments",
    "AssignmentDurationInSeconds",
    "AssignmentId",
    "WorkerId",
    "AcceptTime",
    "SubmitTime",
    "WorkTimeInSeconds",
    "AssignmentStatus",
    "ApprovalTime",
    "RejectionTime",
    "RequesterFeedback",
]
DECISION_COLUMNS = ["Approve", "Reject"]
REVIEW_NAMES = {ReviewState.PENDING: "Submitted", ReviewState.APPROVED: "Approved", ReviewState.REJECTED: "Rejected"}
TIME = "%a %b %d %H:%M:%S %Z %Y"


def cell(value) -> str:
    """A stored answer as a CSV cell: several values joined with ``|``."""
    if isinstance(value, list):
        return "|".join(cell(v) for v in value)
    return "" if value is None else str(value)


def submitted_assignments(batch: Batch):
    return (
        Assignment.objects.filter(task__batch=batch, status=AssignmentStatus.SUBMITTED)
        .select_related("task", "worker")
        .order_by("task__index", "pk")
    )


def results_filename(batch: Batch) -> str:
    return f"Project-{batch.project_id}_Batch-{batch.pk}-{batch.csv_basename}_results.csv"


def results_header(assignments: list) -> list[str]:
    inputs = sorted({key for a in assignments for key in a.task.inputs})
    answers = sorted({key for a in assignments for key in a.answers})
    fields = [*(f"Input.{k}" for k in inputs), *(f"Answer.{k}" for k in answers)]
    return [*FIXED, *fields, "Turkle.Username", *DECISION_COLUMNS]


def review_time(assignment: Assignment, state: str) -> str:
    return assignment.reviewed_at.strftime(TIME) if assignment.review == state and assignment.reviewed_at else ""


def result_row(batch: Batch, assignment: Assignment, header: list[str]) -> list[str]:
    fixed = {
        "HITId": assignment.task_id,
        "HITTypeId": batch.project_id,
        "Title": batch.project.name,
        "CreationTime": batch.created_at.strftime(TIME),
        "MaxAssignments": batch.assignments_per_task,
        "AssignmentDurationInSeconds": batch.allotted_seconds,
        "AssignmentId": assignment.pk,
        "WorkerId": assignment.worker_id,
        "AcceptTime": assignment.accepted_at.strftime(TIME),
        "SubmitTime": assignment.submitted_at.strftime(TIME),
        "WorkTimeInSeconds": int(assignment.work_seconds or 0),
        "Turkle.Username": assignment.worker.username,
        "AssignmentStatus": REVIEW_NAMES[assignment.review],
        "ApprovalTime": review_time(assignment, ReviewState.APPROVED),
        "RejectionTime": review_time(assignment, ReviewState.REJECTED),
        "RequesterFeedback": assignment.feedback,
        "Approve": "",
        "Reject": "",
    }
    values = []
    for column in header:
        if column in fixed:
            values.append(cell(fixed[column]))
        elif column.startswith("Input."):
            values.append(cell(assignment.task.inputs.get(column[6:])))
        else:
            values.append(cell(assignment.answers.get(column[7:])))
    return values


def results_csv_lines(batch: Batch) -> Iterator[str]:
    """The results CSV, line by line (streamable)."""
    assignments = list(submitted_assignments(batch))
    header = results_header(assignments)
    buffer = io.StringIO()
    writer = spreadsheet.writer(buffer, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    rows = [header, *(result_row(batch, a, header) for a in assignments)]
    for row in rows:
        writer.writerow(row)
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()


def results_csv(batch: Batch) -> str:
    return "".join(results_csv_lines(batch))


def results_download(batch) -> tuple[str, Iterator[str]]:
    """``(filename, lines)``: the results CSV's attachment name and its lines, for the batch page's link and
    ``GET /api/batches/<id>/results/`` to stream."""
    return results_filename(batch), results_csv_lines(batch)
