"""Managing projects, their members and roles, and their choice lists (the management pages).

Project admins manage their project; a superuser is admin everywhere. Creating a project needs Django's
``annotation.add_project`` permission (every superuser has it); its creator becomes its admin.
"""

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from ...models import Membership, Project, Role
from ..errors import Conflict, Forbidden, NotFound, invalid
from .access import check_project_role

MANAGE_ROLES = (Role.ADMIN,)
CHOICE_FIELDS = ("category_choices", "subcategory_choices", "region_choices")
MAX_CHOICES = 500


def check_project_admin(user, project_name) -> Project:
    """The project ``user`` administers: 404 for non-members, 403 for other roles."""
    return check_project_role(user, project_name, MANAGE_ROLES, "manage the project (needs admin)")


def can_create_projects(user) -> bool:
    return user.is_authenticated and user.has_perm("annotation.add_project")


def do_create_project(user, name: str, title: str = "", description: str = "") -> Project:
    """A new project with ``user`` as its admin."""
    if not can_create_projects(user):
        raise Forbidden("creating projects needs the annotation.add_project permission (ask a superuser)")
    with transaction.atomic():
        if Project.objects.filter(name=name).exists():
            raise Conflict(f"a project named {name!r} exists", [{"field": "name", "message": "already taken"}])
        project = Project.objects.create(name=name, title=title, description=description)
        Membership.objects.create(project=project, user=user, role=Role.ADMIN)
    return project


def clean_choices(field: str, values) -> list[str]:
    """One suggestion per entry, trimmed, blank and repeated ones dropped, each within the demo column (100)."""
    result = list(dict.fromkeys(value.strip() for value in values if value and value.strip()))
    if len(result) > MAX_CHOICES:
        raise invalid(field, f"at most {MAX_CHOICES} entries")
    for value in result:
        if len(value) > 100:
            raise invalid(field, f"{value[:20]!r}… is longer than 100 characters")
    return result


def do_update_project(project, title: str, description: str, choices: dict, record_traffic: bool) -> Project:
    """Change the title, description, the per-field choice lists (``{"category_choices": [...], ...}``) and whether
    WebLINX recordings keep their traffic."""
    project.title, project.description = title, description
    for field in CHOICE_FIELDS:
        setattr(project, field, clean_choices(field, choices.get(field, [])))
    project.record_traffic = check_record_traffic(record_traffic)
    project.save(update_fields=["title", "description", *CHOICE_FIELDS, "record_traffic"])
    return project


def check_record_traffic(value) -> bool:
    """``record_traffic``: a JSON boolean (400 naming the field otherwise)."""
    if not isinstance(value, bool):
        raise invalid("record_traffic", "expected true or false")
    return value


def do_set_record_traffic(project, value) -> Project:
    """Whether the project's WebLINX recordings keep the tab's traffic (HAR per action turn)."""
    project.record_traffic = check_record_traffic(value)
    project.save(update_fields=["record_traffic"])
    return project


def check_role(role) -> str:
    if role not in Role.values:
        raise invalid("role", f"expected one of: {', '.join(Role.values)}")
    return role


def do_add_member(project, username: str, role) -> Membership:
    """Give an existing account a role in the project (409 when it is already a member)."""
    check_role(role)
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise invalid("username", f"no account named {username!r}")
    try:
        with transaction.atomic():
            return Membership.objects.create(project=project, user=user, role=role)
    except IntegrityError:
        raise Conflict(
            f"{username} is already a member of {project.name}; change their role instead",
            [{"field": "username", "message": "already a member"}],
        ) from None


def check_membership(project, membership_id) -> Membership:
    """The project's membership ``membership_id``; another project's is not found here (404), as a made-up one."""
    membership = project.memberships.select_related("user").filter(pk=membership_id).first()
    if membership is None:
        raise NotFound(f"no membership {membership_id} in {project.name}")
    return membership


def check_keeps_an_admin(membership, new_role=None) -> None:
    """A project must keep at least one admin member, or nobody but a superuser could manage it."""
    if membership.role != Role.ADMIN or new_role == Role.ADMIN:
        return
    if not membership.project.memberships.filter(role=Role.ADMIN).exclude(pk=membership.pk).exists():
        raise Conflict(
            f"{membership.user.username} is the project's only admin; make someone else admin first",
            [{"field": "role", "message": "the project needs an admin"}],
        )


def do_change_role(project, membership_id, role) -> Membership:
    with transaction.atomic():
        membership = check_membership(project, membership_id)
        check_keeps_an_admin(membership, check_role(role))
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


def do_remove_member(project, membership_id) -> Membership:
    with transaction.atomic():
        membership = check_membership(project, membership_id)
        check_keeps_an_admin(membership)
        membership.delete()
    return membership
