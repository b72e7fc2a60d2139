"""Progress and time of a batch (Turkle's batch statistics): tasks done, assignments per status, and per worker
how many they did and how long they took (total and median work time of their submitted assignments)."""

import statistics
from collections import defaultdict

from django.db.models import Count

from ...models import Assignment, AssignmentStatus, Batch

STATUSES = [status.value for status in AssignmentStatus]


def time_summary(seconds: list[float]) -> dict:
    return {
        "work_seconds_total": round(sum(seconds), 1),
        "work_seconds_median": round(statistics.median(seconds), 1) if seconds else None,
    }


def batch_stats(batch: Batch) -> dict:
    """Everything the batch page and ``GET /api/batches/<id>/stats/`` show; three queries however big the batch."""
    assignments = Assignment.objects.filter(task__batch=batch)
    per_status = dict.fromkeys(STATUSES, 0)
    per_worker = defaultdict(lambda: dict.fromkeys(STATUSES, 0))
    rows = assignments.values_list("worker__username", "status").annotate(n=Count("pk")).order_by()
    for username, status, n in rows:
        per_status[status] += n
        per_worker[username][status] += n
    times = defaultdict(list)
    submitted = assignments.filter(status=AssignmentStatus.SUBMITTED).values_list("worker__username", "work_seconds")
    for username, seconds in submitted:
        times[username].append(seconds or 0.0)
    everyone = [s for values in times.values() for s in values]
    return {
        "batch": batch.pk,
        "tasks_total": batch.tasks_total,  # counters kept with the tasks: a batch may hold a million
        "tasks_done": batch.tasks_done,
        "assignments_per_task": batch.assignments_per_task,
        "assignments": per_status,
        "completed": batch.completed,
        **time_summary(everyone),
        "workers": [
            {"username": username, **counts, **time_summary(times.get(username, []))}
            for username, counts in sorted(per_worker.items())
        ],
    }
