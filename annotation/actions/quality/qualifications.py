"""Qualifications: named scores per worker in a project. Admins create them and grant or revoke them by hand;
onboarding batches grant them on gold accuracy (``annotation.actions.forms.gold``). Researchers and admins read
them (to set batch requirements)."""

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from ...models import Membership, Project, Qualification, QualificationScore, Role
from ..errors import Conflict, NotFound, invalid
from ..forms.access import MANAGE_ROLES
from ..manage.access import check_project_role
from .decisions import check_unit_ratio

NAME_MAX = 100


def check_project_qualifications(user, project_name, write=False) -> Project:
    """The project whose qualifications ``user`` reads (researchers, admins) or changes (admins): 404 for
    non-members, 403 for other roles."""
    if write:
        return check_project_role(user, project_name, (Role.ADMIN,), "grant or revoke qualifications (needs admin)")
    return check_project_role(user, project_name, MANAGE_ROLES, "see qualifications (needs researcher or admin)")


def check_qualification(user, qualification_id, write=False) -> Qualification:
    found = (
        Qualification.objects.filter(pk=qualification_id, project__in=Project.objects.for_user(user))
        .select_related("project")
        .first()
    )
    if found is None:
        raise NotFound(f"no qualification {qualification_id} among your projects")
    check_project_qualifications(user, found.project.name, write)
    return found


def check_new_name(project: Project, name) -> str:
    if not isinstance(name, str) or not name.strip():
        raise invalid("name", "required")
    name = name.strip()
    if len(name) > NAME_MAX:
        raise invalid("name", f"at most {NAME_MAX} characters")
    if Qualification.objects.filter(project=project, name=name).exists():
        raise invalid("name", f"project {project.name!r} already has a qualification {name!r}")
    return name


def do_create_qualification(project: Project, name: str, description: str = "") -> Qualification:
    try:
        with transaction.atomic():
            return Qualification.objects.create(project=project, name=name, description=description or "")
    except IntegrityError:
        raise Conflict(f"project {project.name!r} already has a qualification {name!r}") from None


def check_worker(qualification: Qualification, username):
    """A member of the qualification's project, by username (a 400 naming ``worker`` otherwise)."""
    user = get_user_model().objects.filter(username=username).first() if isinstance(username, str) else None
    if user is None or not Membership.objects.filter(project=qualification.project, user=user).exists():
        raise invalid("worker", f"no member {str(username)[:150]!r} in project {qualification.project.name!r}")
    return user


def do_grant(qualification: Qualification, worker, score, by) -> QualificationScore:
    score = check_unit_ratio("score", score)
    row, _ = QualificationScore.objects.update_or_create(
        qualification=qualification,
        worker=worker,
        defaults={"score": score, "source": QualificationScore.Source.ADMIN, "granted_by": by},
    )
    return row


def do_revoke(qualification: Qualification, worker) -> bool:
    """Take the qualification away from ``worker``; False when they did not hold it."""
    deleted, _ = QualificationScore.objects.filter(qualification=qualification, worker=worker).delete()
    return bool(deleted)
