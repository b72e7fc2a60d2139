"""A batch's quality settings (gold rate, blocking threshold, onboarding, required qualifications, auto-approval
delay) and its gold tasks: marked from the CSV's non-blank ``Answer.*`` values or from one assignment's non-blank
answers (a task with no known value is not gold). A change of known answers scores the task's submitted answers
again. Scoring, blocking and qualifying on submission are the queue's (``annotation.actions.forms.gold``)."""

from django.db import transaction

from ...lib import agreement as lib
from ...models import Assignment, AssignmentStatus, Batch, BatchRequirement, Qualification
from ..errors import invalid
from ..forms.figures import figures_changed, rescore_tasks
from .decisions import check_unit_ratio, review_counts

MAX_AUTO_APPROVE_SECONDS = 365 * 24 * 3600
MAX_AUTO_APPROVE_MINUTES = MAX_AUTO_APPROVE_SECONDS // 60


def check_count(field: str, value, low: int, high: int, allow_none=False) -> int | None:
    if value is None or value == "":
        if allow_none:
            return None
        raise invalid(field, "required")
    if isinstance(value, bool):
        raise invalid(field, f"expected a whole number from {low} to {high}")
    try:
        number = int(str(value).strip())
    except ValueError:
        raise invalid(field, f"expected a whole number from {low} to {high}") from None
    if not low <= number <= high:
        raise invalid(field, f"expected a whole number from {low} to {high}")
    return number


def qualification_of(batch: Batch, field: str, name) -> Qualification:
    found = Qualification.objects.filter(project=batch.project, name=name).first() if isinstance(name, str) else None
    if found is None:
        raise invalid(field, f"no qualification {str(name)[:100]!r} in project {batch.project.name!r}")
    return found


def check_quality_settings(batch: Batch, data: dict) -> dict:
    """The settings present in ``data``, checked: every bad value is a 400 naming its field."""
    if not isinstance(data, dict):
        raise invalid("body", "expected an object of settings")
    known = {
        "gold_rate",
        "gold_threshold",
        "gold_min_answers",
        "auto_approve_seconds",
        "auto_approve_minutes",
        "grants_qualification",
        "grant_threshold",
        "requirements",
    }
    unknown = sorted(set(data) - known)
    if unknown:
        raise invalid(unknown[0], f"unknown setting; expected one of {', '.join(sorted(known))}")
    values = {}
    if "gold_rate" in data:
        values["gold_rate"] = check_unit_ratio("gold_rate", data["gold_rate"])
    if "gold_threshold" in data:
        values["gold_threshold"] = check_unit_ratio("gold_threshold", data["gold_threshold"], allow_none=True)
    if "grant_threshold" in data:
        values["grant_threshold"] = check_unit_ratio("grant_threshold", data["grant_threshold"])
    if "gold_min_answers" in data:
        values["gold_min_answers"] = check_count("gold_min_answers", data["gold_min_answers"], 1, 10_000)
    if "auto_approve_seconds" in data:
        values["auto_approve_seconds"] = check_count(
            "auto_approve_seconds", data["auto_approve_seconds"], 0, MAX_AUTO_APPROVE_SECONDS, allow_none=True
        )
    if "auto_approve_minutes" in data:  # what the pages ask; stored in seconds
        if "auto_approve_seconds" in data:
            raise invalid("auto_approve_minutes", "give the delay in minutes or in seconds, not both")
        minutes = check_count(
            "auto_approve_minutes", data["auto_approve_minutes"], 0, MAX_AUTO_APPROVE_MINUTES, allow_none=True
        )
        values["auto_approve_seconds"] = None if minutes is None else minutes * 60
    if "grants_qualification" in data:
        name = data["grants_qualification"]
        values["grants_qualification"] = (
            None if name in (None, "") else qualification_of(batch, "grants_qualification", name)
        )
    if "requirements" in data:
        values["requirements"] = check_requirements(batch, data["requirements"])
    return values


def check_requirements(batch: Batch, raw) -> list[tuple[Qualification, float]]:
    if not isinstance(raw, list):
        raise invalid("requirements", "expected a list of {qualification, min_score}")
    checked, seen = [], set()
    for i, item in enumerate(raw):
        where = f"requirements[{i}]"
        if not isinstance(item, dict) or "qualification" not in item:
            raise invalid(where, "expected {qualification, min_score}")
        qualification = qualification_of(batch, f"{where}.qualification", item["qualification"])
        if qualification.pk in seen:
            raise invalid(f"{where}.qualification", "named twice")
        if batch.grants_qualification_id == qualification.pk:
            raise invalid(f"{where}.qualification", "is the one this batch grants")
        seen.add(qualification.pk)
        checked.append((qualification, check_unit_ratio(f"{where}.min_score", item.get("min_score", 0))))
    return checked


def do_update_quality_settings(batch: Batch, values: dict) -> Batch:
    with transaction.atomic():
        batch = Batch.objects.select_for_update().get(pk=batch.pk)
        requirements = values.pop("requirements", None)
        for name, value in values.items():
            setattr(batch, name, value)
        if values:
            batch.save(update_fields=list(values))
        if requirements is not None:
            batch.requirements.all().delete()
            BatchRequirement.objects.bulk_create(
                BatchRequirement(batch=batch, qualification=q, min_score=score) for q, score in requirements
            )
        figures_changed(batch.pk)
    return batch


