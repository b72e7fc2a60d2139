"""Offline replay of a recorded Mind2Web task (docs/mind2web.md#replay): who may run one, on which task, the job
the API queues, and its result stored on the demonstration (the Mind2Web export's ``quality.json`` carries it)."""

import datetime as dt

from django.db import transaction

from ...lib.formats import mind2web_task_id
from ...models import Demonstration, Project
from ..errors import Conflict, NotFound, invalid
from ..manage.access import check_project_role
from ..queue import REPLAY, enqueue
from .jobs import EXPORT_ROLES

REQUEUE_AFTER = dt.timedelta(hours=1)  # a replay queued this long ago is taken as lost and may be queued again


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


def check_replay_project(user, project_name: str) -> Project:
    """404 for non-members, 403 for roles other than researcher and admin."""
    return check_project_role(user, project_name, EXPORT_ROLES, "replay tasks")


def task_of(project: Project, annotation_id: str) -> Demonstration:
    demo = next(
        (d for d in project.demonstrations.order_by("pk") if annotation_id in (mind2web_task_id(d.name), d.source_id)),
        None,
    )
    if demo is None:
        raise NotFound(f"no task {annotation_id!r} in {project.name!r}", [{"field": "task", "message": "not found"}])
    return demo


def check_replay(user, project_name: str, annotation_id: str) -> Demonstration:
    """The task ``annotation_id`` of the project, for a researcher or admin of it: 404 for non-members and for an
    unknown task, 403 for other roles, 409 for a task without recorded traffic (nothing to answer requests with)."""
    demo = task_of(check_replay_project(user, project_name), annotation_id)
    if not demo.turns.filter(har__isnull=False).exists():
        raise Conflict(
            f"task {annotation_id!r} has no recorded traffic (HAR): it was not recorded in step mode, so it cannot "
            "be replayed offline",
            [{"field": "task", "message": "no recorded traffic"}],
        )
    return demo


def task_id(demo: Demonstration) -> str:
    return (
        demo.source_id
        if demo.source_id and (demo.source or {}).get("format") == "mind2web"
        else mind2web_task_id(demo.name)
    )


def replay_offer(user, demo: Demonstration) -> dict | None:
    """For the task's page: its replay status when ``user`` may replay it (a researcher or admin of its project) and
    it has traffic; else None (no button)."""
    if not demo.project.has_role(user, EXPORT_ROLES) or not demo.turns.filter(har__isnull=False).exists():
        return None
    return status_of(demo, task_id(demo))


def status_of(demo: Demonstration, annotation_id: str) -> dict:
    return {"task": annotation_id, "status": "none"} | (demo.replay or {})


def do_request_replay(user, project_name: str, body) -> dict:
    """Queue a replay of ``body["task"]`` (an annotation_id); its status (``queued``). The project is checked first:
    a non-member learns nothing from the body's validation."""
    check_replay_project(user, project_name)
    task = body.get("task") if isinstance(body, dict) else None
    if not isinstance(task, str) or not task:
        raise invalid("task", "the annotation_id of a task of the project is required")
    with transaction.atomic():
        demo = Demonstration.objects.select_for_update().get(pk=check_replay(user, project_name, task).pk)
        if queued_recently(demo):  # one Chromium per task on the workers, however often the button is pressed
            raise Conflict(
                f"a replay of task {task!r} is already queued: its result shows when the worker is done",
                [{"field": "task", "message": "already queued"}],
            )
        demo.replay = {"status": "queued", "at": now()}
        demo.save(update_fields=["replay"])
    enqueue(REPLAY, demo.pk, on_failure=lambda error: do_fail_replay(demo, f"could not be queued: {error}"))
    return status_of(demo, task)


def queued_recently(demo: Demonstration) -> bool:
    replay = demo.replay or {}
    if replay.get("status") != "queued":
        return False
    try:
        return dt.datetime.now(dt.UTC) - dt.datetime.fromisoformat(replay.get("at") or "") < REQUEUE_AFTER
    except (TypeError, ValueError):
        return False


def replay_status(user, project_name: str, annotation_id: str) -> dict:
    demo = task_of(check_replay_project(user, project_name), annotation_id)
    return status_of(demo, annotation_id)


def do_store_replay(demo: Demonstration, result: dict) -> None:
    demo.replay = result | {"status": "done", "at": now()}
    demo.save(update_fields=["replay"])


def do_fail_replay(demo: Demonstration, error: str) -> None:
    demo.replay = {"status": "failed", "error": error[:500], "at": now()}
    demo.save(update_fields=["replay"])
