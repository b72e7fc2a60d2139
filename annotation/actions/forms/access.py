"""Who may work on a batch, who manages it, and the checks the pages and the API call before anything else.

Workers: a batch that names users or groups is open to those only (they also need a role in the project);
otherwise to the project's annotators and admins. Either way not to a worker who lacks a qualification the batch
requires or whom its gold blocked (``gold``). Managers (create batches, read results, gold and statistics):
the project's researchers and admins. A superuser is both everywhere. Refusals that would reveal a batch the
user cannot see are 404s.

The ``check_*`` functions are the doors of the form-task pages (``/work/``) and the work API: they open form
batches only. ``check_grant`` is the queue's own door, asked again at every accept and every submission whatever
the path (page, API, task frame): access ends when the grant ends (the membership or its role, the account, a
required qualification, a block). Mind2Web's proposal and demonstration batches use the same queue through their
own actions (``annotation.actions.mind2web``), which keep their rules (a website's target, a round's proposals, a
demonstration's recording); to the form pages and the work API they do not exist (404).
"""

from django.db.models import Exists, OuterRef, Q

from ...models import Batch, BatchKind, Membership, Project, Role, Task
from ..errors import Forbidden, NotFound
from ..manage.access import check_project_role
from .gold import blocked, check_may_take, unmet_requirements

WORK_ROLES = (Role.ANNOTATOR, Role.ADMIN)
MANAGE_ROLES = (Role.RESEARCHER, Role.ADMIN)
STATS_ROLES = (Role.REVIEWER, Role.RESEARCHER, Role.ADMIN)


def workable_batches(user, queryset=None):
    """Batches ``user`` may work on (published or not; ``open_for_work`` narrows to those handing out work)."""
    batches = Batch.objects.all() if queryset is None else queryset
    if not user.is_authenticated:
        return batches.none()
    if user.is_superuser:
        return batches
    member = Membership.objects.filter(project=OuterRef("project"), user=user)
    named = Q(workers=user) | Q(worker_groups__in=user.groups.all())
    restricted = Exists(Batch.workers.through.objects.filter(batch=OuterRef("pk"))) | Exists(
        Batch.worker_groups.through.objects.filter(batch=OuterRef("pk"))
    )
    by_role = Exists(member.filter(role__in=WORK_ROLES))
    by_name = Exists(member) & Exists(Batch.objects.filter(named, pk=OuterRef("pk")))
    allowed = batches.filter((~restricted & by_role) | (restricted & by_name))
    return allowed.exclude(unmet_requirements(user)).exclude(blocked(user))


def open_for_work(batches):
    return batches.filter(published=True, active=True, completed=False)


def can_work_on(user, batch: Batch) -> bool:
    return workable_batches(user, Batch.objects.filter(pk=batch.pk)).exists()


def managed_projects(user):
    return Project.objects.for_user(user, MANAGE_ROLES)


def can_manage(user, batch: Batch) -> bool:
    return batch.project.has_role(user, MANAGE_ROLES)


def can_see_stats(user, batch: Batch) -> bool:
    return batch.project.has_role(user, STATS_ROLES)


def visible_batch(user, batch_id) -> Batch:
    """A form batch of one of ``user``'s projects, or 404 (a non-member learns nothing about it)."""
    batch = Batch.objects.forms().in_projects_of(user).select_related("project").filter(pk=batch_id).first()
    if batch is None:
        raise NotFound(f"no form batch {batch_id} among your projects")
    return batch


def check_batch_for_work(user, batch_id) -> Batch:
    """A batch ``user`` may work on: 404 outside their projects, 403 when they are not among its workers."""
    batch = visible_batch(user, batch_id)
    check_may_take(user, batch)
    if not can_work_on(user, batch):
        raise Forbidden(f"you are not among the workers of batch {batch.name!r}")
    return batch


def check_grant(user, batch: Batch) -> None:
    """403 naming why ``user`` may not work on ``batch`` now: a deactivated account, not a member of its project,
    a role that does not work (or not among the workers a batch names), blocked by its gold tasks, or a required
    qualification missing. One query when they may."""
    if not user.is_active:
        raise Forbidden("your account is deactivated")
    if can_work_on(user, batch):
        return
    membership = Membership.objects.filter(project_id=batch.project_id, user=user).first()
    if membership is None:
        raise Forbidden(f"you are not a member of project {batch.project.name!r}")
    check_may_take(user, batch)
    if batch.is_restricted:
        raise Forbidden(f"you are not among the workers of batch {batch.name!r}")
    raise Forbidden(
        f"your role in {batch.project.name!r} ({membership.get_role_display().lower()}) does not work on batches "
        "(needs annotator or admin)"
    )


def check_batch_manageable(user, batch_id) -> Batch:
    """A batch whose results and gold ``user`` may read and whose settings they may change (researcher, admin)."""
    batch = visible_batch(user, batch_id)
    if not can_manage(user, batch):
        raise Forbidden(f"your role in {batch.project.name!r} cannot manage batches (needs researcher or admin)")
    return batch


def check_batch_stats(user, batch_id) -> Batch:
    """A batch whose progress and time statistics ``user`` may read (reviewer, researcher, admin)."""
    batch = visible_batch(user, batch_id)
    if not can_see_stats(user, batch):
        raise Forbidden(f"your role in {batch.project.name!r} cannot see batch statistics")
    return batch


def check_project_for_batches(user, project_name) -> Project:
    """The project where ``user`` may create batches: 404 for non-members, 403 for other roles."""
    return check_project_role(user, project_name, MANAGE_ROLES, "create batches (needs researcher or admin)")


def can_preview(user, batch: Batch) -> bool:
    """Whether ``user`` may preview the batch's tasks: they may work on it, manage it, or read it (reviewers see the
    batch page and its tasks' previews)."""
    return can_work_on(user, batch) or batch.project.has_role(user, (*MANAGE_ROLES, *STATS_ROLES))


def check_task_previewable(user, task_id) -> Task:
    """A task ``user`` may preview: one of a form batch they may work on, manage, or read (reviewers see the batch
    page and its first task)."""
    task = Task.objects.select_related("batch__project").filter(pk=task_id, batch__kind=BatchKind.FORM).first()
    if task is None or not can_preview(user, task.batch):
        raise NotFound(f"no task {task_id} among your batches")
    return task