INDEX_MAX, ID_MAX = 2**31 - 1, 2**63 - 1  # what the columns hold: a larger number is no task, never a database error


def check_gold_request(batch: Batch, data: dict) -> dict:
    """``{"tasks": [indices], "gold": bool}`` (known answers: the CSV's non-blank ``Answer.*`` values) or
    ``{"assignment": id}`` (its non-blank answers). Task indices count from 0, as every page and file shows them."""
    if not isinstance(data, dict):
        raise invalid("body", "expected an object")
    gold = data.get("gold", True)
    if not isinstance(gold, bool):
        raise invalid("gold", "expected true or false")
    if "assignment" in data:
        return {"assignment": check_gold_assignment(batch, data["assignment"])}
    indices = data.get("tasks")
    if (
        not isinstance(indices, list)
        or not indices
        or not all(isinstance(i, int) and not isinstance(i, bool) for i in indices)
    ):
        raise invalid("tasks", "expected a non-empty list of task indices (from 0), or give assignment")
    tasks = {t.index: t for t in batch.tasks.filter(index__in=[i for i in indices if 0 <= i <= INDEX_MAX])}
    missing = [i for i in indices if i not in tasks]
    if missing:
        raise invalid("tasks", f"batch {batch.name!r} has no task {missing[0]}")
    if gold:
        empty = [i for i in indices if not lib.known_answers(tasks[i].gold)]
        if empty:
            raise invalid(
                "tasks", f"task {empty[0]} has no non-blank Answer.* value in the CSV; mark it from an assignment"
            )
    return {"tasks": [tasks[i] for i in dict.fromkeys(indices)], "gold": gold}


def check_gold_assignment(batch: Batch, pk) -> Assignment:
    """A submitted assignment of ``batch`` with at least one non-blank answer (its answers become the known ones)."""
    assignment = (
        Assignment.objects.filter(pk=pk, task__batch=batch, status=AssignmentStatus.SUBMITTED)
        .select_related("task")
        .first()
        if isinstance(pk, int) and not isinstance(pk, bool) and 0 < pk <= ID_MAX
        else None
    )
    if assignment is None:
        raise invalid("assignment", f"no submitted assignment {str(pk)[:40]} in batch {batch.name!r}")
    if not lib.known_from_answers(lib.template_controls(batch.html_template), assignment.answers):
        raise invalid("assignment", f"assignment {assignment.pk} has no non-blank answer to use as gold")
    return assignment


def do_mark_gold(batch: Batch, request: dict) -> int:
    """Mark (or unmark) gold tasks, score their submitted answers again and make a new version of the batch's
    figures; returns how many tasks were named."""
    with transaction.atomic():
        if "assignment" in request:
            assignment = request["assignment"]
            task = assignment.task
            controls = lib.template_controls(batch.html_template)
            task.is_gold, task.gold_answers = True, lib.known_from_answers(controls, assignment.answers)
            task.save(update_fields=["is_gold", "gold_answers"])
            tasks = [task]
        else:
            tasks = request["tasks"]
            for task in tasks:
                task.gold_answers = lib.known_answers(task.gold) if request["gold"] else {}
                task.is_gold = bool(task.gold_answers)
                task.save(update_fields=["is_gold", "gold_answers"])
        rescore_tasks([task.pk for task in tasks])
        figures_changed(batch.pk)
    return len(tasks)


def quality_settings(batch: Batch) -> dict:
    """A batch's quality settings, gold tasks, review counts, blocked workers and the blocks managers lifted (the
    API's and the page's view)."""
    return {
        "batch": batch.pk,
        "gold_rate": batch.gold_rate,
        "gold_threshold": batch.gold_threshold,
        "gold_min_answers": batch.gold_min_answers,
        "auto_approve_seconds": batch.auto_approve_seconds,
        "auto_approve_minutes": None if batch.auto_approve_seconds is None else batch.auto_approve_seconds / 60,
        "grants_qualification": batch.grants_qualification.name if batch.grants_qualification_id else None,
        "grant_threshold": batch.grant_threshold,
        "requirements": [
            {"qualification": r.qualification.name, "min_score": r.min_score}
            for r in batch.requirements.select_related("qualification")
        ],
        "gold_tasks": list(batch.tasks.filter(is_gold=True).order_by("index").values_list("index", flat=True)),
        "counts": review_counts(batch),
        "blocked": [
            {"worker": b.worker.username, "accuracy": b.accuracy, "reason": b.reason, "at": b.created_at.isoformat()}
            for b in batch.blocks.filter(lifted_at__isnull=True).select_related("worker")
        ],
        "unblocked": [
            {
                "worker": b.worker.username,
                "accuracy": b.accuracy,
                "reason": b.reason,
                "at": b.created_at.isoformat(),
                "lifted_at": b.lifted_at.isoformat(),
                "lifted_by": b.lifted_by.username if b.lifted_by_id else None,
                "lift_reason": b.lift_reason,
            }
            for b in batch.blocks.filter(lifted_at__isnull=False).select_related("worker", "lifted_by")
        ],
    }
