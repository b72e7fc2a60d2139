"""Offline replay of a recorded Mind2Web task (docs/mind2web.md#replay): who may run one, on which task, and
storing its result on the demonstration (the Mind2Web export's ``quality.json`` item carries it)."""

import datetime as dt

from ...lib.formats import mind2web_task_id
from ...models import Demonstration
from ..errors import Conflict, NotFound
from ..manage.access import check_project_role
from .jobs import EXPORT_ROLES


def check_replay(user, project_name: str, annotation_id: str) -> Demonstration:
    """The task ``annotation_id`` of the project, for a researcher or admin of it: 404 for non-members and for an
    unknown task, 403 for other roles, 409 for a task without recorded traffic (nothing to answer requests with)."""
    project = check_project_role(user, project_name, EXPORT_ROLES, "replay tasks")
    demo = next(
        (d for d in project.demonstrations.order_by("pk") if annotation_id in (mind2web_task_id(d.name), d.source_id)),
        None,
    )
    if demo is None:
        raise NotFound(f"no task {annotation_id!r} in {project_name!r}", [{"field": "task", "message": "not found"}])
    if not demo.turns.filter(har__isnull=False).exists():
        raise Conflict(
            f"task {annotation_id!r} has no recorded traffic (HAR): it was not recorded in step mode, so it cannot "
            "be replayed offline",
            [{"field": "task", "message": "no recorded traffic"}],
        )
    return demo


def do_store_replay(demo: Demonstration, result: dict) -> None:
    demo.replay = result | {"at": dt.datetime.now(dt.UTC).isoformat()}
    demo.save(update_fields=["replay"])
