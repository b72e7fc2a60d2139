"""Offline replay of a recorded Mind2Web task (docs/mind2web.md#replay): who may run one, on which task, the job
the API queues, and its result stored on the demonstration (the Mind2Web export's ``quality.json`` carries it)."""

import datetime as dt
import uuid

from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Lower

from ...lib.formats import mind2web_task_id
from ...models import Demonstration, Project
from ..errors import Conflict, NotFound, invalid
from ..manage.access import check_project_role
from ..queue import REPLAY, enqueue
from .jobs import EXPORT_ROLES

RUN_BUDGET = dt.timedelta(seconds=600)  # a whole replay's steps (the worker's bound: workers/exports/replay/run.py)
# A replay counts as lost, and may be requested again, when still queued this long after it was queued (no worker
# took it), or still running this long after its worker started it (the run's bound plus Chromium's start and the
# result's storing).
QUEUED_LOST_AFTER = dt.timedelta(minutes=5)
RUNNING_LOST_AFTER = RUN_BUDGET + dt.timedelta(minutes=5)


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


def check_replay_project(user, project_name: str) -> Project:
    """404 for non-members, 403 for roles other than researcher and admin."""
    return check_project_role(user, project_name, EXPORT_ROLES, "replay tasks")


def task_of(project: Project, annotation_id: str) -> Demonstration:
    """The project's demo whose Mind2Web ``annotation_id`` (``Demonstration.task_uuid``, stored) or release id
    (``source_id``, as the per-project index holds it) this is: one indexed query."""
    if len(annotation_id) > 64 or "\x00" in annotation_id:  # no id is: not asked of the database (NUL is refused)
        raise NotFound(f"no such task in {project.name!r}", [{"field": "task", "message": "not found"}])
    demo = (
        project.demonstrations.alias(source_key=Lower("source_id"))
        .filter(Q(task_uuid=annotation_id) | Q(source_key=annotation_id.lower(), source_id=annotation_id))
        .order_by("pk")
        .first()
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
        else demo.task_uuid or mind2web_task_id(demo.name)
    )


def replay_offer(user, demo: Demonstration) -> dict | None:
    """For the task's page: its replay status when ``user`` may replay it (a researcher or admin of its project) and
    it has traffic; else None (no button)."""
    if not demo.project.has_role(user, EXPORT_ROLES) or not demo.turns.filter(har__isnull=False).exists():
        return None
    return status_of(demo, task_id(demo))


def status_of(demo: Demonstration, annotation_id: str) -> dict:
    """``{"task", "status"}`` (none, queued, running, done, failed) with the stored result or times; ``lost``: a
    queued or running replay past its bound (``QUEUED_LOST_AFTER``, ``RUNNING_LOST_AFTER``) may be requested again."""
    found = {"task": annotation_id, "status": "none"} | (demo.replay or {})
    if found["status"] in ("queued", "running"):
        found["lost"] = is_lost(demo.replay)
    return found


def do_request_replay(user, project_name: str, body) -> dict:
    """Queue a replay of ``body["task"]`` (an annotation_id); its status (``queued``). The project is checked first:
    a non-member learns nothing from the body's validation."""
    check_replay_project(user, project_name)
    task = body.get("task") if isinstance(body, dict) else None
    if not isinstance(task, str) or not task:
        raise invalid("task", "the annotation_id of a task of the project is required")
    with transaction.atomic():
        demo = Demonstration.objects.select_for_update().get(pk=check_replay(user, project_name, task).pk)
        pending = (demo.replay or {}).get("status")
        if pending in ("queued", "running") and not is_lost(demo.replay):  # one Chromium per task on the workers
            raise Conflict(
                f"a replay of task {task!r} is already {pending}: its result shows when the worker is done",
                [{"field": "task", "message": f"already {pending}"}],
            )
        run = uuid.uuid4().hex  # the worker stores its result only while this run is the demo's (``current``)
        demo.replay = {"status": "queued", "at": now(), "run": run}
        demo.save(update_fields=["replay"])
    enqueue(REPLAY, demo.pk, run, on_failure=lambda error: do_fail_replay(demo, f"could not be queued: {error}", run))
    return status_of(demo, task)


def is_lost(replay) -> bool:
    """A queued replay no worker took within ``QUEUED_LOST_AFTER``, or a running one its worker did not finish within
    ``RUNNING_LOST_AFTER`` (a worker killed mid-run); a stored time that does not parse counts as lost."""
    replay = replay or {}
    bound, since = {
        "queued": (QUEUED_LOST_AFTER, replay.get("at")),
        "running": (RUNNING_LOST_AFTER, replay.get("started_at")),
    }.get(replay.get("status"), (None, None))
    if bound is None:
        return False
    try:
        return dt.datetime.now(dt.UTC) - dt.datetime.fromisoformat(since or "") >= bound
    except (TypeError, ValueError):
        return True


def replay_status(user, project_name: str, annotation_id: str) -> dict:
    demo = task_of(check_replay_project(user, project_name), annotation_id)
    return status_of(demo, annotation_id)


def current(demo: Demonstration, run: str | None):
    """The demo's row locked while ``run`` is still its replay (``None``: any, as ``manage.py replay`` stores); else
    ``None``: a newer request replaced a lost run, whose late worker must not overwrite it."""
    locked = Demonstration.objects.select_for_update().filter(pk=demo.pk).first()
    if locked is None or (run is not None and (locked.replay or {}).get("run") != run):
        return None
    return locked


def store(demo: Demonstration, run: str | None, replay, pending_only: bool = False) -> bool:
    """Store ``replay(stored)`` as the demo's replay (keeping its run id) if ``run`` is still the demo's (and, with
    ``pending_only``, still queued or running); whether it was stored."""
    with transaction.atomic():
        locked = current(demo, run)
        stored = (locked.replay or {}) if locked is not None else {}
        if locked is None or (pending_only and stored.get("status") not in ("queued", "running")):
            return False
        locked.replay = replay(stored) | ({"run": stored["run"]} if stored.get("run") else {})
        locked.save(update_fields=["replay"])
    demo.replay = locked.replay
    return True


def do_start_replay(demo: Demonstration, run: str | None = None) -> bool:
    """The worker took the replay: ``running``, with when it was queued (``at``) and when it started; ``False`` (and
    nothing stored) when ``run`` is no longer the demo's or has ended (a late or duplicate delivery)."""
    return store(
        demo, run, lambda stored: {"status": "running", "at": stored.get("at") or now(), "started_at": now()}, True
    )


def do_store_replay(demo: Demonstration, result: dict, run: str | None = None) -> bool:
    return store(demo, run, lambda _: result | {"status": "done", "at": now()})


def do_fail_replay(demo: Demonstration, error: str, run: str | None = None) -> bool:
    return store(demo, run, lambda _: {"status": "failed", "error": error[:500], "at": now()})
