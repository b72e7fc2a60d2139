"""Demonstrating accepted tasks: the annotator's assigned demonstration tasks, taking one from the pool, and
starting the recording of one (task, website, domain and subdomain filled in, linked to the task's assignment).
A demonstration's assignment is submitted when its recording finishes (``forms.queue.do_submit_recording``)."""

from urllib.parse import urlsplit

from django.db.models import Q
from django.utils import timezone

from ...models import Assignment, AssignmentStatus, BatchKind, DemoMode, Project
from ..errors import Conflict, NotFound
from ..forms import WORK_ROLES
from ..forms.queue import do_accept_next
from ..manage.access import check_project_role
from ..recordings.lifecycle import do_start_recording
from .proposals import mind2web_batch


def assigned_demonstrations(user, project=None):
    """``user``'s active, unexpired demonstration assignments (in ``project`` when given), oldest first."""
    found = Assignment.objects.filter(
        worker=user,
        status=AssignmentStatus.ACTIVE,
        expires_at__gt=timezone.now(),
        task__batch__kind=BatchKind.DEMONSTRATION,
        task__batch__project__in=Project.objects.for_user(user, WORK_ROLES),
    )
    if project is not None:
        found = found.filter(task__batch__project=project)
    return found.select_related("task__batch__project").order_by("accepted_at", "pk")


def check_project_for_demonstrating(user, project_name) -> Project:
    return check_project_role(user, project_name, WORK_ROLES, "demonstrate tasks (needs annotator or admin)")


def do_take_from_pool(user, project) -> Assignment:
    """The next demonstration task of the pool for ``user`` (or their oldest assigned one); 409 when none.

    A project that keeps demonstrations off the pool leaves each task to its proposer: a task whose assignment
    expired or was returned goes back to them only, never to someone else."""
    among = None if project.demonstrations_to_pool else Q(proposal__proposer=user)
    assignment = do_accept_next(user, mind2web_batch(project, BatchKind.DEMONSTRATION), among=among)
    if assignment is None:
        raise Conflict(f"no demonstration task left for you in {project.name!r}")
    return assignment


def check_demonstration_of(user, assignment_id) -> Assignment:
    found = assigned_demonstrations(user).filter(pk=assignment_id).first()
    if found is None:
        raise NotFound(f"no active demonstration task {assignment_id} of yours")
    return found


def do_start_demonstration(user, assignment_id, client_id: str, **recorder_fields):
    """Start (or, with the same ``client_id``, return) the task-mode recording of an assigned demonstration task.

    Returns ``(demonstration, created)``; the task text, the website's host, domain and subdomain are filled in
    from the task, and the recording is linked to the assignment."""
    assignment = check_demonstration_of(user, assignment_id)
    inputs = assignment.task.inputs
    host = urlsplit(inputs.get("url", "")).hostname or inputs.get("website", "")
    fields = {
        **recorder_fields,
        "mode": DemoMode.TASK,
        "task_description": inputs.get("task", ""),
        "websites": [host],
        "category": inputs.get("domain", ""),
        "subcategory": inputs.get("subdomain", ""),
        "assignment": assignment,
    }
    return do_start_recording(user, assignment.task.batch.project, client_id, **fields)
